package worker

import (
	"context"
	"fmt"

	"github.com/cockroachdb/errors"

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
		// The decision is protocol.NewRecommit's; this executes it.
		res, err := c.execute(ctx, proj, protocol.NewRecommit(op.Plan, c.config(proj, o)), o)
		line := fmt.Sprintf("plan %s: COMMITTED erased; ", op.PlanID)
		switch {
		case err == nil:
			line += fmt.Sprintf("re-appended at offset %d (every log start of %s is at or above the plan: nothing more is deleted)", res.verdict.Offset, op.Plan.Topic)
		case errors.Is(err, protocol.ErrNotRecommitted), errors.Is(err, protocol.ErrCommitRejected):
			line += err.Error()
		default:
			return out, err
		}
		out = append(out, line)
	}
	return out, nil
}
