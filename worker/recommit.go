package worker

import (
	"context"
	"fmt"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
)

// Recommit is the one repair a worker makes for an operation whose
// COMMITTED was erased while its DELETING or APPLIED survives
// (projector.State.Unconfirmed): it appends a COMMITTED again, but only
// where nothing more would be deleted. The live data topic must have the
// plan's topic ID (uncached Metadata) and a log start at or above the plan
// on every plan partition; then the deletion the surviving records announce
// has happened, the COMMITTED (its boundary field from the projection's
// Boundary, so it carries the plan) restores what the log lost, and the
// operation is finished like any other with nothing left to delete.
// Anything else is left to the operator: a DELETING may be forged, and a
// forged DELETING must never cause a deletion.
//
// It returns one line per unconfirmed operation, saying what was done or
// why not; an error only when the control topic could not be written or
// read back.
func (c *Cluster) Recommit(ctx context.Context, proj *Projection, o Options) ([]string, error) {
	var out []string
	for _, op := range proj.State.Unconfirmed() {
		why, err := c.recommitSafe(ctx, op.Plan)
		if err != nil {
			out = append(out, fmt.Sprintf("plan %s: COMMITTED erased; cannot check the data topic now: %v", op.PlanID, err))
			continue
		}
		if why != "" {
			out = append(out, fmt.Sprintf("plan %s: COMMITTED erased; not re-appended: %s", op.PlanID, why))
			continue
		}
		env := envelope(events.Committed, op.Plan, o)
		env.Boundary = protocol.CommitBoundary(proj.State, op.Plan)
		v, err := proj.Decide(ctx, env, proj.maintenanceHeaders(projector.MaintenanceRecommit,
			"re-appends the COMMITTED the log cleaner erased; its DELETING or APPLIED survive and every log start is at or above the plan")...)
		if err != nil {
			return out, err
		}
		if now, _ := proj.State.Operation(op.PlanID); now.State == fsm.Planned {
			out = append(out, fmt.Sprintf("plan %s: COMMITTED erased; the re-appended COMMITTED at offset %d was %s %s: %s",
				op.PlanID, v.Offset, v.Outcome, v.Reason, v.Detail))
			continue
		}
		out = append(out, fmt.Sprintf("plan %s: COMMITTED erased; re-appended at offset %d (every log start of %s is at or above the plan: nothing more is deleted)",
			op.PlanID, v.Offset, op.Plan.Topic))
	}
	return out, nil
}

// recommitSafe returns "" when re-committing plan deletes nothing more,
// else why not.
func (c *Cluster) recommitSafe(ctx context.Context, plan events.Plan) (string, error) {
	info, err := c.TopicMetadata(ctx, plan.Topic)
	if errors.Is(err, ErrTopicNotFound) {
		return fmt.Sprintf("topic %s does not exist", plan.Topic), nil
	}
	if err != nil {
		return "", err
	}
	if info.ID != plan.TopicID {
		return fmt.Sprintf("topic %s now has ID %s, not the plan's %s", plan.Topic, info.ID, plan.TopicID), nil
	}
	start, err := c.StartOffsets(ctx, plan.Topic)
	if err != nil {
		return "", err
	}
	for _, p := range plan.Offsets.Partitions() {
		if start[p] < plan.Offsets[p] {
			return fmt.Sprintf("%s-%d has log start %d, below the plan's %d: re-committing would delete records; check the plan, then re-apply it with kcleanup apply or plan above it",
				plan.Topic, p, start[p], plan.Offsets[p]), nil
		}
	}
	return "", nil
}
