package worker

import (
	"context"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/gate"
	"github.com/kcleanup/kcleanup/protocol"
)

// ControlTopicSafe gathers the control topic's partitions and settings and
// returns protocol.ControlTopicBlocked's decision on them: cleanup is blocked
// on a control topic whose settings let the log cleaner outrun repairs.
func (c *Cluster) ControlTopicSafe(ctx context.Context, controlTopic, bootstrap string) error {
	info, err := c.TopicMetadata(ctx, controlTopic)
	if err != nil {
		return err
	}
	if info.Configs, err = c.TopicConfigs(ctx, controlTopic); err != nil {
		// Settings nobody can read are settings nobody checked: blocked.
		return c.denied(err, permControlDescribeConfigs(controlTopic))
	}
	return protocol.ControlTopicBlocked(controlTopic, len(info.Partitions), info.Configs, bootstrap)
}

// ShapedAsControlTopics returns, of the topics given, those shaped like a
// control topic by gate's rule (gate.Shape): exactly one partition and
// cleanup.policy exactly compact (the settings whose failure says "this is not a control
// topic", as opposed to a control topic with unsafe settings, which is
// served and blocked). A fleet serving control topics by a regular
// expression serves only these, so that a data topic the expression
// matches by mistake is never read as a control topic, nor repaired or
// retracted into. Two requests (Metadata, DescribeConfigs) for all of
// them. notShaped lists those whose settings say they are not control
// topics; a topic whose settings cannot be read is in neither list.
func (c *Cluster) ShapedAsControlTopics(ctx context.Context, topics []string) (shaped, notShaped []string, err error) {
	if len(topics) == 0 {
		return nil, nil, nil
	}
	td, err := c.adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, nil, errors.Wrap(err, "list the candidate control topics")
	}
	rcs, err := c.adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil && len(rcs) == 0 {
		return nil, nil, errors.Wrap(err, "describe the configs of the candidate control topics")
	}
	for _, t := range topics {
		d, ok := td[t]
		if !ok || d.Err != nil {
			continue
		}
		rc, err := rcs.On(t, nil)
		if err != nil || rc.Err != nil {
			continue
		}
		configs := make(map[string]string, len(rc.Configs))
		for _, cfg := range rc.Configs {
			configs[cfg.Key] = cfg.MaybeValue()
		}
		if gate.ShapeOf(t, len(d.Partitions), configs).Misfit() == "" {
			shaped = append(shaped, t)
		} else {
			notShaped = append(notShaped, t)
		}
	}
	return shaped, notShaped, nil
}
