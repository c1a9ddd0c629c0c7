package worker

import (
	"context"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
)

// PinRequest is what to pin: a recovery point's offsets (from its markers,
// as a plan is made), on which data topic, until when (zero: no expiry),
// and why.
type PinRequest struct {
	RecoveryPoint string
	Topic         string
	TopicID       string
	Offsets       events.Offsets
	Expires       time.Time
	Reason        string
}

// Pin appends PINNED for the request and reads it back (docs/design.md §12).
// It returns the pin as the log decided it: its Status says whether it
// protects every partition (active), some (partial) or none (void: a
// commit above it landed first), for the caller to report. A pin the log
// rejects, or that does not fit (another topic's incarnation, a degraded
// projection), is an error and, but for a rejection, nothing is written.
func (c *Cluster) Pin(ctx context.Context, proj *Projection, req PinRequest, o Options) (projector.Pin, error) {
	env := events.NewPin(req.RecoveryPoint, req.Topic, req.TopicID, req.Offsets, req.Expires, req.Reason, time.Now(), o.actor())
	// The decisions are protocol.NewPin's; this executes them.
	if _, err := c.execute(ctx, proj, protocol.NewPin(env, c.config(proj, o)), o); err != nil {
		return projector.Pin{}, err
	}
	pin, _ := proj.State.Pin(env.Pin.PinID) // the run ended Done only with it there
	return pin, nil
}

// Unpin appends UNPINNED for pin pinID and reads it back. A pin the log
// does not hold is refused with nothing written; one already unpinned is
// returned as it is.
func (c *Cluster) Unpin(ctx context.Context, proj *Projection, pinID, reason string, o Options) (projector.Pin, error) {
	if err := proj.CatchUp(ctx); err != nil {
		return projector.Pin{}, err
	}
	if err := governed(proj, o); err != nil {
		return projector.Pin{}, err
	}
	if err := degraded(proj); err != nil {
		return projector.Pin{}, err
	}
	pin, ok := proj.State.Pin(pinID)
	if !ok {
		return projector.Pin{}, errors.WithHint(errors.Mark(errors.Newf("control topic %s holds no pin %s", proj.Topic, pinID), protocol.ErrRejected),
			"kcleanup status lists the pins and their IDs")
	}
	if pin.Unpinned != nil {
		o.say("unpin", "pin %s was already unpinned at control offset %d", pinID, pin.Unpinned.Offset)
		return pin, nil
	}
	env := events.NewUnpin(pinID, reason, time.Now(), o.actor())
	if err := env.Validate(); err != nil {
		return projector.Pin{}, errors.WithHint(errors.Mark(err, protocol.ErrRejected), "the reason must be printable text, not blank")
	}
	v, err := proj.Decide(ctx, env)
	if err != nil {
		return projector.Pin{}, err
	}
	if v.Outcome == projector.Rejected {
		return projector.Pin{}, errors.Mark(errors.Newf("UNPINNED %s was rejected at offset %d: %s: %s", pinID, v.Offset, v.Reason, v.Detail), protocol.ErrRejected)
	}
	pin, _ = proj.State.Pin(pinID)
	o.say("unpin", "UNPINNED %s at control offset %d", pinID, v.Offset)
	return pin, nil
}
