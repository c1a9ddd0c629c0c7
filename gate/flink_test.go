package gate

import (
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
)

// flinkValue is a record as Flink Agents' tool writes it.
func flinkValue(status string, p events.Plan) []byte {
	v := `{"schemaVersion":1,"status":"` + status + `","plan":` + strings.TrimSpace(string(p.Encode())) + `}`
	return []byte(v)
}

type flinkRec struct {
	key   string
	value []byte
}

// flinkFacts are facts for a control topic in Flink Agents' format holding
// recs, as the worker gathers them: the kcleanup fold rejects every record,
// and the job's fold is in Projection.Flink.
func flinkFacts(recs []flinkRec, markers ...events.Offsets) Facts {
	l := newLog()
	fold := flinkagents.New()
	for i, r := range recs {
		l.raw([]byte(r.key), r.value)
		fold.Step(flinkagents.Record{Offset: int64(i), Key: []byte(r.key), Value: r.value})
	}
	f := facts(l, markers...)
	f.Control.Configs = map[string]string{"cleanup.policy": "compact"} // as Flink Agents' tool creates it
	f.Projection.Flink = fold
	return f
}

func mustPlan(t *testing.T, rp string, offs events.Offsets, tid string) events.Plan {
	t.Helper()
	p, err := events.BuildPlan(rp, []events.Marker{{Topic: topic, TopicID: tid, Offsets: offs}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The gate decides a Flink Agents control topic by the job's own fold:
// the effective boundary allows and refuses as the job does, and every
// failure of the job's fold is a refusal (cannot tell), never an allow.
func TestDecideFlinkAgents(t *testing.T) {
	p1 := mustPlan(t, "chk-1", events.Offsets{0: 100, 1: 50}, tid)
	p2 := mustPlan(t, "chk-2", events.Offsets{0: 150, 1: 50}, tid)
	good := []flinkRec{{p1.PlanID, flinkValue("COMMITTED", p1)}, {p1.PlanID, flinkValue("APPLIED", p1)}, {p2.PlanID, flinkValue("COMMITTED", p2)}}

	v := Decide(flinkFacts(good, events.Offsets{0: 150, 1: 60}))
	want(t, v, Allowed, nil, "in Flink Agents' format", "effective boundary 0=150 1=50")
	if len(v.Checked) != 2 || *v.Checked[0].Boundary != 150 || v.Checked[0].PlanID != p2.PlanID {
		t.Fatalf("checked %+v", v.Checked)
	}
	v = Decide(flinkFacts(good, events.Offsets{0: 149, 1: 60}))
	want(t, v, Refused, []Reason{BelowBoundary}, "Cannot restore Kafka action state for action-state-0 from offset 149 because the committed cleanup boundary is 150")
	want(t, Decide(flinkFacts(good)), Refused, []Reason{NoMarkers})

	// The job refuses a control topic that is not compact exactly.
	f := flinkFacts(good, events.Offsets{0: 150, 1: 60})
	f.Control.Configs["cleanup.policy"] = "compact,delete"
	want(t, Decide(f), CannotTell, []Reason{ControlTopicSettings}, "cleanup.policy=compact")

	incomparable := mustPlan(t, "chk-3", events.Offsets{0: 200, 1: 10}, tid)
	otherID := mustPlan(t, "chk-4", events.Offsets{0: 300, 1: 60}, "AAAAAAAAAAAAAAAAAAAAAQ")
	wide := mustPlan(t, "chk-5", events.Offsets{0: 300}, tid)
	for name, tc := range map[string]struct {
		recs []flinkRec
		word string
	}{
		"tombstone":      {append(good[:1:1], flinkRec{p1.PlanID, nil}), "tombstone"},
		"regressed":      {append(good[:2:2], flinkRec{p1.PlanID, flinkValue("COMMITTED", p1)}), "regressed applied plan"},
		"other plan":     {append(good[:1:1], flinkRec{p1.PlanID, flinkValue("COMMITTED", p2)}), "does not match its plan ID"},
		"incomparable":   {append(good[:3:3], flinkRec{incomparable.PlanID, flinkValue("COMMITTED", incomparable)}), "incomparable boundaries"},
		"other topic ID": {append(good[:3:3], flinkRec{otherID.PlanID, flinkValue("APPLIED", otherID)}), "different Kafka topic"},
		"partition set":  {append(good[:3:3], flinkRec{wide.PlanID, flinkValue("APPLIED", wide)}), "different Kafka partition set"},
		"malformed":      {append(good[:3:3], flinkRec{p2.PlanID, []byte(`{"schemaVersion":1.0}`)}), "schema"},
		"not UTF-8":      {append(good[:3:3], flinkRec{p2.PlanID, []byte("{\xff}")}), "not valid UTF-8"},
	} {
		// Markers far above every boundary: only the fold can refuse.
		v := Decide(flinkFacts(tc.recs, events.Offsets{0: 190, 1: 190}))
		want(t, v, CannotTell, []Reason{ForeignFormat}, tc.word)
		if len(v.Hints) == 0 {
			t.Errorf("%s: no hint", name)
		}
	}
}

// A topic that mixes Flink Agents' records with kcleanup's is folded by
// neither: the job fails on kcleanup's records, kcleanup cannot read the
// job's plans.
func TestDecideMixedFormats(t *testing.T) {
	l := newLog()
	l.commit(t, "chk-k", events.Offsets{0: 10, 1: 10})
	p := mustPlan(t, "chk-1", events.Offsets{0: 100, 1: 50}, tid)
	l.raw([]byte(p.PlanID), flinkValue("COMMITTED", p))
	f := facts(l, events.Offsets{0: 20, 1: 20})
	r, ok := projector.Foreign(l.n-1, []byte(p.PlanID), flinkValue("COMMITTED", p))
	if !ok {
		t.Fatal("not recognised")
	}
	f.Projection.Foreign = []projector.ForeignRecord{r}
	want(t, Decide(f), CannotTell, []Reason{ForeignFormat}, "Flink Agents' control format")
}
