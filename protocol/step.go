package protocol

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
)

// Kind is what a step asks the executor to do, or how a run ended. The
// values are stable words (logs, the simulation's counts).
type Kind string

// The steps of the protocol, in the order a full Apply meets them, then the
// four ways a run ends.
const (
	// Describe: the data topic from an uncached Metadata request, its
	// configs, log starts and high watermarks (Report.Topic), for the checks
	// before COMMITTED. With Step.ScanFrom set (a control topic's first
	// plan: NeedsTombstoneScan) also its tombstones from those offsets
	// (Report.Tombstones).
	Describe Kind = "describe"
	// Permissions: ask the brokers whether this client holds every ACL the
	// rest of the run needs (Step.Need: the protocol decides it), before the
	// step that would leave work another principal must finish: before
	// COMMITTED, before DELETING. The missing ones come back as
	// Report.Denied; the run is then Blocked (Unauthorized).
	Permissions Kind = "permissions"
	// Append: append Step.Record (the executor sets at and actor) and read
	// the control topic until it has folded it (Report.Verdict).
	Append Kind = "append"
	// CatchUp: read the control topic to the end offset captured now.
	CatchUp Kind = "catch-up"
	// Recheck: Describe again, right before DELETING and right before the
	// deletion: the topic may have been recreated or reconfigured since
	// COMMITTED.
	Recheck Kind = "recheck"
	// Delete: DeleteRecords up to Step.Delete (Report.Deleted, per partition).
	Delete Kind = "delete"
	// Verify: list the log starts (Report.Starts) to check the deletion.
	Verify Kind = "verify"

	// Done: the run succeeded; Step.Result says where the operation is.
	Done Kind = "done"
	// Wait: the run stops on a condition that may pass by itself (a failed
	// or timed-out request, a rejected DELETING); retry later. Step.Err.
	Wait Kind = "wait"
	// Blocked: an operator must act (topic recreated, policy changed, access
	// denied, offsets the topic does not have, a degraded projection).
	// Step.Err is marked ErrBlocked or ErrDegraded. Retry rarely.
	Blocked Kind = "blocked"
	// Refused: the plan does not fit (ErrRejected) or lost to a concurrent
	// commit (ErrSuperseded). Nothing was committed by this run.
	Refused Kind = "refused"
)

// Kinds lists every kind, for documentation and coverage counts.
func Kinds() []Kind {
	return []Kind{Describe, Permissions, Append, CatchUp, Recheck, Delete, Verify, Done, Wait, Blocked, Refused}
}

// Terminal reports whether a step ends its run.
func (k Kind) Terminal() bool {
	return k == Done || k == Wait || k == Blocked || k == Refused
}

// Progress is one line of what a run did, for people.
type Progress struct {
	Step    string `json:"step"`
	Message string `json:"message"`
}

// Step is the next thing to do.
type Step struct {
	Kind Kind
	// Need is what a Permissions step asks the brokers for: every ACL the
	// rest of the run needs (ApplyNeeds, FinishNeeds).
	Need []Permission
	// Topic is the data topic (Describe, Recheck, Delete, Verify).
	Topic string
	// Record is the envelope to append (Append), without at and actor.
	Record events.Envelope
	// Delete holds, per partition, the offset to delete up to (Delete).
	Delete events.Offsets
	// Of is how many partitions the plan covers (Delete), for messages.
	Of int
	// Err says why a run ended without success (Wait, Blocked, Refused).
	Err error
	// Result is where the run left the operation (terminal steps).
	Result Result
	// Notes are what the previous report meant, to show before executing.
	Notes []Progress
	// Mirror is the mirror to read (ReadMirror: Topic and TopicID) or the
	// record to write to it (WriteMirror).
	Mirror MirrorRecord
	// ScanFrom asks Describe to read the data topic for tombstones from
	// these offsets to the last stable offset (Report.Tombstones).
	ScanFrom events.Offsets
	// Acknowledge is what the operator acknowledged to get this record
	// written (--allow-tombstones): the executor appends it to the
	// record's actor, so that history shows it.
	Acknowledge string
}

// Result is where a run left its operation.
type Result struct {
	State fsm.State
	// Already is true when the plan was APPLIED before the run.
	Already bool
	// LogStart holds the verified log-start offsets reported in APPLIED.
	LogStart events.Offsets
	// Verdict is the fold's verdict on the last record the run appended.
	Verdict projector.Verdict
}

