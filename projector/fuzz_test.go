package projector

import (
	"maps"
	"testing"

	"github.com/kcleanup/kcleanup/events"
)

// fuzzBase is a log with operations in every state, folded before each
// fuzzed record: p0 APPLIED, p1 DELETING, p2 COMMITTED, p3 PLANNED.
func fuzzBase() ([]Record, []events.Plan) {
	tid := testTopicID(1)
	plans := []events.Plan{
		newPlan("C0", testTopic, tid, events.Offsets{0: 100, 1: 200}),
		newPlan("C1", testTopic, tid, events.Offsets{0: 150, 1: 230}),
		newPlan("C2", testTopic, tid, events.Offsets{0: 160, 2: 10}),
		newPlan("C3", testTopic, tid, events.Offsets{0: 170, 1: 240, 2: 20}),
	}
	var log []Record
	var off int64
	add := func(env events.Envelope) {
		log = append(log, record(off, env))
		off++
	}
	boundary := events.Offsets{}
	for i, p := range plans {
		add(envelope(p, events.Planned, off, "w"))
		if i == 3 {
			continue
		}
		env := envelope(p, events.Committed, off, "w")
		boundary = nextBoundary(boundary, p.Offsets)
		env.Boundary = boundary
		add(env)
		if i >= 2 {
			continue
		}
		add(envelope(p, events.Deleting, off, "w"))
		if i == 0 {
			env := envelope(p, events.Applied, off, "w")
			env.LogStart = p.Offsets.Clone()
			add(env)
		}
	}
	return log, plans
}

// FuzzStep folds an arbitrary record into a state with operations in every
// state: it never panics, a record that is not accepted leaves boundary,
// binding and operations unchanged, an accepted one never lowers the
// boundary, and every reader of the state still works.
func FuzzStep(f *testing.F) {
	base, plans := fuzzBase()
	next := int64(len(base))
	for _, p := range plans {
		for _, e := range []events.Event{events.Planned, events.Committed, events.Deleting, events.Applied} {
			env := envelope(p, e, next, "fuzz")
			switch e {
			case events.Committed:
				env.Boundary = events.Offsets{0: 170, 1: 240, 2: 20}
			case events.Applied:
				env.LogStart = p.Offsets.Clone()
			}
			k, v := env.Encode()
			f.Add(k, v, false)
		}
	}
	fresh := newPlan("C9", testTopic, testTopicID(1), events.Offsets{0: 500})
	k, v := envelope(fresh, events.Planned, next, "fuzz").Encode()
	f.Add(k, v, false)
	f.Add(k, []byte(nil), true)
	f.Add([]byte(events.Key(plans[0].PlanID, events.Planned)), []byte(nil), true)
	f.Add([]byte("x/PLANNED"), []byte(`{"schemaVersion":2}`), false)
	f.Add([]byte(events.Key(plans[3].PlanID, "PAUSED")), []byte(`{"schemaVersion":1,"event":"PAUSED","planId":"`+plans[3].PlanID+`"}`), false)
	f.Add([]byte{}, []byte{}, false)
	f.Add([]byte{0xff, '/'}, []byte("[1,2,{"), false)

	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		s := fold(base)
		if tombstone {
			value = nil
		} else if value == nil {
			value = []byte{}
		}
		before := s.Boundary()
		core := s.coreDigest()
		was := snap(s)
		v := s.Step(Record{Offset: next, Key: key, Value: value})
		after := s.Boundary()
		for p, b := range before {
			if a, ok := after[p]; !ok || a < b {
				t.Fatalf("partition %d boundary went from %d to %d", p, b, a)
			}
		}
		switch v.Outcome {
		case Accepted:
		case Rejected:
			if v.Reason == ReasonCommitMissing {
				if diff := was.evidenceChange(s); diff != "" {
					t.Fatalf("evidence of an erased COMMITTED changed more than it may: %s", diff)
				}
				break
			}
			fallthrough
		case Duplicate:
			if s.coreDigest() != core || !maps.Equal(before, after) {
				t.Fatalf("a %s record (%s) changed boundary, binding or operations", v.Outcome, v.Reason)
			}
			if v.Outcome == Rejected && v.Reason == "" {
				t.Fatalf("rejected without a reason: %+v", v)
			}
		default:
			t.Fatalf("verdict without an outcome: %+v", v)
		}
		if s.Next() != next+1 || len(s.Audit()) != len(base)+1 {
			t.Fatalf("next %d, audit %d after folding offset %d", s.Next(), len(s.Audit()), next)
		}
		_ = s.Digest()
		_ = s.Pending()
		_ = s.Rejected()
		for _, r := range s.Repairs() {
			if _, err := events.Decode(r.Key, r.Value); err != nil {
				t.Fatalf("repair record for %s does not decode: %v", r.Key, err)
			}
		}
		_, _ = s.AtRisk()
		_ = s.Retractions()
		// What the recovery gate reads of the fold (gate's own property tests drive Decide).
		_, _, _ = s.Binding()
		for p := range s.Boundary() {
			_ = s.BoundarySetBy(p)
		}
	})
}
