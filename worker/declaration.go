package worker

import (
	"context"
	"slices"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
)

// DeclarationRequest is an operator's no-tombstones declaration: the data
// topic, from which offsets on (nil: its end now, so that the declaration
// covers only records written after it; see Declare), and why.
type DeclarationRequest struct {
	Topic string
	Since events.Offsets
	// FromStart covers every record the topic holds now too (its log
	// start): the operator asserts the job never wrote a tombstone there.
	FromStart bool
	Reason    string
}

// Declare appends NO_TOMBSTONES_DECLARED and reads it back (issue 35 item
// 8). Since defaults to the data topic's end offsets (high watermarks) now:
// a declaration never covers records written before it unless the
// operator says so (Since, FromStart), since nobody saw how those were
// written. It reads only the topic's metadata and offsets (Describe), never
// its records. A declaration the log rejects, or that does not fit (another
// incarnation, a degraded projection), is an error.
func (c *Cluster) Declare(ctx context.Context, proj *Projection, req DeclarationRequest, o Options) (projector.Declaration, error) {
	if err := proj.CatchUp(ctx); err != nil {
		return projector.Declaration{}, err
	}
	if err := governed(proj, o); err != nil {
		return projector.Declaration{}, err
	}
	if err := degraded(proj); err != nil {
		return projector.Declaration{}, err
	}
	live, err := c.TopicMetadata(ctx, req.Topic)
	if err != nil {
		return projector.Declaration{}, err
	}
	if topic, id, ok := proj.State.Binding(); ok && (topic != req.Topic || id != live.ID) {
		return projector.Declaration{}, errors.WithHint(errors.Mark(errors.Newf(
			"control topic %s governs topic %s (ID %s), not %s (ID %s)", proj.Topic, topic, id, req.Topic, live.ID), protocol.ErrRejected),
			"declare on the control topic of the data topic's current incarnation (--control-topic)")
	}
	since := req.Since
	switch {
	case since != nil:
		for p := range since {
			if !slices.Contains(live.Partitions, p) {
				return projector.Declaration{}, errors.Mark(errors.Newf("--since names partition %d, which topic %s does not have (partitions %v)", p, req.Topic, live.Partitions), protocol.ErrRejected)
			}
		}
	case req.FromStart:
		if since, err = c.StartOffsets(ctx, req.Topic); err != nil {
			return projector.Declaration{}, err
		}
	default:
		if since, err = c.EndOffsets(ctx, req.Topic); err != nil {
			return projector.Declaration{}, err
		}
	}
	env := events.NewDeclaration(req.Topic, live.ID, since, req.Reason, time.Now(), o.actor())
	if err := env.Validate(); err != nil {
		return projector.Declaration{}, errors.WithHint(errors.Mark(err, protocol.ErrRejected), "the reason must be printable text, not blank; offsets 0 or more")
	}
	v, err := proj.Decide(ctx, env)
	if err != nil {
		return projector.Declaration{}, err
	}
	if v.Outcome == projector.Rejected {
		return projector.Declaration{}, errors.Mark(errors.Newf("NO_TOMBSTONES_DECLARED was rejected at offset %d: %s: %s", v.Offset, v.Reason, v.Detail), protocol.ErrRejected)
	}
	d, _ := proj.State.Declaration()
	o.say("declare", "NO_TOMBSTONES_DECLARED at control offset %d: since %s", d.Offset, d.Since)
	return d, nil
}

// Withdraw appends NO_TOMBSTONES_WITHDRAWN and reads it back: the tombstone
// rule reads the data topic again. With no declaration in force nothing is
// written, and the latest one (if any) is returned as it is.
func (c *Cluster) Withdraw(ctx context.Context, proj *Projection, reason string, o Options) (projector.Declaration, error) {
	if err := proj.CatchUp(ctx); err != nil {
		return projector.Declaration{}, err
	}
	if err := degraded(proj); err != nil {
		return projector.Declaration{}, err
	}
	d, ok := proj.State.Declaration()
	if !ok || !d.InForce() {
		o.say("withdraw", "no no-tombstones declaration is in force on %s: nothing to withdraw", proj.Topic)
		return d, nil
	}
	env := events.NewWithdrawal(reason, time.Now(), o.actor())
	if err := env.Validate(); err != nil {
		return projector.Declaration{}, errors.WithHint(errors.Mark(err, protocol.ErrRejected), "the reason must be printable text, not blank")
	}
	v, err := proj.Decide(ctx, env)
	if err != nil {
		return projector.Declaration{}, err
	}
	if v.Outcome == projector.Rejected {
		return projector.Declaration{}, errors.Mark(errors.Newf("NO_TOMBSTONES_WITHDRAWN was rejected at offset %d: %s: %s", v.Offset, v.Reason, v.Detail), protocol.ErrRejected)
	}
	d, _ = proj.State.Declaration()
	o.say("withdraw", "NO_TOMBSTONES_WITHDRAWN at control offset %d", v.Offset)
	return d, nil
}
