package protocol

import (
	"fmt"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
)

// The recommit mode: the one repair a worker makes for an operation whose
// COMMITTED the log cleaner erased while its DELETING or APPLIED survives
// (projector.State.Unconfirmed). The run and its steps are in step.go.

// ErrNotRecommitted marks the end of a recommit run that appended nothing:
// the data topic could not be checked, or re-committing would delete more
// (marked ErrBlocked too: a DELETING may be forged, so an operator decides).
var ErrNotRecommitted = errors.New("erased COMMITTED not re-appended")

// RecommitReason is the reason a recommit's COMMITTED carries in its
// maintenance header.
const RecommitReason = "re-appends the COMMITTED the log cleaner erased; its DELETING or APPLIED survive and every log start is at or above the plan"

// NewRecommit re-appends plan's COMMITTED, but only where nothing more
// would be deleted: the live data topic has the plan's topic ID and a log
// start at or above the plan on every plan partition. Then the deletion the
// surviving records announce has happened, and the COMMITTED (its boundary
// CommitBoundary's) restores what the log lost. It ends Done when the
// COMMITTED was accepted, Refused when the fold rejected it, Wait when a
// request failed, and marked ErrNotRecommitted when it appended nothing.
func NewRecommit(plan events.Plan, cfg Config) *Run {
	return &Run{mode: modeRecommit, cfg: cfg, plan: plan, planID: plan.PlanID}
}

// recommitNext is next for the recommit mode: Describe, then the COMMITTED.
func (r *Run) recommitNext(st *projector.State, rep Report) Step {
	switch r.phase {
	case phaseStart:
		op, _ := st.Operation(r.planID)
		r.state = op.State
		r.phase = phaseDescribed
		return Step{Kind: Describe, Topic: r.plan.Topic}
	case phaseDescribed:
		if rep.Err != nil && !rep.Missing {
			return Step{Kind: Wait, Err: errors.Mark(errors.Wrap(rep.Err, "cannot check the data topic now"), ErrNotRecommitted)}
		}
		if why := RecommitRefusal(r.plan, rep.Topic, rep.Missing); why != "" {
			return Step{Kind: Blocked, Err: errors.Mark(errors.Mark(errors.Newf("not re-appended: %s", why), ErrNotRecommitted), ErrBlocked)}
		}
		env := r.envelope(events.Committed)
		env.Boundary = CommitBoundary(st, r.plan)
		r.phase = phaseCommitted
		return Step{Kind: Append, Record: env, Maintenance: projector.MaintenanceRecommit, Reason: RecommitReason}
	case phaseCommitted:
		if rep.Err != nil {
			return Step{Kind: Wait, Err: rep.Err}
		}
		v := rep.Verdict
		op, _ := st.Operation(r.planID)
		r.state = op.State
		if op.State == fsm.Planned {
			return Step{Kind: Refused, Result: Result{Verdict: v}, Err: errors.Mark(errors.Newf(
				"the re-appended COMMITTED at offset %d was %s %s: %s", v.Offset, v.Outcome, v.Reason, v.Detail), ErrCommitRejected)}
		}
		return Step{Kind: Done, Result: Result{Verdict: v}}
	}
	return Step{Kind: Wait, Err: errors.AssertionFailedf("protocol: recommit run in unknown phase %d", r.phase)}
}

// RecommitRefusal is "" when re-committing plan deletes nothing more on the
// live topic (missing: it does not exist), else why not.
func RecommitRefusal(plan events.Plan, live Topic, missing bool) string {
	if missing {
		return fmt.Sprintf("topic %s does not exist", plan.Topic)
	}
	if live.ID != plan.TopicID {
		return fmt.Sprintf("topic %s now has ID %s, not the plan's %s", plan.Topic, live.ID, plan.TopicID)
	}
	for _, p := range plan.Offsets.Partitions() {
		if live.Start[p] < plan.Offsets[p] {
			return fmt.Sprintf("%s-%d has log start %d, below the plan's %d: re-committing would delete records; check the plan, then re-apply it with kcleanup apply or plan above it",
				plan.Topic, p, live.Start[p], plan.Offsets[p])
		}
	}
	return ""
}
