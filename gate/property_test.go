package gate

import (
	"math/rand/v2"
	"testing"

	"github.com/kcleanup/kcleanup/events"
)

// TestPropertyAllowedMeansEveryRecordIsThere: over random facts (boundaries,
// live ranges, topic IDs, partition sets, missing topics, read errors), an
// allowed verdict always means that every marker offset is inside its
// partition's live [log start, high watermark], of the markers' incarnation,
// at or above the committed boundary, with the markers covering exactly the
// topic's partitions; and a verdict is never both allowed and refused.
func TestPropertyAllowedMeansEveryRecordIsThere(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	ids := []string{tid, "AAAAAAAAAAAAAAAAAAAAAQ"}
	allowed := 0
	for i := 0; i < 3000; i++ {
		l := newLog()
		if rng.IntN(3) > 0 {
			l.commit(t, "C1", events.Offsets{0: int64(rng.IntN(100)), 1: int64(rng.IntN(100))})
		}
		var f Facts
		switch rng.IntN(4) {
		case 0:
			f = facts(l)
			f.Control, f.Projection = Control{Topic: ctl}, nil
		default:
			f = facts(l)
		}
		nparts := 1 + rng.IntN(3)
		f.Data.Partitions = nil
		f.Data.Start, f.Data.End = events.Offsets{}, events.Offsets{}
		for p := int32(0); p < int32(nparts); p++ {
			f.Data.Partitions = append(f.Data.Partitions, p)
			start := int64(rng.IntN(120))
			f.Data.Start[p], f.Data.End[p] = start, start+int64(rng.IntN(100))
		}
		f.Data.ID = ids[rng.IntN(2)]
		if rng.IntN(10) == 0 {
			f.Data = Data{Topic: topic}
		}
		for m := 0; m < 1+rng.IntN(2); m++ {
			o := events.Offsets{}
			if rng.IntN(2) == 0 && f.Data.Exists { // near the live range, so that some are allowed
				for _, p := range f.Data.Partitions {
					o[p] = f.Data.Start[p] + int64(rng.IntN(int(f.Data.End[p]-f.Data.Start[p])+3)) - 1
				}
			} else {
				for p := int32(0); p < int32(1+rng.IntN(3)); p++ {
					o[p] = int64(rng.IntN(250))
				}
			}
			for p, off := range o {
				o[p] = max(off, 0)
			}
			f.Markers = append(f.Markers, events.Marker{Topic: topic, TopicID: ids[min(rng.IntN(4), 1)], Offsets: o})
		}
		v := Decide(f)
		if v.Allowed != (v.Class == Allowed) || v.Allowed != (len(v.Refusals) == 0) {
			t.Fatalf("inconsistent verdict %+v", v)
		}
		if !v.Allowed {
			continue
		}
		allowed++
		boundary := events.Offsets{} // no control topic: no boundary in the facts
		if f.Projection != nil {
			boundary = l.s.Boundary()
		}
		for _, m := range f.Markers {
			if !f.Data.Exists || m.TopicID != f.Data.ID || len(m.Offsets) != len(f.Data.Partitions) {
				t.Fatalf("allowed markers %+v on data %+v", m, f.Data)
			}
			for p, off := range m.Offsets {
				if off < f.Data.Start[p] || off > f.Data.End[p] || off < boundary[p] {
					t.Fatalf("allowed %d on partition %d: live [%d, %d], boundary %d", off, p, f.Data.Start[p], f.Data.End[p], boundary[p])
				}
			}
		}
	}
	t.Logf("%d of 3000 random verdicts allowed", allowed)
	if allowed == 0 {
		t.Fatal("no case was allowed: the property says nothing")
	}
}
