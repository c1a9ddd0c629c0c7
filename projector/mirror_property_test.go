package projector

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kcleanup/kcleanup/events"
)

// TestPropertyMirrorCompaction folds random logs of mirror events, with
// tombstones and garbage under their keys, and checks rule M5: once
// Repairs is appended, the log compacted by key (tombstones kept or
// dropped) attaches the same mirror as the full log; and a log with no
// overwrite attaches the same mirror compacted at every prefix, without
// any repair.
func TestPropertyMirrorCompaction(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	topics := []string{"a", "b", "c"}
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 7))
		s := New()
		var log []Record
		overwrites := r.IntN(2) == 0
		add := func(rec Record) {
			rec.Offset = int64(len(log))
			rec.Timestamp = testEpoch
			s.Step(rec)
			log = append(log, rec)
		}
		for range 5 + r.IntN(25) {
			topic := topics[r.IntN(len(topics))]
			ev := events.MirrorAttached
			if r.IntN(2) == 0 {
				ev = events.MirrorDetached
			}
			switch k := r.IntN(10); {
			case overwrites && k == 0:
				add(Record{Key: []byte(events.MirrorKey(topic, ev))})
			case overwrites && k == 1:
				add(Record{Key: []byte(events.MirrorKey(topic, ev)), Value: []byte(`{"garbage":1}`)})
			case overwrites && k == 2:
				was := mirrorOf(s)
				for _, rep := range s.Repairs() {
					add(rep)
				}
				if got := mirrorOf(s); got != was {
					t.Fatalf("seed %d: repairs changed the attached mirror from %s to %s", seed, was, got)
				}
			default:
				env := events.NewMirrorEvent(ev, events.Mirror{Topic: topic, TopicID: testTopicID(byte(1 + r.IntN(2))), Reason: "random"}, testEpoch, "w")
				key, value := env.Encode()
				add(Record{Key: key, Value: value})
			}
			if !overwrites {
				checkMirrorCompacted(t, seed, log, s)
			}
		}
		was := mirrorOf(s)
		for _, rep := range s.Repairs() {
			add(rep)
		}
		if got := mirrorOf(s); got != was {
			t.Fatalf("seed %d: repairs changed the attached mirror from %s to %s", seed, was, got)
		}
		if len(s.Repairs()) != 0 {
			t.Fatalf("seed %d: Repairs not empty after appending it", seed)
		}
		if risk, why := s.AtRisk(); risk {
			t.Fatalf("seed %d: at risk after repairs: %s", seed, why)
		}
		checkMirrorCompacted(t, seed, log, s)
	}
}

func checkMirrorCompacted(t *testing.T, seed uint64, log []Record, s *State) {
	t.Helper()
	want := mirrorOf(s)
	for _, drop := range []bool{false, true} {
		if got := mirrorOf(fold(compact(log, drop))); got != want {
			t.Fatalf("seed %d: compacted (tombstones dropped: %v) attaches %s, the full log %s", seed, drop, got, want)
		}
	}
}

func mirrorOf(s *State) string {
	m, ok := s.Mirror()
	if !ok {
		return "none"
	}
	return fmt.Sprintf("%s/%s", m.Topic, m.TopicID)
}
