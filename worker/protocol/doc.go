// Package protocol decides the apply protocol (docs/design.md, "Apply"), in
// the shape of etcd-io/raft: a Run is a pure state machine that takes an
// operation's projected state and what the cluster last reported, and
// returns the next step. It performs no I/O, reads no clock and starts no
// goroutine; package worker executes the steps against Kafka and feeds back
// each result, and the simulation (worker/sim) executes them against a
// simulated cluster with faults.
//
//	run := protocol.NewApply(plan, protocol.Config{ControlTopic: ctl, Bootstrap: b})
//	var rep protocol.Report
//	for {
//		step := run.Next(proj.State, rep) // proj folds every record it reads
//		if step.Kind.Terminal() {
//			return step.Result, step.Err
//		}
//		rep = execute(step) // the executor's only job
//	}
//
// # The steps, in the order a full Apply meets them
//
//  1. Describe the data topic (uncached topic ID, partitions, configs, log
//     starts, high watermarks). Preflight: the plan is valid, the
//     projection is not degraded, the control topic is bound to the plan's
//     topic and ID (or to none), the live ID and partition set are the
//     plan's, the configs keep Kafka from retiring records and allow
//     DeleteRecords (CheckDataTopic), every offset is within [log start,
//     high watermark] and at or above the committed boundary. Any problem:
//     Refused, nothing written. Then Permissions: every ACL the rest of
//     the run needs (a missing one: Blocked, nothing written).
//  2. Append PLANNED (unless the operation exists), then COMMITTED with the
//     boundary field max(boundary, plan) (CommitBoundary). The verdict is
//     the one read back. boundary-mismatch (a commit landed in between) is
//     recomputed up to CommitRetries times; boundary-regression is
//     Refused with ErrSuperseded naming the winner. COMMITTED accepted
//     (covered or not) is the point of no return.
//  3. CatchUp; the operation must be COMMITTED or DELETING (APPLIED: Done,
//     Already). Recheck: the topic still exists with the plan's ID, its
//     configs still allow the deletion, and it has every plan offset (at
//     or below the high watermark). Otherwise Blocked, before DELETING is
//     appended, so a worker retrying a blocked operation appends nothing.
//     Blocked too, while records are left to delete, when the projection
//     is at risk (projector.State.AtRisk): other readers take a DELETING as
//     proof that the COMMITTED was read back accepted (testdata/atrisk).
//     Permissions for finishing, then append DELETING (a retry if already DELETING). Recheck again, then
//     Delete the partitions whose log start is below the plan; only for an
//     operation the projection shows DELETING.
//  4. Verify: every log start at or above the plan. CatchUp (another writer
//     may have finished), then append APPLIED with the starts seen.
//
// # With a Flink Agents mirror attached (mirror.go; docs/design.md §11)
//
// When the projection has a mirror attached (projector.State.Mirror), every
// Apply (NoWait too: it reads the mirror but never writes it) first reads the
// mirror after the Permissions of step 1 and is Blocked, nothing written,
// when the plan's COMMITTED could not be written to it (MirrorWrite). A
// finishing run takes the mirror steps: ReadMirror (the mirror as the job
// reads it) and, unless the job's effective boundary there already covers
// the plan (MirrorCovers), WriteMirror of the plan's COMMITTED, then
// ReadMirror again: after the Permissions of step 3, before DELETING, and
// again right before Delete when the attached mirror changed since. In
// step 4, before APPLIED, the same for the mirror's APPLIED (when the
// mirror holds the plan as COMMITTED). CheckMirror blocks on a missing or
// recreated mirror, the wrong settings, or a fold the job fails on;
// MirrorWrite, which the executor applies again on a fresh read inside its
// fenced transaction, refuses any write that would make the job's fold
// fail (Blocked). A plan the control topic accepted as covered is never
// written: its run waits until the mirror covers it. NewMirrorSync writes
// the plan whose offsets are the boundary (BoundaryPlan) unless the mirror
// covers it. The mirror steps are listed apart (MirrorKinds, not Kinds)
// because only a run with a mirror attached meets them; the simulation
// (worker/sim) attaches a mirror in half its seeds and requires both
// lists to be exercised. testdata/mirror/ holds their transcripts. Which
// failed attempts of a WriteMirror the executor runs again from the fence
// is MirrorWriteRetry's rule (testdata/mirror/retry).
//
// A request that fails as a whole ends the run with Wait (retry later: it
// may have taken effect, and the next run re-reads everything), unless its
// Kafka error code (Report.Code) says a retry cannot pass (PermanentRequest:
// access denied, refused credentials): then Blocked. A DeleteRecords answer
// that retrying cannot change (PermanentDelete on Deleted.Code: policy
// violation, offset out of range, access denied) is Blocked; any other
// per-partition failure is Wait. Which ACLs a Permissions step asks for is
// decided here too (Step.Need: ApplyNeeds, FinishNeeds); the executor
// answers with those the brokers deny (Report.Denied), and any one blocks
// the run (Unauthorized). The executor reports these facts and never judges
// them (access.go, testdata/access). Every step is idempotent, so any
// number of runs, by any processes, in any interleaving, may precede the one
// that completes: the simulation checks it.
//
// NewFinish starts at step 3 (the workers, and Apply's second half);
// NewSubmit stops after PLANNED; NewPreflight after step 1; NewMirrorSync
// catches up and takes the mirror steps for the boundary's plan only.
//
// The package also holds the pure checks the steps use and doctor and init
// show: Topic (what the cluster reported), Finding and CheckDataTopic. The
// recovery gate's rules and the control-topic settings are package gate's.
//
// testdata/ holds transcripts of runs step by step, with faults at chosen
// steps (TestTranscripts).
package protocol