// Report is what the executor saw doing the previous step.
type Report struct {
	// Err: the request failed as a whole; nothing is known of its effect (a
	// timed-out request may have taken effect). The executor reports it as
	// it came; the protocol decides from Code whether a retry can help.
	Err error
	// Code is the Kafka error code of Err when the broker answered one (0:
	// none, or not a Kafka error): the protocol tells by it whether a retry
	// can help (PermanentRequest).
	Code int16
	// Missing: Describe or Recheck found no such topic (Err says so).
	Missing bool
	// Denied answers Permissions: the ACLs of Step.Need the brokers say
	// this client's principal does not hold (none: every one is held).
	Denied []Permission
	// Topic answers Describe and Recheck.
	Topic Topic
	// Verdict answers Append: the log's verdict on the record, read back.
	Verdict projector.Verdict
	// Deleted answers Delete, per partition.
	Deleted []Deleted
	// Starts answers Verify.
	Starts events.Offsets
	// Tombstones answers a Describe with ScanFrom.
	Tombstones *TombstoneScan
	// Mirror answers ReadMirror.
	Mirror MirrorView
	// MirrorWrote answers WriteMirror: false when the fresh read inside
	// the transaction showed the record was not needed (MirrorWrite).
	MirrorWrote bool
}

// Deleted is the broker's answer to DeleteRecords for one partition.
type Deleted struct {
	Partition int32
	// Err is nil on success.
	Err error
	// Code is the Kafka error code of Err (0 when none): the protocol tells
	// by it whether a retry can help (PermanentDelete).
	Code int16
}

type mode int

const (
	modeApply mode = iota
	modeFinish
	modeSubmit
	modePreflight
	modeMirrorSync
)

// phase is which report a run is waiting for.
type phase int

const (
	phaseStart phase = iota
	phaseDescribed
	phasePermitted
	phasePlanned
	phaseCommitted
	phaseCaughtUp
	phaseRechecked
	phasePermittedFinish
	phaseDeleting
	phaseRecheckedAgain
	phaseDeleted
	phaseVerified
	phaseCaughtUpAgain
	phaseApplied
	phaseMirrorSync
	phaseMirrorRead
	phaseMirrorWritten
	phaseEnded
)

// Run is one execution of the protocol for one plan, as a pure state
// machine: Next takes the projection and the report of the previous step
// and returns the next step. It performs no I/O and reads no clock. A Run
// is used by one goroutine and is not reused after a terminal step.
type Run struct {
	mode   mode
	cfg    Config
	plan   events.Plan
	planID string
	phase  phase
	// state is where the operation stood when last seen, for Result.
	state fsm.State
	// commits counts COMMITTED records appended after boundary-mismatch.
	commits int
	// seen holds the verified log starts.
	seen events.Offsets
	end  Step
	// mirror is the state of the mirror steps under way (mirror.go);
	// mirrored names the mirror (topic/ID) that showed the plan covered.
	mirror   *mirrorRun
	mirrored string
	// ack is what the operator's --allow-tombstones acknowledged.
	ack string
}

// NewApply runs the whole protocol for plan: checks, PLANNED, COMMITTED
// (the point of no return), then what NewFinish does, unless cfg.NoWait.
// An operation already COMMITTED or DELETING is resumed; an APPLIED one is
// Done with Already.
func NewApply(plan events.Plan, cfg Config) *Run {
	return &Run{mode: modeApply, cfg: cfg, plan: plan, planID: plan.PlanID}
}

// NewFinish drives an operation the log shows as COMMITTED or DELETING to
// APPLIED (DELETING, deletion, verification, APPLIED). Apply and the
// workers share it.
func NewFinish(planID string, cfg Config) *Run {
	return &Run{mode: modeFinish, cfg: cfg, planID: planID}
}

// NewSubmit checks plan like Apply and appends PLANNED only.
func NewSubmit(plan events.Plan, cfg Config) *Run {
	return &Run{mode: modeSubmit, cfg: cfg, plan: plan, planID: plan.PlanID}
}

// NewPreflight checks plan like Apply and writes nothing.
func NewPreflight(plan events.Plan, cfg Config) *Run {
	return &Run{mode: modePreflight, cfg: cfg, plan: plan, planID: plan.PlanID}
}

// PlanID names the run's plan.
func (r *Run) PlanID() string { return r.planID }

