package protocol

import (
	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
)

// The modes up to COMMITTED (apply, submit, preflight): the checks, PLANNED and
// COMMITTED. The run and its steps are in step.go; the finishing phases, in step_finish.go.

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
	// A no-tombstones declaration in force spares the partitions it covers (TombstoneScanFrom).
	return Step{Kind: Describe, Topic: r.plan.Topic, ScanFrom: TombstoneScanFrom(st, r.plan.Topic, r.plan.TopicID, CommitScanFrom(st, r.plan))}
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
		need := TombstoneNeeds(st, r.plan, CommitBoundary(st, r.plan), ApplyNeeds(r.cfg.ControlTopic, r.plan.Topic, r.cfg.NoWait))
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
