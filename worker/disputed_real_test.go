package worker_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector"
)

// Kafka's log cleaner shows a conflict the other way (docs/design.md §5), on
// the real broker: w's COMMITTED wins at 0, l's loses at 1, a later copy of
// w's lands at 2, and a worker's retraction of l's key at 3 lands in the
// next segment. The cleaner cleans closed segments only, and only with the
// records of those segments: it removes w's first copy (superseded at 2)
// and keeps l's (the retraction is in the active segment). The reader then
// sees l first and accepted: the conflict is disputed, at risk, and neither
// side is repaired or retracted. Once the retraction's segment is cleaned
// too, l's record is gone and a fresh read names w. Real broker only: kfake
// compacts differently (it moves the log start, docs/testing.md).
func TestCleanerShowsAConflictTheOtherWay(t *testing.T) {
	s := newCleanerScene(t, "disputed", map[string]string{
		"delete.retention.ms": "86400000", // the retraction tombstone stays
	})

	const id = "Xw8WDWFFGCB7AAZnSGmHfw"
	w := workertest.MustPlan(t, "CW", "action-state", id, events.Offsets{0: 60, 1: 120})
	l := workertest.MustPlan(t, "CL", "action-state", id, events.Offsets{0: 150, 1: 50})
	commit := func(p events.Plan) *kgo.Record {
		env := workertest.Envelope(events.Committed, p, "apply/test")
		env.Boundary = p.Offsets.Clone()
		key, value := env.Encode()
		return &kgo.Record{Key: key, Value: value}
	}
	s.produce(commit(w), commit(l), commit(w))
	// Let segment.ms pass so that the retraction opens the next segment
	// (a roll happens on an append, never by itself).
	time.Sleep(300 * time.Millisecond)
	s.produce(&kgo.Record{Key: []byte(events.Key(l.PlanID, events.Committed)), Headers: []kgo.RecordHeader{
		{Key: projector.HeaderMaintenance, Value: []byte(projector.MaintenanceRetraction)},
		{Key: projector.HeaderActor, Value: []byte("worker/other")},
		{Key: projector.HeaderReason, Value: []byte("retracts a key whose every record was rejected")},
	}})

	offs, proj := s.waitRemoved("the cleaner removes w's first COMMITTED copy", 0, nil)
	if !slices.Equal(offs, []int64{1, 2, 3}) {
		t.Fatalf("control topic holds offsets %v; want [1 2 3]: l's record kept while its retraction is in the active segment", offs)
	}
	st := proj.State
	if op, _ := st.Operation(l.PlanID); op.State != fsm.Committed {
		t.Errorf("l is %s on the cleaned log; want COMMITTED (it is first there)", op.State)
	}
	if got := st.Disputed(); !slices.Equal(got, []string{l.PlanID}) {
		t.Errorf("Disputed() = %v, want [l]", got)
	}
	if risk, why := st.AtRisk(); !risk || !strings.Contains(why, "judged that conflict the other way") {
		t.Errorf("AtRisk %t %q; want the disputed conflict named", risk, why)
	}
	for _, r := range st.Repairs() {
		t.Errorf("repair %s listed on a disputed view", r.Key)
	}
	for _, r := range st.Retractions() {
		t.Errorf("retraction %s listed on a disputed view", r.Key)
	}
	proj.Close()

	// The retraction's segment is cleaned too once later appends roll it:
	// l's record goes, w's copy stays, and a fresh read is not disputed.
	pad := workertest.Envelope(events.Planned, w, "padding") // a duplicate: COMMITTED implied it
	offs, proj = s.waitRemoved("the cleaner removes l's record", 1, func() {
		pad.At = time.Now().UTC()
		key, value := pad.Encode()
		s.produce(&kgo.Record{Key: key, Value: value})
	})
	defer proj.Close()
	st = proj.State
	if op, _ := st.Operation(w.PlanID); op.State != fsm.Committed || st.Boundary()[0] != 60 || st.Boundary()[1] != 120 {
		t.Errorf("after the cleaner removed l: w %s, boundary %s; want w COMMITTED and its plan the boundary", op.State, st.Boundary())
	}
	if d := st.Disputed(); len(d) > 0 {
		t.Errorf("still disputed: %v", d)
	}
	if risk, why := st.AtRisk(); risk {
		t.Errorf("still at risk: %s", why)
	}
}
