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
	if err := proj.CatchUp(ctx); err != nil {
		return projector.Pin{}, err
	}
	if err := degraded(proj); err != nil {
		return projector.Pin{}, err
	}
	if topic, id, ok := proj.State.Binding(); ok && (topic != req.Topic || id != req.TopicID) {
		return projector.Pin{}, errors.WithHint(errors.Mark(errors.Newf(
			"control topic %s governs topic %s (ID %s); the markers are of %s (ID %s)", proj.Topic, topic, id, req.Topic, req.TopicID), protocol.ErrRejected),
			"pin on the control topic of the markers' data topic (--control-topic), with markers of its current incarnation")
	}
	live, err := c.TopicMetadata(ctx, req.Topic)
	if err != nil {
		return projector.Pin{}, err
	}
	if live.ID != req.TopicID {
		return projector.Pin{}, errors.WithHint(errors.Mark(errors.Newf(
			"data topic %s has topic ID %s but the markers were written for ID %s: the topic was deleted and recreated", req.Topic, live.ID, req.TopicID), protocol.ErrRejected),
			"pin a recovery point of the current topic: nothing of the old one is left to protect")
	}
	env := events.NewPin(req.RecoveryPoint, req.Topic, req.TopicID, req.Offsets, req.Expires, req.Reason, time.Now(), o.actor())
	if err := env.Validate(); err != nil {
		return projector.Pin{}, errors.WithHint(errors.Mark(err, protocol.ErrRejected), "the reason must be printable text, not blank; --for or --until must be in the future")
	}
	v, err := proj.Decide(ctx, env)
	if err != nil {
		return projector.Pin{}, err
	}
	if v.Outcome == projector.Rejected {
		return projector.Pin{}, errors.Mark(errors.Newf("PINNED %s was rejected at offset %d: %s: %s", env.Pin.PinID, v.Offset, v.Reason, v.Detail), protocol.ErrRejected)
	}
	pin, ok := proj.State.Pin(env.Pin.PinID)
	if !ok {
		return projector.Pin{}, errors.AssertionFailedf("PINNED %s accepted at offset %d but not in the projection", env.Pin.PinID, v.Offset)
	}
	o.say("pin", "PINNED %s at control offset %d: %s", pin.PinID, pin.Offset, pin.Status(time.Time{}))
	return pin, nil
}

// Unpin appends UNPINNED for pin pinID and reads it back. A pin the log
// does not hold is refused with nothing written; one already unpinned is
// returned as it is.
func (c *Cluster) Unpin(ctx context.Context, proj *Projection, pinID, reason string, o Options) (projector.Pin, error) {
	if err := proj.CatchUp(ctx); err != nil {
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
