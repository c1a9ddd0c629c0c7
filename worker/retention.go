package worker

import (
	"context"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
)

// SetRetention appends RETENTION_SET for policy r and reads it back
// (docs/operator-guide.md, "Follow the job"). It returns the policy as the
// log decided it. A policy for another data topic than the control topic
// governs, or on a degraded projection, is refused with nothing written.
func (c *Cluster) SetRetention(ctx context.Context, proj *Projection, r events.Retention, o Options) (projector.Policy, error) {
	return c.writeRetention(ctx, proj, events.NewRetentionSet(r, time.Now(), o.actor()), o)
}

// ClearRetention appends RETENTION_CLEARED and reads it back. With no
// active policy it writes nothing and returns the latest one, if any.
func (c *Cluster) ClearRetention(ctx context.Context, proj *Projection, topic, reason string, o Options) (projector.Policy, error) {
	if err := proj.CatchUp(ctx); err != nil {
		return projector.Policy{}, err
	}
	if p, ok := proj.State.Retention(); !ok || !p.Active() {
		o.say("retention", "control topic %s follows no retention policy: nothing to clear", proj.Topic)
		return p, nil
	}
	return c.writeRetention(ctx, proj, events.NewRetentionClear(topic, reason, time.Now(), o.actor()), o)
}

func (c *Cluster) writeRetention(ctx context.Context, proj *Projection, env events.Envelope, o Options) (projector.Policy, error) {
	if err := proj.CatchUp(ctx); err != nil {
		return projector.Policy{}, err
	}
	if err := degraded(proj); err != nil {
		return projector.Policy{}, err
	}
	if err := env.Retention.Check(env.Event); err != nil {
		return projector.Policy{}, errors.Mark(err, protocol.ErrRejected)
	}
	if topic, _, ok := proj.State.Binding(); ok && topic != env.Retention.Topic {
		return projector.Policy{}, errors.WithHint(errors.Mark(errors.Newf(
			"control topic %s governs topic %s, not %s", proj.Topic, topic, env.Retention.Topic), protocol.ErrRejected),
			"set the policy on the control topic of its data topic (--topic, or --control-topic)")
	}
	if err := env.Validate(); err != nil {
		return projector.Policy{}, errors.WithHint(errors.Mark(err, protocol.ErrRejected), "the reason must be printable text, not blank")
	}
	v, err := proj.Decide(ctx, env)
	if err != nil {
		return projector.Policy{}, err
	}
	if v.Outcome == projector.Rejected {
		return projector.Policy{}, errors.Mark(errors.Newf("%s was rejected at offset %d: %s: %s", env.Event, v.Offset, v.Reason, v.Detail), protocol.ErrRejected)
	}
	p, _ := proj.State.Retention()
	o.say("retention", "%s at control offset %d", env.Event, v.Offset)
	return p, nil
}
