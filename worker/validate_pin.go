package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/gate"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
)

// ValidateAndPin is Validate for a restore that takes time (validate
// --pin-for, POST /v1/validate?pinFor=): when the gate allows, it pins the
// recovery point for pinFor and reads the pin back. The verdict stays
// ALLOWED only if the pin landed before any commit above it (the pin is
// active on every partition): then no plan above the recovery point can be
// committed until the pin expires or is unpinned. Otherwise the answer is
// the gate's for the log as it now stands. A refused or cannot-tell verdict
// writes no pin; a pin that cannot be written or read back is cannot tell.
func (c *Cluster) ValidateAndPin(ctx context.Context, markers []events.Marker, o ValidateOptions, pinFor time.Duration, actor string) gate.Verdict {
	v := c.Validate(ctx, markers, o)
	if !v.Allowed {
		return v
	}
	unjudged := func(err error) gate.Verdict {
		return report.Unjudged(o.ControlTopic, gate.ControlTopicUnreadable, errors.WithHint(errors.Wrap(err, "the recovery point is allowed, but it could not be pinned: the answer cannot be kept true for a restore"),
			"ask again; kcleanup pin needs Write on the control topic"))
	}
	plan, err := events.BuildPlan("validate --pin-for", markers)
	if err != nil {
		return unjudged(err)
	}
	var proj *Projection
	if o.Read != nil {
		proj, err = o.Read(ctx)
	} else {
		proj, err = c.Project(ctx, o.ControlTopic)
		if proj != nil {
			defer proj.Close()
		}
	}
	if err != nil {
		return unjudged(err)
	}
	expires := time.Now().Add(pinFor).UTC()
	pin, err := c.Pin(ctx, proj, PinRequest{RecoveryPoint: plan.SourceRecoveryPoint, Topic: plan.Topic, TopicID: plan.TopicID,
		Offsets: plan.Offsets, Expires: expires, Reason: fmt.Sprintf("validate --pin-for %s: a restore replays from this recovery point", pinFor)},
		Options{Actor: actor})
	if err != nil {
		return unjudged(err)
	}
	if !protocol.PinKeeps(pin) {
		// A commit above the recovery point landed first: what the gate
		// says for the log as it stands now, which may refuse.
		v = c.Validate(ctx, markers, o)
		v.Notes = append(v.Notes, fmt.Sprintf("pin %s landed after a commit above the recovery point: it is %s and protects nothing that commit condemned; this is the gate's answer for the log as it now stands (%s)",
			pin.PinID, pin.Status(time.Time{}), pin.UnpinCommand(o.ControlTopic)))
	} else {
		v.Notes = append(v.Notes, fmt.Sprintf("pinned as %s until %s: every plan above this recovery point is refused until then; after the restore: %s",
			pin.PinID, pin.Expires.Format(time.RFC3339), pin.UnpinCommand(o.ControlTopic)))
	}
	v.PinID, v.PinExpires = pin.PinID, &pin.Expires
	return v
}