// Next returns the step that follows rep, the report of the previous step
// (the zero Report for the first call). st is the projection the executor
// keeps: it folds every record it reads, its own appends included, before
// reporting. After a terminal step, Next returns that step again.
func (r *Run) Next(st *projector.State, rep Report) Step {
	if r.phase == phaseEnded {
		return r.end
	}
	s := r.next(st, rep)
	if s.Kind.Terminal() {
		s.Result.State = r.state
		r.phase, r.end = phaseEnded, s
	}
	return s
}

func (r *Run) next(st *projector.State, rep Report) Step {
	// Every report that carries a failure of the request as a whole ends the
	// run: retrying at once would repeat what just failed.
	// One that cannot pass on a retry (access denied, refused credentials)
	// blocks instead.
	if r.phase != phaseStart && rep.Err != nil && !rep.Missing {
		switch {
		case errors.Is(rep.Err, ErrBlocked):
			return Step{Kind: Blocked, Err: rep.Err}
		case Denied(rep.Code):
			return Step{Kind: Blocked, Err: errors.Mark(errors.Mark(rep.Err, ErrUnauthorized), ErrBlocked)}
		case PermanentRequest(rep.Code):
			return Step{Kind: Blocked, Err: errors.Mark(rep.Err, ErrBlocked)}
		}
		return Step{Kind: Wait, Err: rep.Err}
	}
	// A Permissions answer that names a missing ACL blocks before the step
	// that would need it: nothing more is written.
	if err := Unauthorized(rep.Denied, r.cfg.Principal, r.cfg.Bootstrap); err != nil {
		return Step{Kind: Blocked, Err: err}
	}
	switch r.phase {
	case phaseStart:
		if r.mode == modeMirrorSync {
			r.phase = phaseMirrorSync
			return Step{Kind: CatchUp}
		}
		if r.mode == modeFinish {
			r.phase = phaseCaughtUp
			return Step{Kind: CatchUp}
		}
		return r.start(st)
	case phaseDescribed:
		return r.described(st, rep)
	case phasePermitted:
		if r.mode == modeApply {
			// Before the point of no return: a mirror the plan could not be
			// written to refuses it with nothing written, whoever finishes it
			// (this run, or the workers after a --no-wait submit).
			return r.mirrorPrecheck(st, r.permitted)
		}
		return r.permitted(st)
	case phasePermittedFinish:
		// The mirror shows the plan before DELETING, so that a blocked
		// mirror appends nothing on every retry.
		return r.withMirror(st, flinkagents.Committed, func(*projector.State) Step {
			r.phase = phaseDeleting
			return Step{Kind: Append, Record: r.envelope(events.Deleting)}
		})
	case phaseMirrorSync:
		return r.mirrorSyncStart(st)
	case phaseMirrorRead:
		return r.mirrorRead(st, rep)
	case phaseMirrorWritten:
		return r.mirrorWritten(rep)
	case phasePlanned:
		return r.planned(st, rep)
	case phaseCommitted:
		return r.committed(st, rep)
	case phaseCaughtUp:
		return r.caughtUp(st)
	case phaseRechecked, phaseRecheckedAgain:
		return r.rechecked(st, rep)
	case phaseDeleting:
		return r.deleting(st, rep)
	case phaseDeleted:
		return r.deleted(rep)
	case phaseVerified:
		return r.verified(rep)
	case phaseCaughtUpAgain:
		return r.caughtUpAgain(st)
	case phaseApplied:
		return r.applied(st, rep)
	}
	return Step{Kind: Wait, Err: errors.AssertionFailedf("protocol: run in unknown phase %d", r.phase)}
}

// start: the checks that need no cluster answer, then Describe.
func (r *Run) start(st *projector.State) Step {
	if err := r.plan.Validate(); err != nil {
		return Step{Kind: Refused, Err: errors.Mark(err, ErrRejected)}
	}
	if err := Degraded(st, r.cfg.ControlTopic); err != nil {
		return Step{Kind: Blocked, Err: err}
	}
	op, _ := st.Operation(r.planID)
	r.state = op.State
	if r.mode == modeApply {
		switch op.State {
		case fsm.Applied:
			return Step{Kind: Done, Result: Result{Already: true, LogStart: op.LogStart},
				Notes: say("applied", "plan %s is already APPLIED", r.planID)}
		case fsm.Committed, fsm.Deleting:
			notes := say("resume", "plan %s is %s: resuming", r.planID, op.State)
			if r.cfg.NoWait {
				return Step{Kind: Done, Notes: notes}
			}
			r.phase = phaseCaughtUp
			return Step{Kind: CatchUp, Notes: notes}
		}
	}
	if err := CheckBinding(st, r.plan, r.cfg.ControlTopic); err != nil {
		return Step{Kind: Refused, Err: err}
	}
	r.phase = phaseDescribed
	// Every plan is scanned for tombstones before COMMITTED, from the boundary it would
	// leave (CommitTombstones): the first against its own offsets, a later one by the
	// rule the workers' watch applies before deleting.
	return Step{Kind: Describe, Topic: r.plan.Topic, ScanFrom: CommitScanFrom(st, r.plan)}
}

