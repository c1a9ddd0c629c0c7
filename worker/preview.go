package worker

import (
	"context"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/report"
)

// Preview computes what applying plan would do (report.Preview). It reads
// the data topic and the control topic (a missing control topic counts as
// empty) and runs Preflight; it writes nothing. An error means the preview could not be
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
			pv.Refusal = errors.Mark(err, ErrRejected) // created since DescribeTopic: look again
		}
		return pv, nil
	}
	if err != nil {
		return pv, err
	}
	pv.Partitions = report.PartitionsPreview(plan, info, proj.State)
	pv.Refusal = c.Preflight(ctx, proj, plan, o)
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
// plan. When the control topic exists it is checked (EnsureControlTopic).
// When it does not, the plan is first checked against the empty state a new
// control topic starts with, and the topic is created only if the plan
// passes: a plan that apply would refuse leaves the cluster exactly as it
// was, without even a new control topic. The caller still runs Preflight
// (Submit and Apply do) on the projection it reads afterwards.
func (c *Cluster) PrepareControlTopic(ctx context.Context, controlTopic string, plan events.Plan, o Options) error {
	_, err := c.TopicMetadata(ctx, controlTopic)
	if errors.Is(err, ErrTopicNotFound) {
		if err := c.Preflight(ctx, c.emptyProjection(controlTopic), plan, o); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	return c.EnsureControlTopic(ctx, controlTopic, plan.Topic, o)
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
