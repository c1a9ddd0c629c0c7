// Package projector folds the records of a control topic, in offset order,
// into the state of every cleanup operation, the committed boundary, and the
// verdict on every record (docs/design.md §5). It is the single place that decides
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
//	b := s.Boundary()           // what the recovery gate (package gate) compares markers with
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
//     ReasonMalformed, ReasonBadKey (key unparsable, or events.ErrKeyMismatch:
//     not the body's plan and event), ReasonTampered (events.ErrPlanEdited:
//     the plan does not hash to its planId), or, from a newer kcleanup,
//     ReasonNewerSchema / ReasonUnknownEvent, which also make the projection
//     degraded.
//  4. PLANNED is accepted if the plan's topic and topic ID are those of the
//     binding; the first accepted PLANNED or COMMITTED sets the binding.
//     Otherwise ReasonWrongTopic. A PLANNED for an operation that already
//     exists (its COMMITTED came first and implied PLANNED) is a Duplicate.
//  5. COMMITTED needs a PLANNED operation, or none: a COMMITTED for a plan
//     never PLANNED carries the full plan, so it implies PLANNED (same
//     binding check; fsm.Next(None, PLANNED) then Next(PLANNED, COMMITTED)).
//     Then the boundary rules, in order:
//     a. the boundary field is at or above the plan on every plan partition
//     (ReasonBoundaryMismatch);
//     b. a field at or below the current boundary on every partition raises
//     nothing: accepted as covered (Verdict.Covered), the boundary does not
//     move, Detail says "covered by the current boundary; raises nothing";
//     c. a commit that raises something with a plan below the boundary on
//     some partition conflicts with it: ReasonBoundaryRegression names
//     partition, both offsets and the plan that set the boundary. Of two
//     conflicting concurrent commits exactly one wins, the one the log has
//     first;
//     d. the field is at or above the current boundary on every partition
//     (ReasonBoundaryMismatch says both: a writer computed it on an older
//     view, and retries);
//     e. the new boundary is the max of the current boundary and the field,
//     over the union of partitions (a field above the plan is carried).
//  6. DELETING needs COMMITTED or DELETING; for an APPLIED operation whose
//     DELETING was implied it is a Duplicate. APPLIED needs DELETING, or
//     COMMITTED (its log start is the evidence that deletion happened:
//     DELETING is implied), and a log-start offset at or above the plan for
//     every plan partition (ReasonLogStartBelowPlan). The lifecycle itself is
//     fsm.Next, walked step by step through what a record implies.
//  7. DELETING or APPLIED for a PLANNED operation, or for a plan with no
//     operation (with PLANNED's binding check: ReasonWrongTopic), is
//     ReasonCommitMissing: a worker writes them only after reading the
//     COMMITTED back, so it is evidence that the COMMITTED was accepted and
//     then erased (the cleaner ran over an overwrite before its repair). It
//     is rejected and moves no operation: COMMITTED is the point of no
//     return and is never implied, and a forged DELETING must never cause a
//     deletion. But the operation (created PLANNED if need be, binding the
//     control topic like the COMMITTED it proves) lists it in
//     Operation.Evidence, Boundary includes its plan until a COMMITTED is
//     accepted, its key is protected like an accepted one (an overwrite is
//     listed in Repairs, never in Retractions), and AtRisk is true.
//
// A record that is not accepted changes nothing but the audit (and, for an
// overwrite, Repairs; for a newer build's record, Degraded; for a key that
// holds only rejected records, Retractions; for evidence of an erased
// COMMITTED, rule 7). Operation.Implied lists the steps a later transition
// implied; History holds only accepted records.
//
// # The Flink Agents mirror (rules M1-M5)
//
// Records under a mirror key ("mirror/<topic>/<EVENT>", events.MirrorKey)
// are the mirror events, MIRROR_ATTACHED and MIRROR_DETACHED (envelope
// schema version 2). They never touch an operation, the binding or the
// boundary; they decide which Flink Agents mirror is attached (Mirror):
//
//	M1. A tombstone, or a value events.Decode refuses, under a mirror key
//	    is rejected as any record is (ReasonTombstone, ReasonMalformed,
//	    ReasonBadKey; ReasonNewerSchema and ReasonUnknownEvent degrade the
//	    projection), unless the key holds an accepted mirror event: then it
//	    is ReasonOverwritesAccepted (M5).
//	M2. Every valid mirror event is accepted, in offset order; it is a
//	    Duplicate when its key holds an accepted event of the same content
//	    (event, topic, topic ID; not at, actor or reason) and it changes
//	    nothing.
//	M3. MIRROR_ATTACHED attaches its topic (with its topic ID), replacing
//	    any mirror attached before.
//	M4. MIRROR_DETACHED of the attached topic detaches it; of any other
//	    topic it changes nothing. So the attached mirror is the topic of
//	    the latest accepted ATTACHED, unless a DETACHED of that topic
//	    follows it. Compaction keeps the latest record of every key, and
//	    with it those two records and their order: the compacted log
//	    attaches the same mirror (TestPropertyMirrorCompaction).
//	M5. An overwrite of one of those two deciding records is listed in
//	    Repairs (the deciding ATTACHED, then the DETACHED after it if any,
//	    re-encoded) and makes AtRisk true until they are appended again;
//	    an overwrite of any other mirror key decides nothing and needs no
//	    repair. A key that never held an accepted mirror event is listed
//	    in Retractions like any other.
//
// MirrorHistory lists every accepted mirror event with what it changed, for
// the audit; the verdicts are in Audit like every record's.
// testdata/mirror shows each rule.
//
// # Pinned recovery points (rules P1-P6)
//
// Records under a pin key ("pin/<pinId>/<EVENT>", events.PinKey) are the
// pin events, PINNED and UNPINNED (envelope schema version 3). They never
// touch an operation or the binding; they decide which COMMITTED records
// are accepted (Pins, PinAbove):
//
//	P1. A tombstone, or a value events.Decode refuses, under a pin key is
//	    rejected as any record is (a newer pin event degrades the
//	    projection); over an accepted pin event it is
//	    ReasonOverwritesAccepted, listed in Repairs, and AtRisk is true.
//	P2. PINNED is accepted unless the control topic is bound to another
//	    topic or incarnation (ReasonWrongTopic); the same PINNED again is a
//	    Duplicate (the pin ID hashes its content, at and actor included).
//	P3. UNPINNED ends the pin it names from this record on; again, a
//	    Duplicate; of a pin the log does not hold, ReasonUnknownPin.
//	P4. A COMMITTED that raises the boundary (not a covered one), whose plan
//	    is of the pin's topic and above the pin's offset on a partition the
//	    pin protects, is ReasonPinned, the pin named, like a regression: of
//	    a pin and a commit racing, the one the log has first wins for every
//	    reader. A pin protects a partition while it is not unpinned, not
//	    void there, and the COMMITTED's own "at" is before its expiry: the
//	    records' time, never a reader's clock (docs/design.md §12). The
//	    deletion that follows waits for the broker's clock too
//	    (protocol.PinHeld): the fold notes each record's broker time
//	    (Record.LogAppendTime; BrokerTime, Pin.Appended, Ahead) without
//	    letting it change a verdict.
//	P5. When the PINNED is folded, every partition on which the boundary is
//	    already above the pin is void: the pin protects nothing a commit
//	    that landed first condemned (Pin.Status: void, or partial).
//	P6. Compaction: commits and pin events decide together, so when the
//	    copies of either leave acceptance order (a later copy of a COMMITTED
//	    accepted before a pin, of an UNPINNED past a commit accepted after
//	    it, an overwritten pin key, a copy of an accepted COMMITTED with
//	    another "at" that a pin would judge differently) Repairs re-appends
//	    both, from the first affected one on, in acceptance order; the
//	    COMMITTED keys a pin rejected are retracted at once (Retraction.Now).
//	    TestPropertyCompaction generates pins, expiries and unpins among its
//	    random logs; testdata/pins shows each rule.
//	    The repair lands after the copy it answers, so for a while the
//	    cleaner may remove the COMMITTED's first record (its copy is old
//	    enough) and not yet the pin's: a fresh reader then folds the pin
//	    first, active, and the copy rejected by it, a boundary below the
//	    committed one. Since workers retract the commits a pin rejected
//	    before they re-append the pin, a worker's repair of a PINNED (header
//	    kcleanup-maintenance: repair) after a COMMITTED that pin rejected,
//	    never retracted, and that its writer had read (header kcleanup-read
//	    past it), says the full log may have had that commit first:
//	    the key is in a pin dispute (pins.go) for as long as it holds only
//	    rejected records. So is a COMMITTED rejected for a pin that is itself
//	    a worker's repair (workers re-append only what their view accepted:
//	    the window through an operator's second UNPINNED). The view is
//	    AtRisk (the gate cannot tell, nothing
//	    is deleted on it), never retracts that key, and lists the plan in
//	    Disputed (a worker reads afresh); a key a tombstone already retracted
//	    is never disputed, nor is one the writer had not read, nor any for a
//	    repair without kcleanup-read. TestPinRepairWindowAfterACommitCopy,
//	    TestPinRepairAfterARetractedCommitIsNoDispute,
//	    TestPinRepairByAWriterThatHadNotReadTheCommitIsNoDispute,
//	    TestPinRepairWindowAfterASecondUnpin.
//
// # Degraded
//
// A record from a newer kcleanup makes the projection degraded for good
// (until an upgraded build replays the log). Folding goes on, but the
// recovery gate allows no recovery point, and a worker must not delete
// while Degraded() is true.
//
// # Recovery validation
//
// The recovery gate of docs/design.md §7 is package gate: it reads Boundary,
// BoundarySetBy, Binding, Degraded, AtRisk, Rejected and Retractions, and
// it alone defines the reasons of a refusal. The transcripts' validate
// directive shows its logical half on the fold:
//
//	Cannot restore Kafka action state for action-state-0 from offset 100 because the committed cleanup boundary is 150 (set by plan <planId>)
//
// Whether the projection has caught up with the control topic is NOT known
// here: the reader in package worker must fold up to the end offset it
// captured before asking, and must not ask otherwise.
//
// # History at risk
//
// AtRisk() says when the projection holds evidence that accepted history is
// missing from the control topic or may be erased by the log cleaner: a key
// whose accepted record (or evidence, rule 7) was overwritten or tombstoned
// and not yet repaired, or a DELETING or APPLIED that survives without its
// COMMITTED. The recovery gate answers "cannot tell" while AtRisk is true
// (contract C3); the sentence says what was found and what to do.
//
// What workers may do with an operation that has evidence but no COMMITTED
// (Unconfirmed): never delete for it (it is never Pending); re-append its
// evidence when overwritten (Repairs); and append a COMMITTED for it only
// where nothing more would be deleted: the live data topic has the plan's
// topic ID and a log start at or above the plan on every plan partition.
// That COMMITTED takes its field from Boundary, so it carries the evidence
// into the committed boundary; the operation is then finished like any
// other, DeleteRecords removing nothing. Otherwise the operator decides
// (re-apply the plan with kcleanup apply, or plan above it).
//
// # Compaction (I5)
//
// Kafka compaction keeps the latest record of every key. Keys are distinct
// per transition, but a record appended again under its key (a duplicate by
// a second writer, a repair) moves its transition to its latest copy: after
// records that followed it in the full log. And a rejected record, under a
// key of its own, survives and meets the accepted records in another order.
// Three things make the compacted log replay like the full one:
//
//   - The fold does not depend on where a copy lands when the order does not
//     matter: COMMITTED implies PLANNED, APPLIED implies DELETING, a late
//     PLANNED or DELETING is a duplicate, a COMMITTED's field carries the
//     boundary of commits folded after it, and a commit the boundary already
//     covers is accepted as covered.
//   - Repairs lists what a worker must append again: overwritten keys, and,
//     once a COMMITTED's latest copy moved past later commits or its own
//     DELETING and APPLIED, those records (in acceptance order), so that the
//     compacted log keeps the commits in the order they were accepted and
//     each operation's COMMITTED before its DELETING and APPLIED.
//   - Retractions lists the keys that hold only rejected records; a worker
//     tombstones them (after a grace period: a writer may be about to retry
//     under the key; at once, before its repairs, for a conflict's loser
//     whose winner moved past it: Retraction.Now), and compaction erases
//     them. Without it, a wrong-topic
//     PLANNED could bind a compacted log, or the loser of two conflicting
//     commits win there.
//
// One order cannot be kept: a conflict's loser and a later copy of its
// winner (a late duplicate, landing right after the loser: no writer
// controls that). The cleaner removes the winner's first copy once the
// later one is older than min.compaction.lag, and the loser only once its
// retraction tombstone, necessarily later, is that old too; in between, a
// reader sees exactly the records of a log in which the loser came first.
// Such a reader also sees the worker's retraction tombstone (header
// kcleanup-maintenance: retraction) over the COMMITTED it accepted: no
// worker retracts a key its own view accepted, so the conflict is
// disputed (Disputed; testdata/disputed): the reader repairs neither side
// (no re-append of the COMMITTED it accepted, no retraction of the commit
// it defeated), AtRisk holds, and the readers that read the full order,
// never disputed, retract the true loser; once the cleaner has removed
// it, every fresh read names the full log's winner. A tombstone without
// that header (an operator's, another tool's) is an ordinary overwrite and
// is repaired.
//
// With Repairs appended and Retractions tombstoned before the log cleaner
// runs, the compacted log has the same boundary, the same plans setting it,
// the same binding and the same operation states as the full log: the
// property test checks it on random logs with duplicates and repairs at any
// position, overwrites, garbage, tombstones, stale and conflicting commits.
// testdata/compaction shows each case.
//
// # Which compaction orders are safe
//
// The cleaner keeps the latest record of every key; what matters is what it
// may remove before the workers act. Exactly these are safe:
//
//   - Cleaning a log whose projection has nothing in Repairs or Retractions
//     and AtRisk false: the cleaned log replays to the same boundary,
//     binding, plans setting the boundary and operation states
//     (TestPropertyCompaction, with tombstones kept or dropped).
//   - Removing earlier copies of a record appended again with the same
//     content (duplicates, repairs), whatever lies between: the fold's
//     rules (implied steps, carried fields, covered commits) and, for the
//     order of commits and of an operation's COMMITTED before its DELETING
//     and APPLIED, the re-appends Repairs lists.
//   - Removing an accepted COMMITTED whose DELETING or APPLIED survives
//     (rule 7): the boundary stays at or above its plan, nothing is pending
//     for it, and AtRisk holds the gate closed until a COMMITTED is read
//     back (TestPropertyCleanerBeforeRepairs; testdata/atrisk).
//
// Not safe, which is why the control topic's settings (min.compaction.lag.ms
// and delete.retention.ms long enough for a worker to repair, the rules of
// package gate) are checked by init, doctor, the workers and the gate:
//
//   - Removing an accepted record whose overwrite is not repaired, with
//     nothing else of its operation surviving: a COMMITTED never followed by
//     a DELETING leaves no trace (recovery is refused only by AtRisk while
//     the overwrite is visible, and its records are still all there: nothing
//     was deleted for it).
//   - Cleaning while Repairs or Retractions are pending and AtRisk is false:
//     in random adversarial logs a few percent of such cuts lose boundary
//     (5.6% of 12,384 in the last measurement), and
//     some bind the control topic to a plan for another topic that was
//     awaiting retraction; an operation can also show an earlier state
//     (COMMITTED instead of APPLIED when its COMMITTED moved past its
//     APPLIED: a worker finishes it again, deleting nothing). A writer that
//     put a boundary field above its own plan (no kcleanup writer does) can
//     make a later covered commit with a stale field win over it
//     (testdata/compaction, case 6).
//
// # Deviations from the brief's fold rules (docs/design.md §5), and why
//
// The brief stated the rules for a log replayed in full. Each change below
// exists so that a compacted log (I5) gives the same state as the full one:
// losing boundary in a compacted replay would let recovery approve a
// recovery point whose records were deleted.
//
//   - COMMITTED without PLANNED is accepted, implying PLANNED (the brief: "only for a
//     PLANNED operation"). The record carries the full plan; in a compacted
//     log a repaired or duplicated PLANNED lands after its COMMITTED.
//   - APPLIED for COMMITTED is accepted, implying DELETING (the brief: "for
//     DELETING"), and DELETING for an APPLIED operation is a duplicate. A
//     DELETING retry that lands after APPLIED moves DELETING after it.
//     COMMITTED is still never implied: it is the point of no return.
//   - The boundary field of a commit that raises the boundary must be at or
//     above max(boundary, plan), not equal to it (the brief: "equals"), and the new
//     boundary is the max of the boundary and the field. In a compacted log,
//     a commit can be folded before an earlier commit its field includes;
//     the field carries it, and I2 holds. A field below that is still
//     boundary-mismatch, and one below its own plan always is.
//   - A commit whose field raises nothing is accepted as covered, even with a
//     plan below the boundary or a field below it (the brief: every offset ≥ the
//     boundary, field equal). A later copy of an earlier commit is such a
//     record. This changes live verdicts too: a plan the boundary already
//     covers, which the brief rejected as a regression, is COMMITTED with nothing
//     left to delete, and its worker finishes it at once. A plan below the
//     boundary that would raise another partition stays a regression.
//   - Repairs also re-appends records that a moved COMMITTED now precedes
//     (the brief repairs overwritten keys only), and Retractions is new: the
//     property test shows that without them the compacted log can differ,
//     and without Retractions even lose boundary.
//   - DELETING or APPLIED without COMMITTED is not just rejected (the brief) but
//     kept as evidence (rule 7; issue #9): the boundary must never fall
//     below a plan whose records may be deleted, in any replay.
//
// # Memory
//
// Memory grows with operations, not records. The fold keeps no record values.
// Overwrites are detected by comparing a record with the accepted content the
// operation already holds (plan, boundary, log start), and Repairs re-encodes
// the accepted record from it. An operation is kept compact (compact.go): an
// 80-byte struct (the plan ID as 32 bytes, state and flags in bytes) and one
// allocation holding its plan's offsets sorted (12 bytes a partition, not a
// map), its source recovery point and its history as varints (about 8 bytes
// a step instead of 40); the binding's topic and topic ID once for all; a
// boundary or log start equal to the plan as a flag. Where the latest copy
// of each of its keys is comes from its history, and from a side struct
// (opExtra, with a boundary or log start unlike the plan, and evidence)
// allocated only for an operation that has a duplicate or those: about 210
// bytes in all for a three-partition plan of four records. Each key holding
// only rejected records keeps its latest offset and time; each rejected
// record keeps its Verdict. The verdict
// of every record (Audit) is kept only by a State made with KeepAudit, for
// kcleanup history: 16 bytes a record and a full Verdict per duplicate.
// Workers and the gate replay without it, and fold with StepDecodedLean
// (no detail text for accepted records, which nobody reads there);
// docs/benchmarks.md, B5, gives both figures.
package projector
