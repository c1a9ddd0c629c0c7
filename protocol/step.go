package protocol

import (
	"fmt"

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
	// Pause: nothing may be deleted before Step.Pause is over (the restore
	// grace, or a pin the broker's clock still holds); Step.Err says so
	// for people. An executor that can sleep reports back once it is over
	// (the zero Report) and the run goes on from a fresh catch-up; one that
	// must not (a worker) ends the run here and retries then
	// (OwnerRetry.After). Not Wait, which ends a run on a condition that
	// passes at no known time.
	Pause Kind = "pause"

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
	return []Kind{Describe, Permissions, Append, CatchUp, Recheck, Delete, Verify, Identify, Pause, Done, Wait, Blocked, Refused}
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
	// Maintenance and Reason, when set, go with an Append as its
	// maintenance headers (projector.HeaderMaintenance, HeaderReason): a
	// record the owner writes to repair the log, not a step of a plan.
	Maintenance, Reason string
	// Acknowledge is what the operator acknowledged to get this record
	// written (--allow-tombstones): the executor appends it to the
	// record's actor, so that history shows it.
	Acknowledge string
	// Pause is what a Pause step waits for; a Blocked step held by a pin
	// with no judgeable expiry, and the Wait of a run that paused
	// MaxPauses times, carry it too.
	Pause *Paused
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
	modeRecommit
	modeAdopt
	modePin
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
	phasePaused
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
	// adopt is the state of an adopt run (step_adopt.go).
	adopt *adoptRun
	// pin is the PINNED a pin run appends (step_pin.go).
	pin events.Envelope
	// paused is the Pause step the executor sleeps through; pauses counts
	// them (pause.go).
	paused Step
	pauses int
	// governed: the one-governor rule was decided (Config.Governors).
	governed bool
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
	var s Step
	if g := r.cfg.Governors; g != nil && !r.governed {
		// Before anything is read or written: another control topic
		// governing the incarnation refuses every write here.
		r.governed = true
		if err := GovernedElsewhere(st, r.cfg.ControlTopic, *g, r.cfg.Bootstrap); err != nil {
			s = Step{Kind: Refused, Err: err}
		}
	}
	if s.Kind == "" {
		s = r.next(st, rep)
	}
	if s.Kind == Pause {
		s.Result.State = r.state
		r.phase, r.paused = phasePaused, s
	}
	if s.Kind.Terminal() {
		s.Result.State = r.state
		r.phase, r.end = phaseEnded, s
	}
	return s
}

func (r *Run) next(st *projector.State, rep Report) Step {
	if r.phase == phasePaused {
		if rep.Err != nil {
			return r.failed(rep)
		}
		return r.resume(r.paused.Pause)
	}
	switch r.mode {
	case modeRecommit:
		return r.recommitNext(st, rep)
	case modeAdopt:
		return r.adoptNext(st, rep)
	case modePin:
		return r.pinNext(st, rep)
	}
	// Every report that carries a failure of the request as a whole ends the
	// run: retrying at once would repeat what just failed.
	// One that cannot pass on a retry (access denied, refused credentials)
	// blocks instead.
	if r.phase != phaseStart && rep.Err != nil && !rep.Missing {
		return r.failed(rep)
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

// failed is how a run ends on a report of a request that failed as a whole:
// retrying at once would repeat what just failed; one that cannot pass on a
// retry (access denied, refused credentials) blocks instead.
func (r *Run) failed(rep Report) Step {
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
