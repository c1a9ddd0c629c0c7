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
	sh, err := c.ControlTopicShapes(ctx, topics)
	return sh.Shaped, sh.NotShaped, err
}

// Shapes is what ControlTopicShapes learned of each topic asked: shaped like
// a control topic, not shaped, or unread (and why: a broker that did not
// answer, a process out of file descriptors).
type Shapes struct {
	Shaped, NotShaped []string
	Unread            map[string]error
}

// ControlTopicShapes is ShapedAsControlTopics with the topics it could not
// read and why, so that a caller can say why and ask again rather than
// take "unread" for "not a control topic".
func (c *Cluster) ControlTopicShapes(ctx context.Context, topics []string) (Shapes, error) {
	var out Shapes
	if len(topics) == 0 {
		return out, nil
	}
	td, err := c.adm.ListTopics(ctx, topics...)
	if err != nil {
		return out, errors.Wrap(err, "list the candidate control topics")
	}
	rcs, err := c.adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil && len(rcs) == 0 {
		return out, errors.Wrap(err, "describe the configs of the candidate control topics")
	}
	unread := func(t string, why error) {
		if out.Unread == nil {
			out.Unread = map[string]error{}
		}
		out.Unread[t] = why
	}
	for _, t := range topics {
		d, ok := td[t]
		if !ok || d.Err != nil {
			why := errors.Newf("topic %s: not in the metadata", t)
			if ok {
				why = errors.Wrapf(d.Err, "topic %s", t)
			}
			unread(t, why)
			continue
		}
		rc, rerr := rcs.On(t, nil)
		if rerr != nil && err != nil {
			rerr = err // not answered: the request's error says why
		} else if rerr == nil {
			rerr = rc.Err
		}
		if rerr != nil {
			unread(t, errors.Wrapf(rerr, "describe the configs of topic %s", t))
			continue
		}
		configs := make(map[string]string, len(rc.Configs))
		for _, cfg := range rc.Configs {
			configs[cfg.Key] = cfg.MaybeValue()
		}
		if gate.ShapeOf(t, len(d.Partitions), configs).Misfit() == "" {
			out.Shaped = append(out.Shaped, t)
		} else {
			out.NotShaped = append(out.NotShaped, t)
		}
	}
	return out, nil
}
