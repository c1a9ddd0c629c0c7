// Package checkpoint reads the recovery markers of Flink Agents' Kafka
// action state out of an Apache Flink checkpoint or savepoint, natively: no
// JVM, no Flink. It is pure — bytes in, values out — and reaches files only
// through a Store (package checkpoint/store implements local paths, file://
// and s3://).
//
// # What Read does
//
//  1. Reads _metadata (Checkpoints.storeCheckpointMetadata): the magic
//     number, the format version (3 to 7; Flink 1.20 writes 4, 2.0 writes 5,
//     2.1 to 2.3 write 6), the checkpoint ID, master states (skipped by their
//     length), every operator, and the trailing CheckpointProperties (version
//     4 and later, Java serialization, walked and dropped).
//  2. For each operator: uid and name (version 5 and later), the 16-byte
//     OperatorID (hex = uid hash), parallelism, maximum parallelism, the
//     coordinator state (inline or none) and each subtask's state. Keyed
//     state of every kind (key-group, savepoint key-group, incremental
//     RocksDB with shared and private files, changelog with in-memory and
//     file increments), raw operator state, the channel state of unaligned
//     checkpoints (both serializer versions, merged handles too) and the
//     regional checkpoint reference of version 7 are parsed by the lengths
//     the format declares and dropped; a kind this reader does not know is
//     an error, never a guess.
//  3. Keeps the managed operator state handles that name the union list
//     state recoveryMarker: their operators are the holders. The operator is
//     chosen by Selector (uid → murmur3 OperatorID, or the hash), or is the
//     only holder; several holders, an operator not in the checkpoint, an
//     operator without the state, and a state empty in every subtask are
//     four distinct errors (ErrAmbiguous, ErrOperatorNotFound,
//     ErrNoRecoveryState, ErrEmptyRecoveryState).
//  4. For each holder's subtask: opens the state stream (inline in
//     _metadata, a file relative to the checkpoint directory, an absolute
//     file on the same store, or a file-merging segment), reads the
//     serialization proxy's version and compression flag (the serializer
//     snapshots after it are not needed), and decodes each element from its
//     offset to the next offset of any state in that stream (or the stream's
//     end) — Snappy-framed when compression is on — with the Kryo of the
//     metadata's line (DecodeElement). An element must take exactly its
//     bytes: reading one Kryo's bytes with the other is an error, not a
//     plausible marker.
//
// Checkpoint.Markers then applies the rules plan applies to JSON markers
// (events.Marker.Validate, events.PlanBuilder): a legacy Map<Integer, Long>
// element is refused (ErrLegacyMarker: it does not identify the physical
// topic), as is a marker of another schema version or one that disagrees on
// topic, topic ID or partition set (ErrInvalidMarker).
//
// # Bad input
//
// A file that is truncated, corrupted, foreign, of an unknown version or
// handle kind, or declares lengths beyond itself ends in a FormatError
// naming the file (as the checkpoint names it), the byte offset and what
// was expected (errors.Is ErrFormat). Counts and lengths are checked
// against what remains before any loop or allocation, so memory stays
// within the size of the files read: _metadata (at most 1 GiB) whole, of a
// state file only the proxy's first bytes and the elements, each at most
// 64 MiB, compressed or not; handles nest at most 8 deep. FuzzReadMetadata and
// FuzzDecodeElement keep it so.
//
// docs/checkpoints.md says what of Flink's format is read and what skipped,
// and how it was checked against Flink.
package checkpoint
