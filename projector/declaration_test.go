package projector

import (
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
)

// The declaration in force is the latest accepted NO_TOMBSTONES_DECLARED,
// until a WITHDRAWN or anything else over its key ends it; a declaration
// for another topic incarnation is rejected once the control topic is bound.
func TestDeclarationFold(t *testing.T) {
	id := testTopicID(1)
	at := func(off int64) time.Time { return testEpoch.Add(time.Duration(off) * time.Second) }
	decl := func(off int64, topicID string, since events.Offsets) Record {
		return record(off, events.NewDeclaration(testTopic, topicID, since, "cleanup mode rejects tombstones", at(off), "ops/1"))
	}
	p := newPlan("cp-1", testTopic, id, events.Offsets{0: 10, 1: 20})
	cases := []struct {
		name    string
		records []Record
		inForce bool
		covers  map[int32]int64 // partition -> from that must be covered
		not     map[int32]int64 // partition -> from that must not be
		outcome Outcome         // of the last record
	}{
		{"declared", []Record{decl(0, id, events.Offsets{0: 5, 1: 7})}, true,
			map[int32]int64{0: 5, 1: 100}, map[int32]int64{0: 4, 2: 100}, Accepted},
		{"withdrawn", []Record{decl(0, id, events.Offsets{0: 5}), record(1, events.NewWithdrawal("release 43 writes them", at(1), "ops/2"))}, false,
			nil, map[int32]int64{0: 5}, Accepted},
		{"declared again after a withdrawal", []Record{decl(0, id, events.Offsets{0: 5}), record(1, events.NewWithdrawal("w", at(1), "ops/2")), decl(2, id, events.Offsets{0: 9})}, true,
			map[int32]int64{0: 9}, map[int32]int64{0: 8}, Accepted},
		{"withdrawn with nothing declared", []Record{record(0, events.NewWithdrawal("w", at(0), "ops/2"))}, false, nil, nil, Duplicate},
		{"a null over the key ends it", []Record{decl(0, id, events.Offsets{0: 5}), {Offset: 1, Key: []byte(events.DeclarationKey), Timestamp: at(1)}}, false,
			nil, map[int32]int64{0: 5}, Rejected},
		{"garbage over the key ends it", []Record{decl(0, id, events.Offsets{0: 5}), {Offset: 1, Key: []byte(events.DeclarationKey), Value: []byte(`{"schemaVersion":6}`), Timestamp: at(1)}}, false,
			nil, map[int32]int64{0: 5}, Rejected},
		{"another incarnation, bound", []Record{record(0, envelope(p, events.Planned, 0, "a")), decl(1, testTopicID(2), events.Offsets{0: 5})}, false,
			nil, map[int32]int64{0: 5}, Rejected},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := New()
			var v Verdict
			for _, r := range c.records {
				v = st.Step(r)
			}
			if v.Outcome != c.outcome {
				t.Fatalf("last verdict %+v, want %s", v, c.outcome)
			}
			d, ok := st.Declaration()
			if got := ok && d.InForce(); got != c.inForce {
				t.Fatalf("in force %v, want %v (%+v)", got, c.inForce, d)
			}
			for part, from := range c.covers {
				if !d.Covers(testTopic, id, part, from) {
					t.Errorf("partition %d from %d not covered by %+v", part, from, d)
				}
			}
			for part, from := range c.not {
				if ok && d.Covers(testTopic, id, part, from) {
					t.Errorf("partition %d from %d covered by %+v", part, from, d)
				}
			}
			if d.Covers("other", id, 0, 1<<40) {
				t.Errorf("a declaration covers another topic")
			}
		})
	}
}

// A record from a newer kcleanup under the declaration key degrades the
// projection (fail closed), as for pins.
func TestDeclarationNewerSchemaDegrades(t *testing.T) {
	st := New()
	st.Step(Record{Offset: 0, Key: []byte(events.DeclarationKey), Value: []byte(`{"schemaVersion":7,"event":"NO_TOMBSTONES_DECLARED"}`)})
	if degraded, _ := st.Degraded(); !degraded {
		t.Fatal("a schema-7 declaration did not degrade the projection")
	}
}
