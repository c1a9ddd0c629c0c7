package report

import (
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
)

// A PLANNED nobody continued (an apply interrupted before its commit)
// leaves the default view once its last record is older than StalePlanned
// and is counted there; the complete document keeps it, and a PLANNED just
// younger, a COMMITTED of any age, and a view built without a clock keep it
// in the default view too.
func TestStalePlannedAgesOutOfTheDefaultView(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	s := projector.NewView()
	offset := int64(0)
	add := func(rp string, e events.Event, at time.Time, offs events.Offsets) events.Plan {
		t.Helper()
		p := events.Plan{SourceRecoveryPoint: rp, Topic: "t", TopicID: "b3bvWsPXRsmVE0xrjM3xJA", Offsets: offs}
		p.PlanID = events.ComputePlanID(rp, p.Topic, p.TopicID, offs)
		for _, ev := range []events.Event{events.Planned, e} {
			env := events.Envelope{SchemaVersion: events.SchemaVersion, Event: ev, PlanID: p.PlanID, Plan: p, At: at, Actor: "ops"}
			if ev == events.Committed {
				env.Boundary = offs
			}
			k, v := env.Encode()
			if v := s.Step(projector.Record{Offset: offset, Key: k, Value: v, Timestamp: at}); v.Outcome != projector.Accepted && v.Outcome != projector.Duplicate {
				t.Fatalf("%s %s: %+v", rp, ev, v)
			}
			offset++
		}
		return p
	}
	old := add("old", events.Planned, now.Add(-StalePlanned-time.Hour), events.Offsets{0: 10})
	young := add("young", events.Planned, now.Add(-StalePlanned+time.Hour), events.Offsets{0: 20})
	committed := add("committed", events.Committed, now.Add(-30*24*time.Hour), events.Offsets{0: 5})
	src := Source{ControlTopic: "t.kcleanup", View: s, ReadTo: offset, Now: now}

	ids := func(st Status) map[string]fsm.State {
		out := map[string]fsm.State{}
		for _, op := range st.Operations {
			out[op.PlanID] = op.State
		}
		return out
	}
	sum := SummaryOf(src)
	if got := ids(sum); len(got) != 2 || got[young.PlanID] != fsm.Planned || got[committed.PlanID] != fsm.Committed {
		t.Errorf("default view lists %v; want the young PLANNED and the COMMITTED, not the stale PLANNED", got)
	}
	if sum.StalePlanned != 1 || sum.OperationsOmitted != 1 || sum.OperationCounts[fsm.Planned] != 2 {
		t.Errorf("default view: stalePlanned %d, operationsOmitted %d, PLANNED counted %d; want 1, 1, 2",
			sum.StalePlanned, sum.OperationsOmitted, sum.OperationCounts[fsm.Planned])
	}
	if all := StatusOf(src); ids(all)[old.PlanID] != fsm.Planned || all.StalePlanned != 0 {
		t.Errorf("the complete document must keep the stale PLANNED: %v, stalePlanned %d", ids(all), all.StalePlanned)
	}
	src.Now = time.Time{}
	if got := ids(SummaryOf(src)); len(got) != 3 {
		t.Errorf("a view built without a clock lists %v; want all three", got)
	}
}
