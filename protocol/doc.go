// Package protocol decides the apply protocol (docs/design.md, "Apply"), in
// the shape of etcd-io/raft: a Run is a pure state machine that takes an
// operation's projected state and what the cluster last reported, and
// returns the next step. It performs no I/O, reads no clock and starts no
// goroutine; package worker executes the steps against Kafka and feeds back
// each result, and the simulation (protocol/sim) executes them against a
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
//     high watermark] and at or above the committed boundary, and, for a
//     control topic's first plan (NeedsTombstoneScan: Describe asks for a
//     scan with ScanFrom), no tombstone at or above a plan offset and a
//     scan that read to the end (FirstPlanTombstones; --allow-tombstones
//     turns these into warnings that PLANNED and COMMITTED acknowledge,
//     Step.Acknowledge). Later plans read no data record: the workers watch
//     above the boundary (TombstonesAboveBoundary). Any problem:
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
// (protocol/sim) attaches a mirror in half its seeds and requires both
// lists to be exercised. testdata/mirror/ holds their transcripts. Which
// failed attempts of a WriteMirror the executor runs again from the fence
// is MirrorWriteRetry's rule (testdata/mirror/retry).
//
// # The broker's clock (pinclock.go; docs/design.md §12, "The two clocks")
//
// The log judges which COMMITTED a pin rejects by the COMMITTED's "at", a
// writer's clock. Right before Delete a run also asks PinHeld, on the
// projection that has read back its own DELETING: no deletion above a pin
// whose expiry the broker's clock (projector.State.BrokerTime, the
// LogAppendTime of the newest record read) has not passed, counted as
// BrokerExpiry says; a pin whose PINNED carries no broker time (a
// CreateTime control topic) holds until unpinned. The run then takes a
// Pause step (Step.Pause.Hold: the pin, the broker's time, the gap), its
// error marked ErrPinHeld and ErrBlocked; a hold with no gap (no broker
// time) ends Blocked with the same Pause. The daemon, apply and the
// simulation execute this one decision.
//
// # The restore grace (grace.go; docs/design.md §11)
//
// The grace D is the attached mirror's (its MIRROR_ATTACHED carries it),
// or Config.RestoreGrace when that is longer: MirrorGrace. A process may
// lengthen it, never shorten it. With D > 0, a finishing run whose ReadMirror shows
// the plan covered decides with RestoreGrace whether D has passed since the
// brokers made the mirror's first covering record readable (its commit
// marker's time, MirrorView.Visible; never a reader's clock, which only
// judges MirrorView.ReadAt against it). Until then it takes a Pause step
// before DELETING: Step.Pause.Grace says until when, the error (marked
// ErrRestoreGrace) says it for people. A record time that cannot be known
// counts from Config.GraceSeen, when the executor first saw it.
//
// # Pause (pause.go)
//
// A Pause is the one step an executor may either take or end on. kcleanup
// apply's executor (worker.Options.Sleep) sleeps until Paused.Wait is over,
// bounded by its context, and reports back; the same run then starts over
// as a finishing run from a catch-up, so the mirror, the grace and the
// broker's time of a fresh DELETING are read again (a later mirror record
// may move the grace: it pauses again, MaxPauses times at most, then ends
// with Wait). A worker's executor ends the run on it and its owner retries
// when it is over (OwnerRetry.After reads Step.Pause: Waiting or Held),
// holding no goroutine meanwhile. The simulation does both (an apply
// process sleeps through, a worker hands it to the owner's schedule), and
// transcripts show both (run ... sleep: testdata/mirror/grace,
// testdata/pinclock).
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
// catches up and takes the mirror steps for the boundary's plan only. The
// other writers are modes of the run too, each in a file of its own:
// NewRecommit (step_recommit.go: the owner re-appends a COMMITTED the
// cleaner erased, only where nothing more would be deleted), NewAdopt
// (step_adopt.go: a Flink Agents control topic's plans taken over) and
// NewPin (step_pin.go: kcleanup pin and validate --pin-for).
//
// A run whose Config carries Governors (the other control topics governing
// the incarnation it writes about, which the executor gathered once) refuses
// before its first step while one does: GovernedElsewhere, the one-governor
// rule (issue 35) of every writer (governors.go).
//
// The package also holds the pure checks the steps use and doctor and init
// show: Topic (what the cluster reported), Finding and CheckDataTopic. The
// recovery gate's rules and the control-topic settings are package gate's.
//
// testdata/ holds transcripts of runs step by step, with faults at chosen
// steps (TestTranscripts).
//
// # The mirror's operator rules
//
// Beside the steps that write the mirror, this package holds the
// operator-facing rules of the Flink Agents mirror (docs/flink-agents.md, "The mirror"): whether a topic may be
// attached as the mirror of a control topic (AttachMirror), and how an attached
// mirror stands against the control topic's boundary (AssessMirror: in step,
// lagging by which plan, or not writable and why). init, mirror attach,
// adopt --attach-mirror, doctor, status, the worker's metrics and /readyz
// all decide with these functions, so they agree.
//
// It is pure: the worker reads the mirror (MirrorView) and the control topic (projector.State, or the MirrorControl
// copied out of it, so a worker's view need not hold its projection while
// the mirror is read); this package only decides. The steps that write the
// mirror during an apply are CheckMirror and MirrorWrite (mirror.go).
//
// ## AssessMirror
//
// An attached mirror is in step when the job's effective boundary on it
// equals kcleanup's boundary (or neither has one); lagging when it is valid
// and below (Lag: offsets behind, summed over partitions; BoundaryPlan:
// the plan it lacks); ahead when above (a writer other than kcleanup);
// cannot be written when it is missing, recreated, not the job's settings,
// its fold fails, a plan on it does not fit, or the checking principal
// lacks a permission (Denied: doctor warns, a worker reports it).
//
// ## AttachMirror
//
// A topic may be attached when writing the plan that sets the boundary to
// it can never make a Flink Agents job's fold fail, and the job would then
// refuse exactly what kcleanup refuses:
//
//  1. the control topic's projection is not degraded and has no history at
//     risk (its word on the boundary must be good);
//  2. the topic exists, is not the control topic, has exactly one partition
//     and cleanup.policy exactly "compact" (the job's own CheckTopic);
//  3. its records fold by the job's rules without failing (empty is fine:
//     the owning worker seeds it with the plan that sets the boundary);
//  4. every plan on it names the data topic, topic ID and partition set the
//     control topic governs, and lies at or below kcleanup's boundary on
//     every partition (so it is comparable with the plan the mirror will
//     be given, and the job never refuses more than kcleanup does);
//  5. the boundary, when there is one, is the plan of one operation
//     (one Flink Agents record can carry it).
//
// A refusal is an error marked ErrMirrorRefused with a hint; ErrMirrorCannotTell when
// the control topic's own word is not good enough to decide.
package protocol
