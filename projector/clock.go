package projector

import (
	"slices"
	"time"

	"github.com/kcleanup/kcleanup/events"
)

// The broker's clock (docs/design.md §12, "The two clocks"). The fold
// judges everything by the envelopes' "at", a writer's clock, so that
// every reader and every compacted replay agrees. It also notes what the
// broker's clock said: on a control topic with
// message.timestamp.type=LogAppendTime every record carries the time the
// broker appended it, which no writer chooses. None of this changes a
// verdict, the boundary or an operation: the protocol uses it to hold back
// DeleteRecords above a pin the broker's clock still holds
// (protocol.PinHeld), and the report shows COMMITTED records stamped ahead
// of the broker (Ahead).

// clock is what the records said of the broker's clock.
type clock struct {
	// newest is the latest broker time of a folded record (LogAppendTime).
	newest time.Time
	// appended is the broker time of the record being folded (zero when
	// its timestamp is a writer's).
	appended time.Time
	// ahead lists the COMMITTED records whose "at" runs ahead of their
	// broker time by more than MinAhead, in log order.
	ahead []Ahead
}

// MinAhead is the least lead of a COMMITTED's "at" over its broker time
// that Ahead lists: a writer's clock and the broker's agree to well under
// a second on hosts kept on NTP, and a record is appended after it is
// stamped, so a smaller lead is noise. The operator's tolerance (the
// report's) is at least this.
const MinAhead = time.Second

// Ahead is a COMMITTED whose writer stamped an "at" ahead of the time the
// broker appended it: the writer's clock runs ahead, and the fold judged
// pins and expiries at that "at".
type Ahead struct {
	PlanID string
	Offset int64
	// At is the envelope's "at"; Appended the broker's time of the record.
	At       time.Time
	Appended time.Time
	Actor    string
}

// Lead is how far the writer's "at" runs ahead of the broker's time.
func (a Ahead) Lead() time.Duration { return a.At.Sub(a.Appended) }

// observeClock notes the broker time of r before it is folded.
func (s *State) observeClock(r Record, env events.Envelope, decodeErr error) {
	s.clock.appended = time.Time{}
	if !r.LogAppendTime || r.Timestamp.IsZero() {
		return
	}
	s.clock.appended = r.Timestamp
	if r.Timestamp.After(s.clock.newest) {
		s.clock.newest = r.Timestamp
	}
	if decodeErr == nil && r.Value != nil && env.Event == events.Committed && env.At.Sub(r.Timestamp) > MinAhead {
		s.clock.ahead = append(s.clock.ahead, Ahead{PlanID: env.PlanID, Offset: r.Offset, At: env.At, Appended: r.Timestamp, Actor: env.Actor})
	}
}

// BrokerTime is the newest time at which the broker appended a record the
// fold has read (Record.LogAppendTime), and whether there is one. The
// broker's clock has passed it; a reader that needs a fresher reading
// appends a record and reads it back.
func (s *State) BrokerTime() (time.Time, bool) {
	return s.clock.newest, !s.clock.newest.IsZero()
}

// Ahead lists the COMMITTED records whose "at" runs ahead of the time the
// broker appended them by more than tolerance (at least MinAhead), in log
// order.
func (s *State) Ahead(tolerance time.Duration) []Ahead {
	var out []Ahead
	for _, a := range s.clock.ahead {
		if a.Lead() > tolerance {
			out = append(out, a)
		}
	}
	return slices.Clip(out)
}
