// Package projector folds the records of a control topic, in offset order,
// into the state of every cleanup operation, the committed boundary, and the
// verdict on every record (DESIGN §5). It is the single place that decides
// what the log means.
//
// # Contract
//
// The fold is pure and deterministic: Step(Record) reads no clock, performs
// no I/O and never panics, and the state depends only on the records folded.
// Replicas that fold the same records have the same Digest (I4). A State is
// used by one goroutine; readers (Boundary, Operations, Audit, ...) return
// copies. Time enters only as the envelope's "at" and the record timestamp.
//
//	s := projector.New()
//	for _, r := range records { // in offset order, as read
//		v := s.Step(r)          // v.Outcome: Accepted, Duplicate or Rejected
//	}
//	err := s.Validate(markers)  // nil, or a *RefusalError with a hint
//
// # The rules, in the order Step applies them
//
//  1. Offsets must increase (gaps are normal: compaction leaves them). A
//     record at or below the last folded offset gets ReasonOutOfOrder and
//     is otherwise ignored: not recorded, so a reader that re-delivers
//     records cannot change the state.
//  2. A key that holds an accepted record ("<planId>/<EVENT>") is judged by
//     content first. Same content is a Duplicate: nothing changes. Content
//     is event, planId, plan, boundary and logStart, never at or actor, so
//     a retry by another writer is a duplicate. Other content, an
//     undecodable value or a tombstone is ReasonOverwritesAccepted: once
//     compacted it would erase the accepted record, so the key is listed in
//     Repairs until the accepted content is appended again. (A record from a
//     newer build under such a key keeps ReasonNewerSchema or
//     ReasonUnknownEvent, and is listed in Repairs too.)
//     Exception: DELETING for an operation in DELETING is a retry, accepted
//     and counted in DeleteAttempts, unless its at and actor are those of
//     an accepted attempt (then it is that attempt re-appended: a duplicate).
//  3. A nil value is ReasonTombstone. A value events.Decode refuses is
//     ReasonMalformed, ReasonBadKey (key unparsable or not the body's plan
//     and event), ReasonTampered (the plan does not hash to its planId),
//     or, from a newer kcleanup, ReasonNewerSchema / ReasonUnknownEvent,
//     which also make the projection degraded.
//  4. PLANNED is accepted if the plan's topic and topic ID are those of the
//     binding; the first accepted PLANNED sets the binding. Otherwise
//     ReasonWrongTopic.
//  5. COMMITTED needs a PLANNED operation (ReasonUnknownOperation,
//     ReasonInvalidTransition), every plan offset at or above the current
//     boundary of its partition (ReasonBoundaryRegression names partition,
//     both offsets and the plan that set the boundary), and a boundary
//     field exactly equal to max(current boundary, plan) over the union of
//     partitions (ReasonBoundaryMismatch says expected and got). Two
//     concurrent commits are ordered by the log: the second is accepted only
//     if it is still monotonic and its field matches what the first left.
//  6. DELETING needs COMMITTED or DELETING; APPLIED needs DELETING and a
//     log-start offset at or above the plan for every plan partition
//     (ReasonLogStartBelowPlan). The lifecycle itself is fsm.Next.
//
// A record that is not accepted changes nothing but the audit (and, for an
// overwrite, Repairs; for a newer build's record, Degraded).
//
// # Degraded
//
// A record from a newer kcleanup makes the projection degraded for good
// (until an upgraded build replays the log). Folding goes on, but Validate
// refuses every recovery point, and a worker must not delete while
// Degraded() is true.
//
// # Recovery validation
//
// Validate(markers) is the recovery gate of DESIGN §7: it refuses when the
// projection is degraded, when a marker names another topic or topic ID
// than the binding, when no marker is given although a boundary exists, and
// when a marker lacks a partition of the boundary or is below it:
//
//	Cannot restore Kafka action state for action-state-0 from offset 100 because the committed cleanup boundary is 150 (set by plan <planId>)
//
// Refusals lists every reason, per marker and partition. Whether the
// projection has caught up with the control topic is NOT known here: the
// reader in package worker must fold up to the end offset it captured
// before asking, and must not ask otherwise.
//
// # Compaction (I5) and its limit
//
// Keys are distinct per transition, so a compacted log keeps one record per
// transition and projects like the full log, provided (a) every key's
// latest record has the accepted content (append Repairs before the log
// cleaner runs), and (b) no re-appended record (a duplicate or a repair)
// lands after a record whose verdict depends on it. Compaction keeps the
// LATEST copy of a key, so a re-append moves its transition later: a
// PLANNED repaired after its COMMITTED, a COMMITTED duplicated after another
// plan's COMMITTED, a DELETING retried after APPLIED all project
// differently once compacted, and in the first two cases the compacted
// boundary is lower than the real one (testdata/compaction shows each).
// The property test proves I5 for writers that re-append only the latest
// accepted key before anything else depends on it. Closing the gap needs a
// change to the fold or the repair protocol, not to Repairs.
//
// # Memory
//
// The fold keeps no record values. Overwrites are detected by comparing a
// record with the accepted content the operation already holds (plan,
// boundary, log start), and Repairs re-encodes the accepted record from it.
// The audit costs 16 bytes per record plus the operation's history step;
// only records that were not accepted keep a full Verdict.
package projector
