package protocol

import (
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
)

// PinRefusal is why a COMMITTED of plan stamped at now would be rejected by
// a pin (projector rule P4), nil when none protects what it would condemn.
// apply and submit ask it before writing anything, and again right before
// COMMITTED, so that the refusal names the pin and how to unpin it instead
// of a rejected record on the log. A zero now judges every pin that has
// not been unpinned as active: refusing is the safe side.
func PinRefusal(st *projector.State, plan events.Plan, now time.Time, controlTopic string) error {
	if now.IsZero() {
		now = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC) // before every expiry
	}
	pin, part, above := st.PinAbove(plan, now)
	if !above {
		return nil
	}
	expiry := "it has no expiry"
	if !pin.Expires.IsZero() {
		expiry = "it expires at " + pin.Expires.Format(time.RFC3339)
	}
	return errors.WithHint(errors.Mark(errors.Mark(errors.Newf(
		"plan %s is above pin %s on partition %d (plan offset %d, pinned offset %d): recovery point %s is pinned at control offset %d by %s (%s); %s",
		plan.PlanID, pin.PinID, part, plan.Offsets[part], pin.Offsets[part], pin.RecoveryPoint, pin.Offset, pin.Actor, pin.Reason, expiry), ErrPinned), ErrRejected),
		"no COMMITTED was written; "+pinAdvice(pin, controlTopic))
}

// PinRejection words a COMMITTED that was written and that the log rejected as `pinned` (a pin
// landed between the checks and the commit): unlike PinRefusal, a record was written, so it
// says so, and that it changed nothing (the boundary is as before, nothing is deleted for the
// plan; the workers retract the rejected record). nil when no pin explains it.
func PinRejection(st *projector.State, plan events.Plan, v projector.Verdict, controlTopic string) error {
	pin, part, above := st.PinAbove(plan, v.At)
	if !above {
		return nil
	}
	return errors.WithHint(errors.Mark(errors.Mark(errors.Mark(errors.Newf(
		"COMMITTED for plan %s was written at control offset %d and rejected by the log (reason %s): pin %s of recovery point %s (partition %d, pinned offset %d, plan offset %d), by %s (%s), landed at control offset %d first",
		plan.PlanID, v.Offset, projector.ReasonPinned, pin.PinID, pin.RecoveryPoint, part, pin.Offsets[part], plan.Offsets[part], pin.Actor, pin.Reason, pin.Offset), ErrPinned), ErrCommitRejected), ErrRejected),
		"the rejected COMMITTED changed nothing: the boundary is as before, nothing was deleted, and the workers retract the record; the plan stays PLANNED; "+pinAdvice(pin, controlTopic))
}

func pinAdvice(pin projector.Pin, controlTopic string) string {
	return "plan from a recovery point at or below the pin, wait for the pin to expire, or, once the pinned recovery point is no longer needed: " + pin.UnpinCommand(controlTopic)
}

// pinnedDeletion is the last check before DELETING and before
// DeleteRecords: no deletion above a pin that protected the plan when its
// COMMITTED was written. The log never accepts such a commit (P4), so this
// refuses only on a view that disagrees with the log's order; it blocks
// rather than deletes.
func pinnedDeletion(st *projector.State, op projector.Operation, controlTopic string) error {
	if op.State != fsm.Committed && op.State != fsm.Deleting {
		return nil
	}
	var at time.Time
	for _, s := range op.History {
		if s.Event == events.Committed {
			at = s.At
			break
		}
	}
	if at.IsZero() {
		return nil
	}
	for _, pin := range st.Pins() {
		if pin.Offset > committedOffset(op) {
			continue // landed after the commit: void on what it condemned (P5)
		}
		if part, above := pin.Above(op.Plan, at); above {
			return errors.WithHint(errors.Mark(errors.Newf(
				"plan %s is above pin %s on partition %d, which the log holds before its COMMITTED: this view disagrees with the log's order; nothing is deleted",
				op.PlanID, pin.PinID, part), ErrBlocked),
				"read the control topic afresh (restart the worker); kcleanup doctor --control-topic "+controlTopic+" says what it sees")
		}
	}
	return nil
}

func committedOffset(op projector.Operation) int64 {
	for _, s := range op.History {
		if s.Event == events.Committed {
			return s.Offset
		}
	}
	return -1
}
