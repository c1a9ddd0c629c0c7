package protocol

import (
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
)

// The pin mode: PINNED for a recovery point (kcleanup pin, validate
// --pin-for). The run and its steps are in step.go.

// Identify: the data topic's ID and partitions from an uncached Metadata
// request (Report.Topic, its ID and Partitions only): what a pin must match.
const Identify Kind = "identify"

// NewPin appends rec, a PINNED the executor made (events.NewPin: its ID
// covers its writer's clock and actor, so the executor's record is appended
// as it is), after a catch-up, and reads it back (docs/design.md §12). It is
// Refused, writing nothing, when the control topic governs another
// incarnation, the data topic has another ID than the pin's or the record
// is invalid; Refused too when the log rejects it. Done's notes give the pin
// as the log decided it (PinnedOf reads it from the projection).
func NewPin(rec events.Envelope, cfg Config) *Run {
	return &Run{mode: modePin, cfg: cfg, pin: rec}
}

func (r *Run) pinNext(st *projector.State, rep Report) Step {
	if r.phase != phaseStart && rep.Err != nil && !rep.Missing {
		return r.failed(rep)
	}
	req := r.pin.Pin
	switch r.phase {
	case phaseStart:
		r.phase = phaseCaughtUp
		return Step{Kind: CatchUp}
	case phaseCaughtUp:
		if err := Degraded(st, r.cfg.ControlTopic); err != nil {
			return Step{Kind: Blocked, Err: err}
		}
		if topic, id, ok := st.Binding(); ok && (topic != req.Topic || id != req.TopicID) {
			return Step{Kind: Refused, Err: errors.WithHint(errors.Mark(errors.Newf(
				"control topic %s governs topic %s (ID %s); the markers are of %s (ID %s)", r.cfg.ControlTopic, topic, id, req.Topic, req.TopicID), ErrRejected),
				"pin on the control topic of the markers' data topic (--control-topic), with markers of its current incarnation")}
		}
		r.phase = phaseDescribed
		return Step{Kind: Identify, Topic: req.Topic}
	case phaseDescribed:
		if rep.Missing {
			return Step{Kind: Refused, Err: rep.Err}
		}
		if rep.Topic.ID != req.TopicID {
			return Step{Kind: Refused, Err: errors.WithHint(errors.Mark(errors.Newf(
				"data topic %s has topic ID %s but the markers were written for ID %s: the topic was deleted and recreated", req.Topic, rep.Topic.ID, req.TopicID), ErrRejected),
				"pin a recovery point of the current topic: nothing of the old one is left to protect")}
		}
		if err := r.pin.Validate(); err != nil {
			return Step{Kind: Refused, Err: errors.WithHint(errors.Mark(err, ErrRejected), "the reason must be printable text, not blank; --for or --until must be in the future")}
		}
		r.phase = phaseCommitted
		return Step{Kind: Append, Record: r.pin}
	case phaseCommitted:
		v := rep.Verdict
		if v.Outcome == projector.Rejected {
			return Step{Kind: Refused, Result: Result{Verdict: v}, Err: errors.Mark(errors.Newf(
				"PINNED %s was rejected at offset %d: %s: %s", req.PinID, v.Offset, v.Reason, v.Detail), ErrRejected)}
		}
		pin, ok := st.Pin(req.PinID)
		if !ok {
			return Step{Kind: Wait, Err: errors.AssertionFailedf("PINNED %s accepted at offset %d but not in the projection", req.PinID, v.Offset)}
		}
		return Step{Kind: Done, Result: Result{Verdict: v},
			Notes: say("pin", "PINNED %s at control offset %d: %s", pin.PinID, pin.Offset, pin.Status(time.Time{}))}
	}
	return Step{Kind: Wait, Err: errors.AssertionFailedf("protocol: pin run in unknown phase %d", r.phase)}
}

// PinKeeps reports whether a pin read back keeps a validate's ALLOWED true
// for a restore (validate --pin-for): only a pin active on every partition
// does; one a commit above it beat (partial or void) protects less than the
// gate allowed, so the gate's answer is asked again for the log as it stands.
func PinKeeps(pin projector.Pin) bool {
	return pin.Status(time.Time{}) == projector.PinActive
}
