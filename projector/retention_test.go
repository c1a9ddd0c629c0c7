package projector

import (
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
)

// The latest RETENTION_SET is the policy; a RETENTION_CLEARED after it ends
// it; compaction (one record per key) keeps the same answer.
func TestRetentionFold(t *testing.T) {
	at := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	set := func(reason string, s int) events.Envelope {
		return events.NewRetentionSet(events.Retention{Topic: "t", Watch: []string{"/chk"}, Every: time.Duration(s) * time.Second, Reason: reason}, at, "ops")
	}
	log := []Record{
		record(0, set("first", 1)),
		record(1, events.NewRetentionClear("t", "pause", at, "ops")),
		record(2, set("second", 5)),
	}
	st := fold(log)
	p, ok := st.ActiveRetention()
	if !ok || p.Reason != "second" || p.Every != 5*time.Second || p.Offset != 2 || p.Name() != "retention@2" {
		t.Fatalf("active policy %+v %v, want the second SET", p, ok)
	}
	if c := fold(compact(log, false)); !equalPolicy(c, st) {
		t.Fatalf("compacted log folds to another policy")
	}
	st = fold(log[:2])
	if p, ok := st.Retention(); !ok || p.Active() || p.Cleared.Reason != "pause" || p.Cleared.Actor != "ops" {
		t.Fatalf("after CLEARED: %+v %v", p, ok)
	}
	if _, ok := st.ActiveRetention(); ok {
		t.Fatal("a cleared policy is still active")
	}
	if d, why := st.Degraded(); d {
		t.Fatalf("degraded: %s", why)
	}
}

// A retention record of a newer schema degrades the projection (fail closed).
func TestRetentionNewerSchemaDegrades(t *testing.T) {
	st := New()
	st.Step(Record{Offset: 0, Key: []byte("retention/RETENTION_SET"), Value: []byte(`{"schemaVersion":8,"event":"RETENTION_SET"}`)})
	if d, _ := st.Degraded(); !d {
		t.Fatal("a newer retention record did not degrade the projection")
	}
}

func equalPolicy(a, b *State) bool {
	pa, oka := a.Retention()
	pb, okb := b.Retention()
	return oka == okb && pa.Reason == pb.Reason && pa.Offset == pb.Offset && (pa.Cleared == nil) == (pb.Cleared == nil)
}
