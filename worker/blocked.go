package worker

import (
	"context"
	"fmt"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/worker/gate"
)

// checkReachable blocks an operation whose plan asks to delete past the end
// of the live topic: DeleteRecords above the high watermark fails with
// OFFSET_OUT_OF_RANGE on every attempt, so retrying soon cannot help, and
// each attempt would append another DELETING. Any producer can write such a
// COMMITTED (apply itself refuses the plan). The boundary stays committed;
// the operation completes on the blocked schedule once the high watermark
// reaches the plan.
func (c *Cluster) checkReachable(ctx context.Context, plan events.Plan) error {
	end, err := c.EndOffsets(ctx, plan.Topic)
	if err != nil {
		return err
	}
	var lines []string
	for _, p := range plan.Offsets.Partitions() {
		if hw, ok := end[p]; !ok || plan.Offsets[p] > hw {
			lines = append(lines, fmt.Sprintf("%s-%d: plan offset %d is above the high watermark %d", plan.Topic, p, plan.Offsets[p], hw))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return errors.WithHint(errors.Mark(errors.Newf(
		"plan %s asks to delete records that do not exist yet, so DeleteRecords would fail (OFFSET_OUT_OF_RANGE); nothing was deleted:\n%s",
		plan.PlanID, strings.Join(lines, "\n")), ErrBlocked),
		"the committed boundary stays and recovery enforces it; the worker retries on the blocked schedule (--blocked-retry) and finishes once the high watermark reaches the plan; if it never will (a plan for another incarnation of the topic), plan anew on a new control topic")
}

// controlTopicSafe blocks cleanup on a control topic whose settings let the
// log cleaner outrun repairs (the rules of package gate, the ones init,
// doctor and the recovery gate apply): deleting while the log may lose the
// decision that allowed it is what the safety argument forbids. Repairs go
// on: they are what protects the log.
func (c *Cluster) controlTopicSafe(ctx context.Context, controlTopic, bootstrap string) error {
	info, err := c.TopicMetadata(ctx, controlTopic)
	if err != nil {
		return err
	}
	if info.Configs, err = c.TopicConfigs(ctx, controlTopic); err != nil {
		// Settings nobody can read are settings nobody checked: blocked.
		return c.denied(err, Permission{"DescribeConfigs", "topic", controlTopic, "check the control topic's settings before deleting"})
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