// described: the preflight checks, then PLANNED or COMMITTED.
func (r *Run) described(st *projector.State, rep Report) Step {
	if rep.Missing {
		return Step{Kind: Refused, Err: errors.WithHint(errors.Mark(rep.Err, ErrRejected),
			"check the plan's topic name and the bootstrap server (-b)")}
	}
	fs := PreflightFindings(st, r.plan, rep.Topic, r.cfg.Bootstrap)
	if len(Blocking(fs)) == 0 {
		var tfs []Finding
		tfs, r.ack = CommitTombstones(st, r.plan, rep.Tombstones, r.cfg.AllowTombstones)
		fs = append(fs, tfs...)
	}
	if err := findingsError(fs); err != nil {
		return Step{Kind: Refused, Err: err}
	}
	if err := PinRefusal(st, r.plan, r.cfg.Now, r.cfg.ControlTopic); err != nil {
		return Step{Kind: Refused, Err: err}
	}
	switch r.mode {
	case modePreflight:
		return Step{Kind: Done}
	case modeApply:
		// Before the point of no return: every ACL the rest of the protocol needs.
		r.phase = phasePermitted
		need := ApplyNeeds(r.cfg.ControlTopic, r.plan.Topic, r.cfg.NoWait)
		// A run that only submits (--no-wait) never writes the mirror, but
		// it reads it: a plan the mirror could never take is not committed.
		need = withMirrorNeeds(st, need, !r.cfg.NoWait)
		return Step{Kind: Permissions, Need: need, Topic: r.plan.Topic,
			Notes: say("check", "plan %s fits the live topic and the boundary", r.planID)}
	}
	return r.permitted(st)
}

// permitted: PLANNED unless the operation exists, then COMMITTED.
func (r *Run) permitted(st *projector.State) Step {
	op, _ := st.Operation(r.planID)
	if op.State == fsm.None {
		r.phase = phasePlanned
		return r.acknowledged(Step{Kind: Append, Record: r.envelope(events.Planned)})
	}
	return r.commit(st, nil)
}

func (r *Run) commit(st *projector.State, notes []Progress) Step {
	// A plan below the boundary on one partition that would raise another
	// is a regression on this (caught-up) view: the fold would reject it.
	// It is not appended: a rejected COMMITTED on the log is what the
	// cleaner may reorder ahead of the commit that defeated it.
	if regression(st, r.plan) {
		return Step{Kind: Refused, Err: r.superseded(st), Notes: notes}
	}
	// A pin that landed since the checks (after PLANNED, or between two
	// commit attempts) refuses it here, before the point of no return.
	if err := PinRefusal(st, r.plan, r.cfg.Now, r.cfg.ControlTopic); err != nil {
		return Step{Kind: Refused, Err: err, Notes: notes}
	}
	env := r.envelope(events.Committed)
	env.Boundary = CommitBoundary(st, r.plan)
	r.phase = phaseCommitted
	return r.acknowledged(Step{Kind: Append, Record: env, Notes: notes})
}

func (r *Run) planned(st *projector.State, rep Report) Step {
	v := rep.Verdict
	if !accepted(v) {
		return Step{Kind: Refused, Result: Result{Verdict: v}, Err: errors.Mark(errors.Newf(
			"PLANNED for plan %s was rejected at offset %d: %s: %s", r.planID, v.Offset, v.Reason, v.Detail), ErrRejected)}
	}
	r.state = fsm.Planned
	notes := say("planned", "PLANNED %s at control offset %d", r.planID, v.Offset)
	if r.mode == modeSubmit {
		return Step{Kind: Done, Result: Result{Verdict: v}, Notes: notes}
	}
	return r.commit(st, notes)
}

