// Package gate is kcleanup's recovery gate as pure rules: the one vocabulary
// of refusal reasons (Reason, each with its Class), and the control-topic
// settings rules (Settings) that init, doctor, the workers and the gate all
// apply. It imports no Kafka client and no clock; package worker gathers the
// facts and executes.
//
// # Classes
//
// Every reason has one class. Refused (exit 3, HTTP 409): restoring is proved
// unsafe; choose another recovery point. CannotTell (exit 4, HTTP 503): the
// gate could not prove safety; fix the cause and ask again. A verdict with
// both kinds of refusal is Refused: a proof of harm stands whatever else
// could not be read.
//
// # Control-topic settings
//
// The compacted control topic is equivalent to the full log only if every
// accepted record that a later record overwrote is repaired before the log
// cleaner removes it (docs/design.md §4, I5), and the tombstone that overwrote it
// outlives the cleaning as evidence. Settings checks what that relies on:
// exactly one partition, cleanup.policy=compact, min.compaction.lag.ms and
// delete.retention.ms of at least a day (Kafka's defaults are 0 and a day).
// Each of those blocks cleanup and fails the gate closed. max.message.bytes
// below MaxControlRecordBytes, message.timestamp.type=CreateTime (the lag is
// then measured on writers' clocks) and unclean leader election are
// warnings. min.cleanable.dirty.ratio and max.compaction.lag.ms are not
// checked: they decide how often the cleaner runs, never that it may clean a
// record younger than min.compaction.lag.ms.
package gate
