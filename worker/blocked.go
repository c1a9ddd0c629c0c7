package worker

import (
	"context"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/worker/gate"
)

// ControlTopicSafe blocks cleanup on a control topic whose settings let the
// log cleaner outrun repairs (the rules of package gate, the ones init,
// doctor and the recovery gate apply): deleting while the log may lose the
// decision that allowed it is what the safety argument forbids. Repairs go
// on: they are what protects the log.
func (c *Cluster) ControlTopicSafe(ctx context.Context, controlTopic, bootstrap string) error {
	info, err := c.TopicMetadata(ctx, controlTopic)
	if err != nil {
		return err
	}
	if info.Configs, err = c.TopicConfigs(ctx, controlTopic); err != nil {
		// Settings nobody can read are settings nobody checked: blocked.
		return c.denied(err, permControlDescribeConfigs(controlTopic))
	}
	blocking := gate.Blocking(gate.Settings(controlTopic, len(info.Partitions), info.Configs, bootstrap))
	if len(blocking) == 0 {
		return nil
	}
	var msgs []string
	for _, p := range blocking {
		msgs = append(msgs, p.Message)
	}
	err2 := errors.Mark(errors.Newf("control topic %s is unsafe, so no deletion starts: %s", controlTopic, strings.Join(msgs, "; ")), ErrBlocked)
	for _, p := range blocking {
		err2 = errors.WithHint(err2, p.Fix)
	}
	return err2
}
