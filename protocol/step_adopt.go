package protocol

import (
	"slices"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
)

// The adopt mode: a kcleanup control topic takes over the plans of a Flink
// Agents control topic. The run and its steps are in step.go; reading and
// checking the Flink Agents topic is the executor's (worker.PrepareAdoption).

// Adoption is what the executor learned of a Flink Agents control topic
// that passed every check adoption needs.
type Adoption struct {
	// FlinkTopic is the Flink Agents control topic.
	FlinkTopic string
	// DataTopic and TopicID are the live data topic the plans are for.
	DataTopic, TopicID string
	// Plans are every plan the job enforces, as kcleanup holds them.
	Plans []AdoptPlan
	// Boundary is the job's effective boundary on the live topic.
	Boundary events.Offsets
}

// AdoptPlan is one plan of the Flink Agents control topic.
type AdoptPlan struct {
	Plan events.Plan
	// Applied: the Flink Agents tool recorded it APPLIED.
	Applied bool
	// FlinkOffset is its first record on the Flink Agents control topic, for messages.
	FlinkOffset int64
}

// Adopted is where one plan stood after an adopt run.
type Adopted struct {
	PlanID string
	// Already: the kcleanup control topic held it COMMITTED or later before the run.
	Already bool
	State   fsm.State
}

// NewAdopt makes every plan the job enforces a COMMITTED plan of the
// control topic, with its own ID, in ascending order; a plan the Flink
// Agents tool APPLIED is also APPLIED when the live log starts (a Verify
// step) prove the deletion, else it stays COMMITTED and a worker finishes
// it. Afterwards kcleanup's boundary equals the job's. It is Refused,
// writing nothing, when the control topic is the Flink Agents one, governs
// another topic or already holds plans that are not the Flink Agents
// topic's. Run again, it adopts only what is missing.
func NewAdopt(a Adoption, cfg Config) *Run {
	order := slices.Clone(a.Plans)
	// Ascending order: the plans are pairwise comparable (the job's fold
	// checked), so this order raises the boundary one plan at a time.
	slices.SortStableFunc(order, func(x, y AdoptPlan) int {
		for _, p := range x.Plan.Offsets.Partitions() {
			if u, v := x.Plan.Offsets[p], y.Plan.Offsets[p]; u != v {
				if u < v {
					return -1
				}
				return 1
			}
		}
		return 0
	})
	a.Plans = order
	return &Run{mode: modeAdopt, cfg: cfg, adopt: &adoptRun{Adoption: a}}
}

// adoptRun is the state of an adopt run: which plan it is at, the log
// starts once listed, and what became of each plan.
type adoptRun struct {
	Adoption
	at      int
	starts  events.Offsets
	adopted []Adopted
}

// Adopted lists, in the order adopted, where each plan stood after the run.
func (r *Run) Adopted() []Adopted {
	if r.adopt == nil {
		return nil
	}
	return r.adopt.adopted
}

func (r *Run) adoptNext(st *projector.State, rep Report) Step {
	a := r.adopt
	if r.phase != phaseStart && rep.Err != nil {
		return r.failed(rep)
	}
	switch r.phase {
	case phaseStart:
		if err := AdoptRefusal(st, r.cfg.ControlTopic, a.Adoption); err != nil {
			return Step{Kind: Refused, Err: err}
		}
		return r.adoptPlan(st, nil)
	case phaseCommitted:
		p := a.Plans[a.at].Plan
		if op, _ := st.Operation(p.PlanID); op.State != fsm.Committed {
			v := rep.Verdict
			return Step{Kind: Refused, Result: Result{Verdict: v}, Err: errors.Newf(
				"COMMITTED for adopted plan %s was rejected at offset %d: %s: %s", p.PlanID, v.Offset, v.Reason, v.Detail)}
		}
		return r.adoptApplied(st, say("committed", "COMMITTED %s (from %s offset %d) at control offset %d",
			p.PlanID, a.FlinkTopic, a.Plans[a.at].FlinkOffset, rep.Verdict.Offset))
	case phaseVerified:
		a.starts = rep.Starts
		return r.adoptApplied(st, nil)
	case phaseApplied:
		p := a.Plans[a.at].Plan
		if op, _ := st.Operation(p.PlanID); op.State != fsm.Applied {
			v := rep.Verdict
			return Step{Kind: Refused, Result: Result{Verdict: v}, Err: errors.Newf(
				"APPLIED for adopted plan %s was rejected at offset %d: %s: %s", p.PlanID, v.Offset, v.Reason, v.Detail)}
		}
		return r.adoptNextPlan(st, say("applied", "APPLIED %s: every log start of %s is at or above it", p.PlanID, a.DataTopic))
	}
	return Step{Kind: Wait, Err: errors.AssertionFailedf("protocol: adopt run in unknown phase %d", r.phase)}
}

