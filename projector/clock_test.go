package projector

import (
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
)

// TestBrokerClock: the fold notes the broker's time of the records whose
// timestamp is the broker's (LogAppendTime) and only those: BrokerTime is
// the newest, a pin's Appended is its PINNED's, and Ahead lists a
// COMMITTED stamped ahead of its broker time; none of it changes a verdict.
func TestBrokerClock(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	plan, err := events.BuildPlan("cp", []events.Marker{{Topic: "action-state", TopicID: "AAECAwQFBgcICQoLDA0ODw", Offsets: events.Offsets{0: 90}}})
	if err != nil {
		t.Fatal(err)
	}
	s := New()
	if _, ok := s.BrokerTime(); ok {
		t.Fatal("a fresh fold knows a broker time")
	}
	step := func(off int64, env events.Envelope, broker time.Time, logAppend bool) Verdict {
		t.Helper()
		k, v := env.Encode()
		return s.Step(Record{Offset: off, Key: k, Value: v, Timestamp: broker, LogAppendTime: logAppend})
	}
	pin := events.NewPin("sp", plan.Topic, plan.TopicID, events.Offsets{0: 60}, t0.Add(20*time.Second), "r", t0.Add(-24*time.Hour), "pinner")
	step(0, pin, t0, true)
	if p, _ := s.Pin(pin.Pin.PinID); !p.Appended.Equal(t0) {
		t.Fatalf("pin Appended %s, want the broker's %s", p.Appended, t0)
	}
	step(1, events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Planned, PlanID: plan.PlanID, Plan: plan, At: t0, Actor: "a"}, t0.Add(time.Second), true)
	ahead := events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Committed, PlanID: plan.PlanID, Plan: plan,
		Boundary: plan.Offsets.Clone(), At: t0.Add(2 * time.Hour), Actor: "skewed"}
	if v := step(2, ahead, t0.Add(2*time.Second), true); v.Outcome != Accepted {
		t.Fatalf("COMMITTED: %+v (the fold judges by at, as before)", v)
	}
	// A writer's timestamp (CreateTime) far in the future moves nothing.
	step(3, events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Deleting, PlanID: plan.PlanID, Plan: plan, At: t0, Actor: "a"}, t0.Add(48*time.Hour), false)
	if b, ok := s.BrokerTime(); !ok || !b.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("BrokerTime %s %v, want %s (a CreateTime record moves nothing)", b, ok, t0.Add(2*time.Second))
	}
	got := s.Ahead(time.Minute)
	if len(got) != 1 || got[0].Offset != 2 || got[0].Actor != "skewed" || got[0].Lead() != 2*time.Hour-2*time.Second {
		t.Fatalf("Ahead(1m) = %+v, want the COMMITTED at 2, 2h ahead, by skewed", got)
	}
	if got := s.Ahead(3 * time.Hour); len(got) != 0 {
		t.Fatalf("Ahead(3h) = %+v, want none", got)
	}
}