// committed: COMMITTED accepted is the point of no return. A commit that
// lost a race is recomputed while the plan still raises the boundary
// monotonically; otherwise the winner is named.
func (r *Run) committed(st *projector.State, rep Report) Step {
	v := rep.Verdict
	op, _ := st.Operation(r.planID)
	switch op.State {
	case fsm.Committed, fsm.Deleting, fsm.Applied:
		r.state = op.State
		notes := say("committed", "COMMITTED %s at control offset %d: recovery now refuses older recovery points", r.planID, v.Offset)
		if v.Covered {
			// Only a race gets here (the preflight refuses a plan below the
			// boundary): the boundary already covers the plan, so the
			// deletion that follows removes nothing recovery may need.
			notes = say("committed", "COMMITTED %s at control offset %d, covered by the current boundary: it raises nothing", r.planID, v.Offset)
		}
		if r.cfg.NoWait {
			return Step{Kind: Done, Result: Result{Verdict: v}, Notes: notes}
		}
		r.phase = phaseCaughtUp
		return Step{Kind: CatchUp, Notes: notes}
	}
	if v.Reason == projector.ReasonBoundaryRegression {
		return Step{Kind: Refused, Result: Result{Verdict: v}, Err: r.superseded(st)}
	}
	if v.Reason == projector.ReasonPinned {
		// A pin landed first: the log decided, and a retry cannot change it.
		err := errors.Mark(errors.Mark(errors.Mark(errors.Newf("COMMITTED for plan %s was written at control offset %d and rejected by the log: %s", r.planID, v.Offset, v.Detail), ErrPinned), ErrCommitRejected), ErrRejected)
		if pinErr := PinRejection(st, r.plan, v, r.cfg.ControlTopic); pinErr != nil {
			err = pinErr
		}
		return Step{Kind: Refused, Result: Result{Verdict: v}, Err: err}
	}
	if v.Reason != projector.ReasonBoundaryMismatch || r.commits >= CommitRetries {
		return Step{Kind: Refused, Result: Result{Verdict: v}, Err: errors.Mark(errors.Mark(errors.Newf(
			"COMMITTED for plan %s was rejected at offset %d: %s: %s", r.planID, v.Offset, v.Reason, v.Detail), ErrCommitRejected), ErrRejected)}
	}
	r.commits++
	return r.commit(st, say("commit", "another commit landed first; recomputing the boundary and retrying"))
}

// regression: plan is below the boundary on some partition and above it
// (or outside it) on another.
func regression(st *projector.State, plan events.Plan) bool {
	b := st.Boundary()
	below, raises := false, false
	for p, off := range plan.Offsets {
		cur, ok := b[p]
		below = below || (ok && off < cur)
		raises = raises || !ok || off > cur
	}
	return below && raises
}

func (r *Run) superseded(st *projector.State) error {
	boundary := st.Boundary()
	for _, p := range r.plan.Offsets.Partitions() {
		if b := boundary[p]; r.plan.Offsets[p] < b {
			return errors.WithHint(errors.Mark(errors.Newf(
				"plan %s was superseded by plan %s: partition %d boundary is %d, above this plan's %d",
				r.planID, st.BoundarySetBy(p), p, b, r.plan.Offsets[p]), ErrSuperseded),
				"nothing was deleted for this plan; plan again from a recovery point at or after the new boundary")
		}
	}
	return errors.Mark(errors.Newf("plan %s was superseded", r.planID), ErrSuperseded)
}

// caughtUp: the first look at the operation in a finishing run, on a
// projection that proved it read the whole control topic.
func (r *Run) caughtUp(st *projector.State) Step {
	if err := Degraded(st, r.cfg.ControlTopic); err != nil {
		return Step{Kind: Blocked, Err: err}
	}
	op, ok := st.Operation(r.planID)
	if !ok {
		return Step{Kind: Refused, Err: errors.Mark(errors.Newf("plan %s is not on control topic %s", r.planID, r.cfg.ControlTopic), ErrRejected)}
	}
	r.state, r.plan = op.State, op.Plan
	switch op.State {
	case fsm.Applied:
		return Step{Kind: Done, Result: Result{Already: true, LogStart: op.LogStart}}
	case fsm.Committed, fsm.Deleting:
	default:
		return Step{Kind: Refused, Err: errors.Mark(errors.Newf("plan %s is %s; only a COMMITTED plan may be deleted", r.planID, op.State), ErrRejected)}
	}
	// Checked before DELETING too, so that a blocked operation retried by a
	// worker does not append a DELETING on every attempt. Both rechecks read
	// the data topic above the boundary for tombstones (WatchTombstones).
	r.phase = phaseRechecked
	return Step{Kind: Recheck, Topic: r.plan.Topic, ScanFrom: st.Boundary()}
}

