package worker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
)

// AdoptedPlan is one plan of a Flink Agents control topic and what adoption
// did with it.
type AdoptedPlan struct {
	PlanID string `json:"planId"`
	// FlinkStatus and FlinkOffset: its status and latest record on the
	// Flink Agents control topic.
	FlinkStatus flinkagents.Status `json:"flinkStatus"`
	FlinkOffset int64              `json:"flinkOffset"`
	// State is the plan's state on the kcleanup control topic afterwards.
	State fsm.State `json:"state"`
	// Already: the kcleanup control topic held it before this run.
	Already bool `json:"already"`
}

// Adoption is the outcome of Adopt.
type Adoption struct {
	FlinkTopic string `json:"flinkTopic"`
	// FlinkEnd is the Flink Agents control topic's end offset read to.
	FlinkEnd     int64  `json:"flinkEnd"`
	ControlTopic string `json:"controlTopic"`
	// Plans in the order adopted (ascending boundaries).
	Plans []AdoptedPlan `json:"plans"`
	// Boundary is the kcleanup boundary afterwards: Flink Agents' effective
	// boundary.
	Boundary events.Offsets `json:"boundary"`
}

// AdoptionSource is a Flink Agents control topic that passed every check
// adoption needs: read as the job reads it, its fold valid for the live
// data topic, and every plan one kcleanup can hold with its ID.
type AdoptionSource struct {
	Flink *FlinkTopic
	// DataTopic and TopicID are the live data topic the plans are for.
	DataTopic, TopicID string
	// Boundary is the job's effective boundary on the live topic.
	Boundary events.Offsets
	plans    map[string]events.Plan
}

// PrepareAdoption reads a Flink Agents control topic and checks it for
// Adopt. It writes nothing. Every refusal is marked ErrRejected and says
// precisely why: the job's own fold or topic check fails, there is no plan,
// or a plan cannot be held by kcleanup (flinkagents.Plan.Kcleanup); never
// is a plan left out.
func (c *Cluster) PrepareAdoption(ctx context.Context, flinkTopic string) (*AdoptionSource, error) {
	ft, err := c.ReadFlinkTopic(ctx, flinkTopic)
	if err != nil {
		return nil, err
	}
	refuse := func(err error, hint string) (*AdoptionSource, error) {
		return nil, errors.Mark(errors.WithHint(errors.Wrapf(err, "adopt Flink Agents control topic %q: nothing written", flinkTopic), hint), ErrRejected)
	}
	if err := ft.Check(); err != nil {
		return refuse(err, flinkHint(err))
	}
	ops := ft.Fold.Operations()
	if len(ops) == 0 {
		return refuse(errors.New("it holds no plan"), "there is nothing to adopt: make and apply plans with kcleanup directly")
	}
	src := &AdoptionSource{Flink: ft, DataTopic: ops[0].Plan.Topic, plans: map[string]events.Plan{}}
	live, err := c.TopicMetadata(ctx, src.DataTopic)
	if err != nil {
		return refuse(err, "adoption needs the data topic the plans are for")
	}
	src.TopicID = live.ID
	// What the job enforces on the live topic: the same fold, checked
	// against the live topic ID and partitions, as its recovery checks it.
	if src.Boundary, err = ft.Fold.Boundary(src.DataTopic, live.ID, live.Partitions); err != nil {
		return refuse(err, flinkHint(err))
	}
	for _, op := range ops {
		kp, err := op.Plan.Kcleanup()
		if err != nil {
			return refuse(err, "kcleanup cannot hold this plan with its ID, and every plan the job enforces must be adopted, so none is: keep Flink Agents' tool for this topic")
		}
		src.plans[kp.PlanID] = kp
	}
	return src, nil
}

