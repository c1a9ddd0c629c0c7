package worker

import (
	"context"
	"fmt"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/protocol"
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
// Adopt. It writes nothing. Every refusal is marked protocol.ErrRejected and says
// precisely why: the job's own fold or topic check fails, there is no plan,
// or a plan cannot be held by kcleanup (flinkagents.Plan.Kcleanup); never
// is a plan left out.
func (c *Cluster) PrepareAdoption(ctx context.Context, flinkTopic string) (*AdoptionSource, error) {
	ft, err := c.ReadFlinkTopic(ctx, flinkTopic)
	if err != nil {
		return nil, err
	}
	refuse := func(err error, hint string) (*AdoptionSource, error) {
		return nil, errors.Mark(errors.WithHint(errors.Wrapf(err, "adopt Flink Agents control topic %q: nothing written", flinkTopic), hint), protocol.ErrRejected)
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
	out := Adoption{FlinkTopic: src.Flink.Topic, FlinkEnd: src.Flink.End, ControlTopic: proj.Topic}
	// The decisions are protocol.NewAdopt's; this executes them.
	a := protocol.Adoption{FlinkTopic: src.Flink.Topic, DataTopic: src.DataTopic, TopicID: src.TopicID, Boundary: src.Boundary}
	flink := map[string]flinkagents.Operation{}
	for _, op := range src.Flink.Fold.Operations() {
		plan := src.plans[op.Plan.PlanID]
		flink[plan.PlanID] = op
		a.Plans = append(a.Plans, protocol.AdoptPlan{Plan: plan, Applied: op.Status == flinkagents.Applied, FlinkOffset: op.First})
	}
	o.Actor = o.actor() + " adopting " + src.Flink.Topic
	run := protocol.NewAdopt(a, c.config(proj, o))
	_, err := c.execute(ctx, proj, run, o)
	for _, ad := range run.Adopted() {
		op := flink[ad.PlanID]
		out.Plans = append(out.Plans, AdoptedPlan{PlanID: ad.PlanID, FlinkStatus: op.Status, FlinkOffset: op.Last, State: ad.State, Already: ad.Already})
	}
	out.Boundary = proj.State.Boundary()
	return out, err
}

// flinkHint is the operator's next step for a flinkagents error.
func flinkHint(err error) string {
	var fe *flinkagents.Error
	if errors.As(err, &fe) {
		return fe.Hint()
	}
	return fmt.Sprint("check the Flink Agents control topic")
}
