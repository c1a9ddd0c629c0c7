package projector

import (
	"strings"
	"testing"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
)

// TestValidateSeedMessage checks the exact refusal of DESIGN §7 for the
// seed's example, with the real plan ID, and that the refusal is a
// *RefusalError with a hint.
func TestValidateSeedMessage(t *testing.T) {
	tid := testTopicID(1)
	c1 := newPlan("C1", testTopic, tid, events.Offsets{0: 150})
	s := New(KeepAudit())
	planned := envelope(c1, events.Planned, 0, "w")
	committed := envelope(c1, events.Committed, 1, "w")
	committed.Boundary = events.Offsets{0: 150}
	for i, env := range []events.Envelope{planned, committed} {
		if v := s.Step(record(int64(i), env)); v.Outcome != Accepted {
			t.Fatalf("%s: %s %s: %s", env.Event, v.Outcome, v.Reason, v.Detail)
		}
	}

	c0 := events.Marker{Topic: testTopic, TopicID: tid, Offsets: events.Offsets{0: 100}}
	err := s.Validate([]events.Marker{c0})
	want := "Cannot restore Kafka action state for action-state-0 from offset 100 because the committed cleanup boundary is 150 (set by plan " + c1.PlanID + ")"
	if err == nil || err.Error() != want {
		t.Fatalf("Validate(C0) = %v\nwant %s", err, want)
	}
	var refusal *RefusalError
	if !errors.As(err, &refusal) {
		t.Fatalf("Validate(C0) returned %T, not a *RefusalError", err)
	}
	if refusal.Reason != RefuseBelowBoundary || refusal.Topic != testTopic || refusal.Partition != 0 ||
		refusal.Requested != 100 || refusal.Boundary != 150 || refusal.PlanID != c1.PlanID {
		t.Fatalf("refusal fields: %+v", refusal)
	}
	hints := errors.GetAllHints(err)
	if len(hints) != 1 || !strings.Contains(hints[0], "newer checkpoint or savepoint") {
		t.Fatalf("hints: %q", hints)
	}

	c1m := events.Marker{Topic: testTopic, TopicID: tid, Offsets: events.Offsets{0: 150}}
	if err := s.Validate([]events.Marker{c1m}); err != nil {
		t.Fatalf("Validate(C1) = %v, want allowed", err)
	}
}