// rechecked: what must still hold right before DELETING and right before
// the deletion. DeleteRecords addresses topics by name only, so this narrows
// but cannot close the window in which a recreated topic could be hit
// (docs/design.md, "Kafka facts").
func (r *Run) rechecked(st *projector.State, rep Report) Step {
	if err := r.blocked(rep); err != nil {
		return Step{Kind: Blocked, Err: err}
	}
	// The workers' rule, for every finishing run (apply's too): no deletion, and no
	// DELETING, while a tombstone lies at or above the boundary.
	scan := TombstoneScan{}
	if rep.Tombstones != nil {
		scan = *rep.Tombstones
	}
	if err := WatchTombstones(r.plan.Topic, st.Boundary(), scan); err != nil {
		if errors.Is(err, ErrBlocked) {
			return Step{Kind: Blocked, Err: err}
		}
		return Step{Kind: Wait, Err: err}
	}
	if r.phase == phaseRechecked {
		// A view on which nothing would be deleted announces no deletion
		// either: a DELETING is evidence, for every other reader, that this
		// writer read the COMMITTED back accepted (docs/design.md §6).
		if leftToDelete(r.plan, rep.Topic) {
			if err := atRisk(st); err != nil {
				return Step{Kind: Blocked, Err: err}
			}
			op, _ := st.Operation(r.planID)
			if err := pinnedDeletion(st, op, r.cfg.ControlTopic); err != nil {
				return Step{Kind: Blocked, Err: err}
			}
		}
		// And every ACL the rest needs, so that a principal that cannot
		// finish writes nothing.
		r.phase = phasePermittedFinish
		return Step{Kind: Permissions, Need: withMirrorNeeds(st, FinishNeeds(r.cfg.ControlTopic, r.plan.Topic), true), Topic: r.plan.Topic}
	}
	// The last line of defence of I1: a deletion only for an operation the
	// log, read back, shows past COMMITTED, on a projection with no sign of
	// missing or reordered history.
	op, _ := st.Operation(r.planID)
	if op.State != fsm.Deleting {
		return Step{Kind: Wait, Err: errors.AssertionFailedf("plan %s is %s in the projection, not DELETING: no deletion", r.planID, op.State)}
	}
	if name := mirrorName(st); name != "" && name != r.mirrored {
		// A mirror attached (or replaced) since the check before DELETING:
		// it must show the plan too before anything is deleted.
		info := rep.Topic
		return r.withMirror(st, flinkagents.Committed, func(st *projector.State) Step { return r.deleteTo(st, info) })
	}
	return r.deleteTo(st, rep.Topic)
}

// deleteTo: Delete the partitions whose log start is below the plan, or
// verify at once when none is.
func (r *Run) deleteTo(st *projector.State, info Topic) Step {
	op, _ := st.Operation(r.planID)
	to := events.Offsets{}
	for p, off := range r.plan.Offsets {
		if info.Start[p] < off {
			to[p] = off
		}
	}
	if len(to) == 0 {
		// Nothing below the plan is left: the starts just listed verify it.
		return r.verified(Report{Starts: info.Start})
	}
	// Finishing with nothing left to delete is safe whatever the history
	// says (a recommitted operation carries the boundary it restores);
	// deleting is not.
	if err := atRisk(st); err != nil {
		return Step{Kind: Blocked, Err: err}
	}
	if err := misplaced(op); err != nil {
		return Step{Kind: Blocked, Err: err}
	}
	if err := pinnedDeletion(st, op, r.cfg.ControlTopic); err != nil {
		return Step{Kind: Blocked, Err: err}
	}
	// The broker's clock, read back with this run's DELETING: whatever
	// "at" the COMMITTED carries, nothing above a pin it still holds.
	if h, held := PinHeld(st, op); held {
		return pinHeldStep(h, r.cfg.ControlTopic)
	}
	r.phase = phaseDeleted
	return Step{Kind: Delete, Topic: r.plan.Topic, Delete: to, Of: len(r.plan.Offsets)}
}

