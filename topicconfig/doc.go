// Package topicconfig holds the settings rules of every topic kcleanup
// touches, in one place: the control topic's (ControlTopic, the configs init
// creates it with, CreateSettings and CreateConfigs), the data topic's
// (DataTopic) and a Flink Agents mirror's durability settings (MirrorTopic).
// init, doctor, the workers, the recovery gate and the protocol's preflight
// all apply these rules, so they cannot drift apart. Pure: configs in,
// problems with their fixes out; the standard library only.
//
// # Control-topic settings
//
// The compacted control topic is equivalent to the full log only if every
// accepted record that a later record overwrote is repaired before the log
// cleaner removes it (docs/design.md §4, I5), and the tombstone that overwrote it
// outlives the cleaning as evidence. ControlTopic checks what that relies on:
// exactly one partition, cleanup.policy=compact, min.compaction.lag.ms and
// delete.retention.ms of at least a day (Kafka's defaults are 0 and a day).
// Each of those blocks cleanup and fails the gate closed. max.message.bytes
// below MaxControlRecordBytes, message.timestamp.type=CreateTime (the lag is
// then measured on writers' clocks) and unclean leader election are
// warnings. min.cleanable.dirty.ratio and max.compaction.lag.ms are not
// checked: they decide how often the cleaner runs, never that it may clean a
// record younger than min.compaction.lag.ms.
package topicconfig
