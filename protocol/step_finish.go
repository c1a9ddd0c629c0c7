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

// The finishing phases (finish, and apply without --no-wait): from a
// COMMITTED read back to APPLIED, DELETING, DeleteRecords and the check.

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
	return Step{Kind: Recheck, Topic: r.plan.Topic, ScanFrom: TombstoneScanFrom(st, r.plan.Topic, r.plan.TopicID, st.Boundary())}
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
	// A no-tombstones declaration in force stands in for the partitions it covers.
	scan := Declared(st, r.plan.Topic, r.plan.TopicID, st.Boundary(), rep.Tombstones)
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
		need := TombstoneNeeds(st, r.plan, st.Boundary(), FinishNeeds(r.cfg.ControlTopic, r.plan.Topic))
		return Step{Kind: Permissions, Need: withMirrorNeeds(st, need, true), Topic: r.plan.Topic}
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
	return Step{Kind: Recheck, Topic: r.plan.Topic, ScanFrom: TombstoneScanFrom(st, r.plan.Topic, r.plan.TopicID, st.Boundary()), Notes: say("deleting", "DELETING %s at control offset %d", r.planID, v.Offset)}
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
