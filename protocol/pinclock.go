package protocol

import (
	"fmt"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
)

// The broker's clock guards DeleteRecords (docs/design.md §12, "The two
// clocks"). The log decides by the envelopes' "at" which COMMITTED a pin
// rejects (projector rule P4): every reader agrees, but the "at" is the
// writer's clock, and one stamped ahead commits above a pin that has not
// expired. The deletion is the irreversible step, so it also waits until
// the pin has expired by the broker's clock: the time the broker appended
// the newest control record this run has read (projector.State.BrokerTime),
// which no writer sets. A finishing run appends DELETING right before it
// checks, so that reading is at most as old as the run.

// PinHold is a deletion held back by a pin the broker's clock still holds.
type PinHold struct {
	PlanID    string
	Pin       projector.Pin
	Partition int32
	// Above is the plan's offset there, above the pin's.
	Above int64
	// CommittedAt is the "at" the writer stamped on the plan's COMMITTED;
	// Lead how far it ran ahead of the broker's time of that record (0:
	// not ahead, or not known).
	CommittedAt time.Time
	Lead        time.Duration
	// Broker is the newest broker time read (zero: the control topic's
	// records carry no broker time: message.timestamp.type=CreateTime).
	Broker time.Time
	// Expires is when the pin expires by the broker's clock (BrokerExpiry);
	// zero when that cannot be known: the hold lasts until it is unpinned.
	Expires time.Time
}

// Gap is how much longer the broker's clock holds the pin (0 when it
// cannot be known).
func (h PinHold) Gap() time.Duration {
	if h.Expires.IsZero() || h.Broker.IsZero() {
		return 0
	}
	return h.Expires.Sub(h.Broker)
}

// BrokerExpiry is when pin expires by the broker's clock: its expiry, or,
// if later, the broker's time of its PINNED plus the duration its writer
// gave it (Expires-At), so that a pinning host whose clock runs behind
// still gets the whole duration. ok is false when the pin has no expiry or
// its PINNED carries no broker time (a CreateTime control topic).
func BrokerExpiry(pin projector.Pin) (time.Time, bool) {
	if pin.Expires.IsZero() || pin.Appended.IsZero() {
		return time.Time{}, false
	}
	exp := pin.Expires
	if byDuration := pin.Appended.Add(pin.Expires.Sub(pin.At)); byDuration.After(exp) {
		exp = byDuration
	}
	return exp, true
}

// PinHeld decides whether op's deletion must still wait for a pin: a pin
// with an expiry, not unpinned, not void there, below the plan on a
// partition, that the broker's clock still holds (BrokerExpiry after
// BrokerTime), or whose expiry the broker's clock cannot judge (no broker
// time: a CreateTime control topic, where every time is a writer's: the
// hold lasts until it is unpinned). A pin with no expiry rejected the
// COMMITTED (P4) or is void on what it condemned (P5): pinnedDeletion
// checks those. It is pure: the run asks it right before Delete, on a
// projection that has read back the run's own DELETING.
func PinHeld(st *projector.State, op projector.Operation) (PinHold, bool) {
	if op.State != fsm.Committed && op.State != fsm.Deleting {
		return PinHold{}, false
	}
	broker, known := st.BrokerTime()
	for _, pin := range st.Pins() {
		if pin.Unpinned != nil || pin.Expires.IsZero() || pin.Topic != op.Plan.Topic || pin.TopicID != op.Plan.TopicID {
			continue
		}
		exp, judged := BrokerExpiry(pin)
		if judged && known && !broker.Before(exp) {
			continue
		}
		for _, part := range op.Plan.Offsets.Partitions() {
			pinned, ok := pin.Offsets[part]
			if _, void := pin.Void[part]; !ok || void || op.Plan.Offsets[part] <= pinned {
				continue
			}
			h := PinHold{PlanID: op.PlanID, Pin: pin, Partition: part, Above: op.Plan.Offsets[part], CommittedAt: committedAt(op)}
			if known {
				h.Broker = broker
			}
			for _, a := range st.Ahead(projector.MinAhead) {
				if a.PlanID == op.PlanID && a.Offset == committedOffset(op) {
					h.Lead = a.Lead()
				}
			}
			if judged {
				h.Expires = exp
			}
			return h, true
		}
	}
	return PinHold{}, false
}

func committedAt(op projector.Operation) time.Time {
	for _, s := range op.History {
		if s.Event == events.Committed {
			return s.At
		}
	}
	return time.Time{}
}

// ErrPinHeld marks a run stopped before DeleteRecords by a pin the
// broker's clock still holds (a kind of ErrBlocked that passes by itself:
// the step's Pause says when).
var ErrPinHeld = errors.New("deletion held by a pin the broker's clock still holds")

type pinHeldError struct{ h PinHold }

func (e *pinHeldError) Error() string {
	h := e.h
	at := "no COMMITTED time"
	if !h.CommittedAt.IsZero() {
		at = "its COMMITTED is stamped " + h.CommittedAt.UTC().Format(time.RFC3339)
	}
	broker := "the control topic's records carry no broker time (message.timestamp.type=CreateTime), so the broker's clock cannot judge the expiry"
	switch {
	case !h.Broker.IsZero() && !h.Expires.IsZero():
		broker = fmt.Sprintf("the broker's clock reads %s: %s before the pin expires at %s",
			h.Broker.UTC().Format(time.RFC3339), h.Gap().Round(time.Second), h.Expires.UTC().Format(time.RFC3339))
	case !h.Broker.IsZero():
		broker = "its PINNED carries no broker time (written while the control topic had message.timestamp.type=CreateTime), so the broker's clock cannot judge its expiry"
	}
	lead := ""
	if h.Lead > 0 {
		lead = fmt.Sprintf(" (%s ahead of the broker's time of that record)", h.Lead.Round(time.Second))
	}
	return fmt.Sprintf("plan %s is above pin %s on partition %d (plan offset %d, pinned offset %d; recovery point %s, pinned by %s: %s): %s%s, but %s; nothing is deleted until then",
		h.PlanID, h.Pin.PinID, h.Partition, h.Above, h.Pin.Offsets[h.Partition], h.Pin.RecoveryPoint, h.Pin.Actor, h.Pin.Reason, at, lead, broker)
}

// PinHoldReason is the hold said for people: the pin, the COMMITTED's at,
// the broker's time and the gap.
func PinHoldReason(h PinHold) string { return (&pinHeldError{h: h}).Error() }

// pinHeldStep is the Pause of a run held by h until the broker's clock
// passes the pin's expiry, or its Blocked end when that clock cannot judge it.
func pinHeldStep(h PinHold, controlTopic string) Step {
	hint := "the deletion follows by itself once the broker's clock passes the pin's expiry (a worker retries then; kcleanup apply waits in-process); the boundary is committed and recovery enforces it. To delete sooner, once the pinned recovery point is no longer needed: " + h.Pin.UnpinCommand(controlTopic)
	if h.Expires.IsZero() {
		hint = "the boundary is committed and recovery enforces it; nothing above the pin is deleted until it is unpinned (" + h.Pin.UnpinCommand(controlTopic) + "), or the control topic is set to message.timestamp.type=LogAppendTime and the pin written again"
	}
	err := errors.WithHint(errors.Mark(errors.Mark(&pinHeldError{h: h}, ErrPinHeld), ErrBlocked), hint)
	if h.Gap() > 0 {
		return pauseStep(Pause, Paused{Hold: &h}, err)
	}
	return pauseStep(Blocked, Paused{Hold: &h}, err)
}
