package gate

import (
	"fmt"
	"testing"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
)

// After a completed apply with a mirror attached, kcleanup's gate on the
// control topic and the Flink Agents job on the mirror (the job's fold and
// validateRecoveryOffsets, projector/flinkagents) decide every recovery
// point the same way (issue 10, "Done when"). The mirror holds what the
// protocol writes: each plan that raised the boundary, APPLIED.
func TestReviewGateAgreesWithTheJobOnTheMirror(t *testing.T) {
	l := newLog()
	p1 := l.commit(t, "chk-1", events.Offsets{0: 100, 1: 50})
	p2 := l.commit(t, "chk-2", events.Offsets{0: 150, 1: 120})
	mirror := flinkagents.New()
	for i, p := range []events.Plan{p1, p1, p2, p2} {
		st := flinkagents.Committed
		if i%2 == 1 {
			st = flinkagents.Applied
		}
		if err := mirror.Step(flinkagents.Record{Offset: int64(i), Key: []byte(p.PlanID), Value: flinkagents.EncodeValue(st, p)}); err != nil {
			t.Fatal(err)
		}
	}
	const otherID = "AAAAAAAAAAAAAAAAAAAAAQ"
	var markers [][]events.Marker
	for _, a := range []int64{0, 99, 100, 149, 150, 151, 199, 200} {
		for _, b := range []int64{0, 50, 119, 120, 121, 200} {
			markers = append(markers, []events.Marker{{Topic: topic, TopicID: tid, Offsets: events.Offsets{0: a, 1: b}}})
		}
	}
	markers = append(markers,
		// Two markers: the job merges them to the minimum per partition.
		[]events.Marker{{Topic: topic, TopicID: tid, Offsets: events.Offsets{0: 160, 1: 130}}, {Topic: topic, TopicID: tid, Offsets: events.Offsets{0: 140, 1: 190}}},
		[]events.Marker{{Topic: topic, TopicID: tid, Offsets: events.Offsets{0: 160, 1: 130}}, {Topic: topic, TopicID: tid, Offsets: events.Offsets{0: 170, 1: 125}}},
		// A marker of one partition only, and one naming a partition the
		// plans do not.
		[]events.Marker{{Topic: topic, TopicID: tid, Offsets: events.Offsets{0: 160}}},
		[]events.Marker{{Topic: topic, TopicID: tid, Offsets: events.Offsets{0: 160, 1: 130, 2: 5}}},
		// Another incarnation of the data topic.
		[]events.Marker{{Topic: topic, TopicID: otherID, Offsets: events.Offsets{0: 190, 1: 190}}},
	)
	for _, ms := range markers {
		f := facts(l)
		f.Data.Start = p2.Offsets.Clone() // the completed apply deleted up to p2
		f.Markers = ms
		v := Decide(f)
		jobErr := mirror.Validate(ms)
		if v.Allowed != (jobErr == nil) {
			t.Errorf("markers %s: kcleanup's gate says %s (%s), the job on the mirror says %v", showMarkers(ms), v.Class, v.Message, jobErr)
		}
	}
}

func showMarkers(ms []events.Marker) string {
	s := ""
	for _, m := range ms {
		s += fmt.Sprintf("[%s %s %s]", m.Topic, m.TopicID, m.Offsets)
	}
	return s
}
