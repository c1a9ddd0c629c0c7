package projector

import (
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
)

// Detach, then attach the same mirror again (same topic, same topic ID:
// moving back to kcleanup after a detour, docs/flink-agents.md): the
// second ATTACHED has the content of the first, which is still under its
// key. It must attach the mirror again; a "duplicate, no change" would
// leave it detached while `kcleanup mirror attach` reports success, and
// every apply would then skip the mirror. Compacted, the log must decide
// the same.
func TestReviewReattachAfterDetach(t *testing.T) {
	var log []Record
	add := func(e events.Event) {
		env := events.NewMirrorEvent(e, events.Mirror{Topic: "flink-ctl", TopicID: "AAAAAAAAAAAAAAAAAAAAAg", Reason: "review"},
			time.Date(2026, 12, 1, 9, 0, len(log), 0, time.UTC), "operator")
		key, value := env.Encode()
		log = append(log, Record{Offset: int64(len(log)), Key: key, Value: value, Timestamp: env.At})
	}
	add(events.MirrorAttached)
	add(events.MirrorDetached)
	add(events.MirrorAttached)
	s := New()
	for _, r := range log {
		v := s.Step(r)
		t.Logf("%d %s: %s %s", r.Offset, r.Key, v.Outcome, v.Detail)
	}
	if _, ok := s.Mirror(); !ok {
		t.Fatal("attach, detach, attach of the same mirror: no mirror attached")
	}
	c := fold(compact(log, true))
	if _, ok := c.Mirror(); !ok {
		t.Fatal("compacted: no mirror attached")
	}
	// And detached again: the DETACHED repeats the first one's content.
	add(events.MirrorDetached)
	s.Step(log[len(log)-1])
	if m, ok := s.Mirror(); ok {
		t.Fatalf("attach, detach, attach, detach: mirror %s still attached", m.Topic)
	}
	if m, ok := fold(compact(log, true)).Mirror(); ok {
		t.Fatalf("compacted: mirror %s still attached", m.Topic)
	}
}