// adoptPlan: the COMMITTED of the plan at a.at, unless the log holds it.
func (r *Run) adoptPlan(st *projector.State, notes []Progress) Step {
	a := r.adopt
	if a.at == len(a.Plans) {
		if b := st.Boundary(); !b.Equal(a.Boundary) {
			// Cannot happen while the fold rules hold; never report success on it.
			return Step{Kind: Blocked, Notes: notes, Err: errors.Mark(errors.Newf(
				"after adoption the kcleanup boundary is %s but Flink Agents' effective boundary is %s", b, a.Boundary), ErrBlocked)}
		}
		return Step{Kind: Done, Notes: notes}
	}
	p := a.Plans[a.at].Plan
	op, _ := st.Operation(p.PlanID)
	already := op.State == fsm.Committed || op.State == fsm.Deleting || op.State == fsm.Applied
	a.adopted = append(a.adopted, Adopted{PlanID: p.PlanID, Already: already, State: op.State})
	if already {
		return r.adoptApplied(st, notes)
	}
	env := events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Committed, PlanID: p.PlanID, Plan: p,
		Boundary: CommitBoundary(st, p)}
	r.phase = phaseCommitted
	return Step{Kind: Append, Record: env, Notes: notes}
}

// adoptApplied: APPLIED for a plan the Flink Agents tool applied, when the
// live log starts prove the deletion.
func (r *Run) adoptApplied(st *projector.State, notes []Progress) Step {
	a := r.adopt
	ap := a.Plans[a.at]
	if op, _ := st.Operation(ap.Plan.PlanID); !ap.Applied || op.State == fsm.Applied {
		return r.adoptNextPlan(st, notes)
	}
	if a.starts == nil {
		r.phase = phaseVerified
		return Step{Kind: Verify, Topic: a.DataTopic, Notes: notes}
	}
	seen := events.Offsets{}
	for p, off := range ap.Plan.Offsets {
		seen[p] = a.starts[p]
		if a.starts[p] < off {
			notes = append(notes, say("committed", "plan %s is APPLIED on %s but a log start of %s is below it now: left COMMITTED, a worker deletes up to it",
				ap.Plan.PlanID, a.FlinkTopic, a.DataTopic)...)
			return r.adoptNextPlan(st, notes)
		}
	}
	env := events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Applied, PlanID: ap.Plan.PlanID, Plan: ap.Plan, LogStart: seen}
	r.phase = phaseApplied
	return Step{Kind: Append, Record: env, Notes: notes}
}

// adoptNextPlan records where the plan at a.at stands and moves to the next.
func (r *Run) adoptNextPlan(st *projector.State, notes []Progress) Step {
	a := r.adopt
	op, _ := st.Operation(a.Plans[a.at].Plan.PlanID)
	a.adopted[len(a.adopted)-1].State = op.State
	a.at++
	return r.adoptPlan(st, notes)
}

// AdoptRefusal is why the control topic cannot adopt a's plans, marked
// ErrRejected and saying nothing was written; nil when it can.
func AdoptRefusal(st *projector.State, controlTopic string, a Adoption) error {
	refuse := func(err error, hint string) error {
		return errors.Mark(errors.WithHint(errors.Wrapf(err, "adopt Flink Agents control topic %q: nothing written", a.FlinkTopic), hint), ErrRejected)
	}
	if a.FlinkTopic == controlTopic {
		return refuse(errors.Newf("the Flink Agents control topic and the kcleanup control topic are both %q", a.FlinkTopic),
			"adopt into a kcleanup control topic of its own: kcleanup adopt --from "+a.FlinkTopic+" --control-topic <new name>")
	}
	if err := Degraded(st, controlTopic); err != nil {
		return err
	}
	if topic, id, ok := st.Binding(); ok && (topic != a.DataTopic || id != a.TopicID) {
		return refuse(errors.Newf("kcleanup control topic %q governs %s (topic ID %s), the Flink Agents plans are for %s (topic ID %s)", controlTopic, topic, id, a.DataTopic, a.TopicID),
			"adopt into a kcleanup control topic of its own: kcleanup init --topic "+a.DataTopic+" --control-topic <new name>")
	}
	var foreign []string
	for _, kop := range st.Operations() {
		if !slices.ContainsFunc(a.Plans, func(p AdoptPlan) bool { return p.Plan.PlanID == kop.PlanID }) {
			foreign = append(foreign, kop.PlanID)
		}
	}
	if len(foreign) > 0 {
		return refuse(errors.Newf("kcleanup control topic %q already holds %d plan(s) that are not on the Flink Agents control topic (%s)", controlTopic, len(foreign), strings.Join(foreign, ", ")),
			"adopt into a new kcleanup control topic: kcleanup init --topic "+a.DataTopic+" --control-topic <new name>")
	}
	return nil
}