// leftToDelete reports whether a partition of the plan has its log start
// below the plan's offset.
func leftToDelete(plan events.Plan, t Topic) bool {
	for p, off := range plan.Offsets {
		if t.Start[p] < off {
			return true
		}
	}
	return false
}

// Recreated says, when the live topic (liveID) is not the incarnation the plan is for, that
// the topic was deleted and recreated: nothing the control topic says about the plan holds for
// the new one. "" when the IDs agree.
func Recreated(plan events.Plan, liveID string) string {
	if liveID == plan.TopicID {
		return ""
	}
	return fmt.Sprintf("topic %s now has ID %s, not the plan's %s: it was recreated", plan.Topic, liveID, plan.TopicID)
}

// blocked is why the live topic no longer allows this plan's deletion, or nil.
func (r *Run) blocked(rep Report) error {
	plan := r.plan
	if rep.Missing {
		return errors.WithHint(errors.Mark(rep.Err, ErrBlocked),
			"the committed boundary stays and recovery enforces it; nothing was deleted. If the topic was deleted on purpose, nothing is left to clean")
	}
	info := rep.Topic
	if why := Recreated(plan, info.ID); why != "" {
		return errors.WithHint(errors.Mark(errors.Newf("%s; nothing was deleted", why), ErrBlocked),
			"the committed boundary stays; make a new plan for the new topic on a new control topic")
	}
	if err := findingsError(CheckDataTopic(info, r.cfg.Bootstrap)); err != nil {
		return errors.Mark(err, ErrBlocked)
	}
	// A committed plan (written by any producer) whose offsets the topic
	// does not have cannot be deleted up to: DeleteRecords answers
	// OFFSET_OUT_OF_RANGE on every retry. It waits for the topic, not for a
	// backoff.
	var lines []string
	for _, p := range plan.Offsets.Partitions() {
		end, ok := info.End[p]
		switch {
		case !ok:
			lines = append(lines, fmt.Sprintf("%s-%d: the topic has no such partition", plan.Topic, p))
		case plan.Offsets[p] > end:
			lines = append(lines, fmt.Sprintf("%s-%d: the plan deletes up to offset %d, above the high watermark %d", plan.Topic, p, plan.Offsets[p], end))
		}
	}
	if len(lines) > 0 {
		return errors.WithHint(errors.Mark(errors.Newf("plan %s cannot be applied to the live topic:\n%s", r.planID, strings.Join(lines, "\n")), ErrBlocked),
			"the committed boundary stays and recovery enforces it; a worker retries on its blocked schedule and deletes once the topic holds these offsets")
	}
	return nil
}

func (r *Run) deleting(st *projector.State, rep Report) Step {
	v := rep.Verdict
	if !accepted(v) {
		if op, _ := st.Operation(r.planID); op.State == fsm.Applied {
			r.state = fsm.Applied
			return Step{Kind: Done, Result: Result{LogStart: op.LogStart, Verdict: v}}
		}
		return Step{Kind: Wait, Result: Result{Verdict: v}, Err: errors.Newf(
			"DELETING for plan %s was rejected at offset %d: %s: %s", r.planID, v.Offset, v.Reason, v.Detail)}
	}
	r.state = fsm.Deleting
	r.phase = phaseRecheckedAgain
	return Step{Kind: Recheck, Topic: r.plan.Topic, ScanFrom: st.Boundary(), Notes: say("deleting", "DELETING %s at control offset %d", r.planID, v.Offset)}
}

