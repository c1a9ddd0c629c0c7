package worker

import (
	"context"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/gate"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
)

// Preview computes what applying plan would do (report.Preview). It reads
// the data topic and the control topic, runs apply's governance check (a
// missing control topic, or another governing the topic, refuses) and
// Preflight; it writes nothing. An error means the preview could not be
// computed (the cluster did not answer); a plan that apply would refuse, a
// plan of a topic that does not exist too, is reported in Preview.Refusal
// instead.
func (c *Cluster) Preview(ctx context.Context, controlTopic string, plan events.Plan, o Options) (report.Preview, error) {
	pv := report.Preview{ControlTopic: controlTopic, Partitions: []report.PartitionPreview{}}
	proj, exists, err := c.projectIfExists(ctx, controlTopic)
	if err != nil {
		return pv, err
	}
	if exists {
		defer proj.Close()
	}
	pv.ControlTopicExists = exists
	info, err := c.DescribeTopic(ctx, plan.Topic)
	if errors.Is(err, ErrTopicNotFound) {
		// A verdict on the plan, not a preview that failed: apply refuses a plan whose topic
		// does not exist, in the words Preflight gives.
		if pv.Refusal = c.Preflight(ctx, proj, plan, o); pv.Refusal == nil {
			pv.Refusal = errors.Mark(err, protocol.ErrRejected) // created since DescribeTopic: look again
		}
		return pv, nil
	}
	if err != nil {
		return pv, err
	}
	pv.Partitions = report.PartitionsPreview(plan, info, proj.State)
	// apply's first check: the control topic exists and no other governs the topic (the
	// Preflight run decides it on the fact gathered here, as apply's run does).
	if !exists {
		pv.Refusal = c.OneGovernor(ctx, protocol.Governance{Self: controlTopic, Topic: plan.Topic, TopicID: plan.TopicID}, o.Bootstrap)
	} else {
		o.Governors, pv.Refusal = c.Governors(ctx, proj, plan.Topic, plan.TopicID)
	}
	if pv.Refusal == nil {
		pv.Refusal = c.Preflight(ctx, proj, plan, o)
	}
	if pv.Refusal != nil && ctx.Err() != nil {
		// Not a verdict on the plan: the cluster stopped answering.
		return pv, pv.Refusal
	}
	if pv.Refusal != nil {
		report.RefuseWhole(pv.Partitions, pv.Refusal.Error())
	}
	return pv, nil
}

// PrepareControlTopic readies the control topic for submitting or applying
// plan, and creates nothing: a control topic that exists is checked (its
// settings); one that does not is refused with the fix (kcleanup init, or
// the --control-topic that governs the plan's topic: protocol.Governance).
// It also makes CheckControlShape's check, so the caller reads the topic
// without describing it again; it still gathers the Governors of the
// projection it reads afterwards, for the run to decide on.
func (c *Cluster) PrepareControlTopic(ctx context.Context, controlTopic string, plan events.Plan, o Options) error {
	info, err := c.TopicMetadata(ctx, controlTopic)
	if errors.Is(err, ErrTopicNotFound) {
		return c.OneGovernor(ctx, protocol.Governance{Self: controlTopic, Topic: plan.Topic, TopicID: plan.TopicID}, o.Bootstrap)
	}
	if err != nil {
		return err
	}
	if info.Configs, err = c.TopicConfigs(ctx, controlTopic); err != nil {
		return err
	}
	if err := protocol.FindingsError(report.CheckControlTopic(info, plan.Topic, info.Replicas, o.Bootstrap)); err != nil {
		return err
	}
	// CheckControlShape's check, on the description just made: the apply path describes
	// the control topic once (issue 34).
	return c.notControlTopic(ctx, gate.ShapeOf(controlTopic, len(info.Partitions), info.Configs))
}

// projectIfExists reads a control topic to its end, or reports exists=false
// with an empty projection when the topic does not exist. Only an existing
// projection must be closed.
func (c *Cluster) projectIfExists(ctx context.Context, controlTopic string) (*Projection, bool, error) {
	if _, err := c.TopicMetadata(ctx, controlTopic); errors.Is(err, ErrTopicNotFound) {
		return c.emptyProjection(controlTopic), false, nil
	} else if err != nil {
		return nil, false, err
	}
	proj, err := c.Project(ctx, controlTopic)
	if err != nil {
		return nil, false, err
	}
	return proj, true, nil
}

// emptyProjection stands for a control topic that does not exist yet:
// nothing bound, no boundary. It has no reader, so it serves read-only
// checks (Preflight, Preview) and must never be caught up, decided on or
// closed.
func (c *Cluster) emptyProjection(controlTopic string) *Projection {
	return &Projection{Topic: controlTopic, View: projector.NewView(), cluster: c}
}
