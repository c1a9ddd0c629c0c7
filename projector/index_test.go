package projector

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/events"
)

// TestOpIndex: every operation is found by its ID through the table's
// growths, and no other ID is.
func TestOpIndex(t *testing.T) {
	x := newOpIndex()
	var ops []*op
	for i := range 1000 {
		p := newPlan(fmt.Sprintf("chk-%d", i), testTopic, testTopicID(1), events.Offsets{0: int64(i)})
		ops = append(ops, &op{id: mustPlanID(p.PlanID)})
		x.add(ops, int32(i))
		for j := 0; j <= i; j += 97 {
			if got, ok := x.find(ops, ops[j].id); !ok || got != int32(j) {
				t.Fatalf("after %d adds: operation %d found at %d, %v", i+1, j, got, ok)
			}
		}
	}
	other := newPlan("chk-other", testTopic, testTopicID(1), events.Offsets{0: 1})
	if got, ok := x.find(ops, mustPlanID(other.PlanID)); ok {
		t.Fatalf("an unknown plan found at %d", got)
	}
}

// TestParsePlanID: only the text events accepts is a plan ID, and it
// round-trips.
func TestParsePlanID(t *testing.T) {
	id := newPlan("chk-1", testTopic, testTopicID(1), events.Offsets{0: 1}).PlanID
	got, ok := parsePlanID(id)
	if !ok || got.String() != id || !got.is(id) {
		t.Fatalf("parsePlanID(%q) = %v, %v", id, got, ok)
	}
	for _, bad := range []string{"", id[:63], id + "0", strings.ToUpper(id), "g" + id[1:]} {
		if _, ok := parsePlanID(bad); ok || got.is(bad) {
			t.Errorf("parsePlanID(%q) accepted", bad)
		}
	}
}

// TestHandBuiltDecodedWithoutPlanID: a Decoded whose envelope names no plan
// ID (Decode never returns one) is rejected as malformed, not folded.
func TestHandBuiltDecodedWithoutPlanID(t *testing.T) {
	p := newPlan("chk-1", testTopic, testTopicID(1), events.Offsets{0: 1})
	r := record(0, envelope(p, events.Planned, 0, "w"))
	env := envelope(p, events.Planned, 0, "w")
	env.PlanID = strings.ToUpper(p.PlanID)
	s := New()
	if v := s.StepDecoded(Decoded{Record: r, Envelope: env}); v.Outcome != Rejected || v.Reason != ReasonMalformed {
		t.Fatalf("verdict %+v", v)
	}
	if len(s.Operations()) != 0 {
		t.Fatal("the operation was folded")
	}
}