// deleted: every partition's answer; a failure retrying cannot remove
// blocks the operation.
func (r *Run) deleted(rep Report) Step {
	var lines []string
	permanent, denied := false, false
	for _, d := range rep.Deleted {
		if d.Err == nil {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s-%d: %v", r.plan.Topic, d.Partition, d.Err))
		permanent = permanent || PermanentDelete(d.Code)
		denied = denied || Denied(d.Code)
	}
	if len(lines) > 0 {
		err := errors.Newf("DeleteRecords failed on %d partition(s):\n%s", len(lines), strings.Join(lines, "\n"))
		if denied {
			err = errors.Mark(err, ErrUnauthorized)
		}
		if permanent {
			return Step{Kind: Blocked, Err: errors.Mark(err, ErrBlocked)}
		}
		return Step{Kind: Wait, Err: err}
	}
	r.phase = phaseVerified
	return Step{Kind: Verify, Topic: r.plan.Topic}
}

// verified: every log start at or above the plan, then a fresh catch-up
// before APPLIED (another writer may have finished the operation).
func (r *Run) verified(rep Report) Step {
	seen := events.Offsets{}
	for _, p := range r.plan.Offsets.Partitions() {
		got, ok := rep.Starts[p]
		if !ok || got < r.plan.Offsets[p] {
			return Step{Kind: Wait, Err: errors.Newf("verify %s-%d: log start is %d, below the plan's %d; will retry", r.plan.Topic, p, got, r.plan.Offsets[p])}
		}
		seen[p] = got
	}
	r.seen = seen
	r.phase = phaseCaughtUpAgain
	return Step{Kind: CatchUp, Notes: say("verify", "every log start of %s is at or above the plan", r.plan.Topic)}
}

func (r *Run) caughtUpAgain(st *projector.State) Step {
	if op, _ := st.Operation(r.planID); op.State == fsm.Applied {
		r.state = fsm.Applied
		return Step{Kind: Done, Result: Result{LogStart: op.LogStart}}
	}
	// The mirror's APPLIED before the control topic's: once APPLIED, no
	// worker finishes the operation again.
	return r.withMirror(st, flinkagents.Applied, func(*projector.State) Step {
		env := r.envelope(events.Applied)
		env.LogStart = r.seen
		r.phase = phaseApplied
		return Step{Kind: Append, Record: env}
	})
}

func (r *Run) applied(st *projector.State, rep Report) Step {
	v := rep.Verdict
	if op, _ := st.Operation(r.planID); op.State != fsm.Applied {
		return Step{Kind: Wait, Result: Result{Verdict: v}, Err: errors.Newf(
			"APPLIED for plan %s was rejected at offset %d: %s: %s", r.planID, v.Offset, v.Reason, v.Detail)}
	}
	r.state = fsm.Applied
	return Step{Kind: Done, Result: Result{LogStart: r.seen, Verdict: v},
		Notes: say("applied", "APPLIED %s at control offset %d", r.planID, v.Offset)}
}

// misplaced blocks deletion for a COMMITTED that raised the boundary with a
// boundary above its own plan on a plan partition. No accepted raising
// commit of the full log has one (a plan below the boundary somewhere that
// raises another partition is a regression), so this log shows it ahead of
// a commit its writer had seen: compaction moved the other's copy past it,
// and in the full log it may have lost. Deleting on its word could remove
// records the true boundary protects.
func misplaced(op projector.Operation) error {
	if op.Covered {
		return nil
	}
	for _, p := range op.Plan.Offsets.Partitions() {
		if b := op.Boundary[p]; b > op.Plan.Offsets[p] {
			return errors.WithHint(errors.Mark(errors.Newf(
				"plan %s's COMMITTED raised the boundary, yet carries %s-%d=%d above its own plan's %d: the control topic shows it ahead of a commit its writer had seen (the log cleaner reordered them); nothing is deleted for it",
				op.PlanID, op.Plan.Topic, p, b, op.Plan.Offsets[p]), ErrBlocked),
				"read the control topic afresh (restart the worker); a fresh read that agrees with the full log finishes or drops the plan")
		}
	}
	return nil
}

// atRisk blocks deletion while the projection holds evidence that accepted
// history is missing or may be erased (projector.State.AtRisk): the log as
// read may then name another winner than the full log did, and a deletion
// on its word could remove records that the true boundary protects.
func atRisk(st *projector.State) error {
	if risk, why := st.AtRisk(); risk {
		return errors.WithHint(errors.Mark(errors.Newf("history at risk on the control topic: %s", why), ErrBlocked),
			"nothing is deleted until the control topic's history is whole again (kcleanup doctor says why); the committed boundary stays enforced")
	}
	return nil
}

func (r *Run) envelope(e events.Event) events.Envelope {
	return events.Envelope{SchemaVersion: events.SchemaVersion, Event: e, PlanID: r.planID, Plan: r.plan}
}

// acknowledged is an Append of a record written past the operator's
// acknowledgement (PLANNED and COMMITTED of a run that passed FirstPlanTombstones by --allow-tombstones).
func (r *Run) acknowledged(s Step) Step {
	s.Acknowledge = r.ack
	return s
}

func accepted(v projector.Verdict) bool {
	return v.Outcome == projector.Accepted || v.Outcome == projector.Duplicate
}

func say(step, format string, args ...any) []Progress {
	return []Progress{{Step: step, Message: fmt.Sprintf(format, args...)}}
}
