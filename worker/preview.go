package worker

import (
	"context"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/worker/protocol"
)

// PartitionPreview is what applying a plan would do to one partition, as
// the cluster stands now.
type PartitionPreview struct {
	Partition  int32 `json:"partition"`
	PlanOffset int64 `json:"planOffset"`
	// LogStart and HighWatermark are the partition's offsets now.
	LogStart      int64 `json:"logStart"`
	HighWatermark int64 `json:"highWatermark"`
	// NewLogStart is the log start after apply: max(LogStart, PlanOffset),
	// since DeleteRecords never moves a log start back; LogStart when apply
	// refuses the partition (Refused), since then nothing is deleted.
	NewLogStart int64 `json:"newLogStart"`
	// Deletable counts the offsets in [LogStart, NewLogStart): an upper
	// bound on the records that become deletable, since compaction may have
	// removed some of them already. 0 when the partition is refused.
	Deletable int64 `json:"deletable"`
	// Refused says why apply refuses this partition now ("" when it would
	// not): the same sentence Preflight gives for it.
	Refused string `json:"refused,omitempty"`
	// Boundary is the committed boundary of the partition; nil when nothing
	// was ever committed for it.
	Boundary      *int64 `json:"boundary"`
	BoundarySetBy string `json:"boundarySetBy,omitempty"`
}

// Preview is what applying a plan would do, computed from the live data
// topic and the control topic's boundary. Computing it changes nothing.
type Preview struct {
	ControlTopic string `json:"controlTopic"`
	// ControlTopicExists is false when the control topic was not created
	// yet: then the boundary is empty and the binding open.
	ControlTopicExists bool `json:"controlTopicExists"`
	// Partitions lists the plan's partitions that the topic has, ascending.
	Partitions []PartitionPreview `json:"partitions"`
	// Refusal is Preflight's verdict: nil when apply would go ahead, else
	// the reasons it would refuse the plan (with hints).
	Refusal error `json:"-"`
}

// Preview computes what applying plan would do. It reads the data topic and
// the control topic (a missing control topic counts as empty) and runs
// Preflight; it writes nothing. An error means the preview could not be
// computed (the cluster did not answer, the data topic does not exist); a
// plan that apply would refuse is reported in Preview.Refusal instead.
func (c *Cluster) Preview(ctx context.Context, controlTopic string, plan events.Plan, o Options) (Preview, error) {
	pv := Preview{ControlTopic: controlTopic, Partitions: []PartitionPreview{}}
	proj, exists, err := c.projectIfExists(ctx, controlTopic)
	if err != nil {
		return pv, err
	}
	if exists {
		defer proj.Close()
	}
	pv.ControlTopicExists = exists
	info, err := c.DescribeTopic(ctx, plan.Topic)
	if err != nil {
		return pv, err
	}
	boundary := proj.State.Boundary()
	for _, p := range plan.Offsets.Partitions() {
		end, ok := info.End[p]
		if !ok {
			continue // not a partition of the topic: Preflight says so
		}
		row := PartitionPreview{
			Partition: p, PlanOffset: plan.Offsets[p],
			LogStart: info.Start[p], HighWatermark: end,
			NewLogStart: max(info.Start[p], plan.Offsets[p]),
		}
		row.Refused, _ = protocol.PartitionRefusal(p, plan.Offsets[p], info, boundary, proj.State.BoundarySetBy)
		if row.Refused != "" {
			row.NewLogStart = row.LogStart // a refused partition keeps every record
		}
		row.Deletable = row.NewLogStart - row.LogStart
		if b, ok := boundary[p]; ok {
			row.Boundary = &b
			row.BoundarySetBy = proj.State.BoundarySetBy(p)
		}
		pv.Partitions = append(pv.Partitions, row)
	}
	pv.Refusal = c.Preflight(ctx, proj, plan, o)
	if pv.Refusal != nil && ctx.Err() != nil {
		// Not a verdict on the plan: the cluster stopped answering.
		return pv, pv.Refusal
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
	return &Projection{Topic: controlTopic, State: projector.New(), cluster: c}
}