// Adopt starts (or completes) a kcleanup control topic from a prepared
// Flink Agents one: every plan the job enforces becomes a COMMITTED plan on
// proj's control topic, with its own ID, in ascending order, and a plan the
// Flink Agents tool APPLIED is also APPLIED when the live log starts prove
// the deletion (else it stays COMMITTED and a worker finishes it).
// Afterwards kcleanup's boundary equals the job's effective boundary. It
// refuses, writing nothing, when the kcleanup control topic governs
// another topic or already holds plans that are not the Flink Agents
// topic's. Re-running it adopts only what is missing.
func (c *Cluster) Adopt(ctx context.Context, src *AdoptionSource, proj *Projection, o Options) (Adoption, error) {
	flinkTopic, data := src.Flink.Topic, src.DataTopic
	out := Adoption{FlinkTopic: flinkTopic, FlinkEnd: src.Flink.End, ControlTopic: proj.Topic}
	refuse := func(err error, hint string) (Adoption, error) {
		return out, errors.Mark(errors.WithHint(errors.Wrapf(err, "adopt Flink Agents control topic %q: nothing written", flinkTopic), hint), ErrRejected)
	}
	if flinkTopic == proj.Topic {
		return refuse(errors.Newf("the Flink Agents control topic and the kcleanup control topic are both %q", flinkTopic),
			"adopt into a kcleanup control topic of its own: kcleanup adopt --from "+flinkTopic+" --control-topic <new name>")
	}
	ops := src.Flink.Fold.Operations()
	flinkBoundary := src.Boundary
	if err := degraded(proj); err != nil {
		return out, err
	}
	if topic, id, ok := proj.State.Binding(); ok && (topic != data || id != src.TopicID) {
		return refuse(errors.Newf("kcleanup control topic %q governs %s (topic ID %s), the Flink Agents plans are for %s (topic ID %s)", proj.Topic, topic, id, data, src.TopicID),
			"adopt into a kcleanup control topic of its own: kcleanup init --topic "+data+" --control-topic <new name>")
	}
	var foreign []string
	for _, kop := range proj.State.Operations() {
		if _, ok := src.plans[kop.PlanID]; !ok {
			foreign = append(foreign, kop.PlanID)
		}
	}
	if len(foreign) > 0 {
		return refuse(errors.Newf("kcleanup control topic %q already holds %d plan(s) that are not on the Flink Agents control topic (%s)", proj.Topic, len(foreign), strings.Join(foreign, ", ")),
			"adopt into a new kcleanup control topic: kcleanup init --topic "+data+" --control-topic <new name>")
	}

	// Ascending order: the plans are pairwise comparable (the fold checked),
	// so this order raises the boundary one plan at a time.
	order := slices.Clone(ops)
	slices.SortStableFunc(order, func(a, b flinkagents.Operation) int {
		for _, p := range a.Plan.Offsets.Partitions() {
			if x, y := a.Plan.Offsets[p], b.Plan.Offsets[p]; x != y {
				if x < y {
					return -1
				}
				return 1
			}
		}
		return 0
	})
	actor := o.actor() + " adopting " + flinkTopic
	var starts events.Offsets
	for _, op := range order {
		plan := src.plans[op.Plan.PlanID]
		ap := AdoptedPlan{PlanID: plan.PlanID, FlinkStatus: op.Status, FlinkOffset: op.Last}
		kop, _ := proj.State.Operation(plan.PlanID)
		ap.Already = kop.State == fsm.Committed || kop.State == fsm.Deleting || kop.State == fsm.Applied
		if !ap.Already {
			env := adoptEnvelope(events.Committed, plan, actor)
			env.Boundary = proj.State.Boundary()
			for p, off := range plan.Offsets {
				env.Boundary[p] = max(env.Boundary[p], off)
			}
			v, err := proj.Decide(ctx, env)
			if err != nil {
				return out, err
			}
			if st, _ := proj.State.Operation(plan.PlanID); st.State != fsm.Committed {
				return out, errors.Newf("COMMITTED for adopted plan %s was rejected at offset %d: %s: %s", plan.PlanID, v.Offset, v.Reason, v.Detail)
			}
			o.say("committed", "COMMITTED %s (from %s offset %d) at control offset %d", plan.PlanID, flinkTopic, op.First, v.Offset)
		}
		kop, _ = proj.State.Operation(plan.PlanID)
		if op.Status == flinkagents.Applied && kop.State != fsm.Applied {
			if starts == nil {
				var err error
				if starts, err = c.StartOffsets(ctx, data); err != nil {
					return out, err
				}
			}
			seen, ok := events.Offsets{}, true
			for p, off := range plan.Offsets {
				seen[p] = starts[p]
				ok = ok && starts[p] >= off
			}
			if ok {
				env := adoptEnvelope(events.Applied, plan, actor)
				env.LogStart = seen
				v, err := proj.Decide(ctx, env)
				if err != nil {
					return out, err
				}
				if st, _ := proj.State.Operation(plan.PlanID); st.State != fsm.Applied {
					return out, errors.Newf("APPLIED for adopted plan %s was rejected at offset %d: %s: %s", plan.PlanID, v.Offset, v.Reason, v.Detail)
				}
				o.say("applied", "APPLIED %s: every log start of %s is at or above it", plan.PlanID, data)
			} else {
				o.say("committed", "plan %s is APPLIED on %s but a log start of %s is below it now: left COMMITTED, a worker deletes up to it", plan.PlanID, flinkTopic, data)
			}
		}
		kop, _ = proj.State.Operation(plan.PlanID)
		ap.State = kop.State
		out.Plans = append(out.Plans, ap)
	}
	out.Boundary = proj.State.Boundary()
	if !out.Boundary.Equal(flinkBoundary) {
		// Cannot happen while the fold rules hold; never report success on it.
		return out, errors.Newf("after adoption the kcleanup boundary is %s but Flink Agents' effective boundary is %s", out.Boundary, flinkBoundary)
	}
	return out, nil
}

func adoptEnvelope(e events.Event, plan events.Plan, actor string) events.Envelope {
	return events.Envelope{SchemaVersion: events.SchemaVersion, Event: e, PlanID: plan.PlanID, Plan: plan,
		At: time.Now().UTC(), Actor: actor}
}

// flinkHint is the operator's next step for a flinkagents error.
func flinkHint(err error) string {
	var fe *flinkagents.Error
	if errors.As(err, &fe) {
		return fe.Hint()
	}
	return fmt.Sprint("check the Flink Agents control topic")
}
