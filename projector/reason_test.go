package projector

import (
	"testing"

	"github.com/kcleanup/kcleanup/events"
)

// The operator's reason of a PLANNED and a COMMITTED (apply --reason) is in
// their steps and verdicts; a record without one says none; a retry with
// another reason is a duplicate that keeps the first; and a repair of the
// COMMITTED's key re-appends it with its reason.
func TestOperatorReasonInHistoryAndRepairs(t *testing.T) {
	p := newPlan("chk-1", "t", testTopicID(1), events.Offsets{0: 10})
	planned := envelope(p, events.Planned, 0, "ops/1")
	planned.Reason = "proposed for review"
	committed := envelope(p, events.Committed, 1, "ops/2")
	committed.Reason = "reclaim disk before the quarter close"
	committed.Boundary = p.Offsets
	retry := committed
	retry.Reason = "another reason"
	deleting := envelope(p, events.Deleting, 3, "worker-1")
	overwrite := record(4, deleting) // a DELETING under the COMMITTED's key: an overwrite
	overwrite.Key = []byte(events.Key(p.PlanID, events.Committed))
	s := fold([]Record{record(0, planned), record(1, committed), record(2, retry), record(3, deleting), overwrite})

	op, ok := s.Operation(p.PlanID)
	if !ok {
		t.Fatal("no operation")
	}
	want := map[events.Event]string{events.Planned: "proposed for review", events.Committed: "reclaim disk before the quarter close", events.Deleting: ""}
	for _, st := range op.History {
		if st.Reason != want[st.Event] {
			t.Errorf("%s step reason %q, want %q", st.Event, st.Reason, want[st.Event])
		}
	}
	vs := s.Audit()
	if vs[1].OperatorReason != committed.Reason || vs[2].Outcome != Duplicate || vs[2].OperatorReason != "another reason" || vs[3].OperatorReason != "" {
		t.Errorf("verdicts %+v", vs)
	}
	found := false
	for _, r := range s.Repairs() {
		env, err := events.Decode(r.Key, r.Value)
		if err != nil {
			t.Fatalf("repair %s does not decode: %v", r.Key, err)
		}
		if env.Event == events.Committed {
			found = true
			if env.Reason != committed.Reason || env.SchemaVersion != events.ReasonSchemaVersion {
				t.Errorf("the COMMITTED's repair has reason %q (schema %d), want %q", env.Reason, env.SchemaVersion, committed.Reason)
			}
		}
	}
	if !found {
		t.Fatal("no repair of the overwritten COMMITTED")
	}
}
