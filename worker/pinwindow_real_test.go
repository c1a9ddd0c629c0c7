package worker_test

import (
	"fmt"
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

// Kafka's log cleaner opens the pin's repair window (docs/design.md §12),
// on the real broker: c's COMMITTED is accepted at 1, a pin it voids lands
// at 2, a later copy of c's COMMITTED at 3, and a worker's repair of the
// pin (it had read up to 4) at 4, in the next segment. The cleaner removes
// c's first copy (superseded at 3) and keeps the pin's first record (its
// copy is in the active segment). A fresh reader then has the pin first,
// active, and c rejected by it: a boundary below the committed one, which
// must be a pin dispute (at risk, c never retracted). Once the repair's
// segment is cleaned too, the pin's first record is gone and a fresh read
// has c committed again. Real broker only: kfake compacts differently.
func TestCleanerOpensThePinRepairWindow(t *testing.T) {
	s := newCleanerScene(t, "pinwindow", nil)

	const id = "Xw8WDWFFGCB7AAZnSGmHfw"
	plan := workertest.MustPlan(t, "CP", "action-state", id, events.Offsets{0: 296})
	record := func(env events.Envelope, headers ...kgo.RecordHeader) *kgo.Record {
		key, value := env.Encode()
		return &kgo.Record{Key: key, Value: value, Headers: headers}
	}
	committed := workertest.Envelope(events.Committed, plan, "apply/test")
	committed.Boundary = plan.Offsets.Clone()
	pin := events.NewPin("sp-1", "action-state", id, events.Offsets{0: 0}, time.Time{}, "rollback", time.Now().UTC(), "pinner/test")
	s.produce(record(workertest.Envelope(events.Planned, plan, "apply/test")), record(committed), record(pin), record(committed))
	time.Sleep(300 * time.Millisecond) // segment.ms: the repair opens the next segment
	s.produce(record(pin,
		kgo.RecordHeader{Key: projector.HeaderMaintenance, Value: []byte(projector.MaintenanceRepair)},
		kgo.RecordHeader{Key: projector.HeaderActor, Value: []byte("worker/other")},
		kgo.RecordHeader{Key: projector.HeaderRead, Value: []byte("4")}))

	offs, proj := s.waitRemoved("the cleaner removes c's first COMMITTED", 1, nil)
	if !slices.Equal(offs, []int64{0, 2, 3, 4}) {
		t.Fatalf("control topic holds offsets %v; want [0 2 3 4]: the pin's first record kept while its repair is in the active segment", offs)
	}
	st := proj.State
	var verdicts []string
	for _, v := range st.Audit() {
		verdicts = append(verdicts, fmt.Sprintf("%d:%s", v.Offset, v.Outcome))
	}
	t.Logf("in the window: boundary %q, verdicts %v", st.Boundary(), verdicts)
	if op, _ := st.Operation(plan.PlanID); op.State != fsm.Planned || len(st.Boundary()) != 0 {
		t.Errorf("c is %s, boundary %s on the cleaned log; want c PLANNED (rejected by the pin, first there) and no boundary", op.State, st.Boundary())
	}
	if risk, why := st.AtRisk(); !risk || !strings.Contains(why, "rejected for pin") {
		t.Errorf("AtRisk %t %q; want the pin dispute named (the boundary read here is below the committed one)", risk, why)
	}
	if got := st.Disputed(); !slices.Equal(got, []string{plan.PlanID}) {
		t.Errorf("Disputed() = %v, want [c]", got)
	}
	for _, r := range st.Retractions() {
		t.Errorf("retraction %s listed in the window (it may erase the commit the full log accepted)", r.Key)
	}
	proj.Close()

	// The repair's segment is cleaned too once later appends roll it: the
	// pin's first record goes, and a fresh read has c committed, the pin
	// void, nothing at risk.
	pad := workertest.Envelope(events.Planned, plan, "padding") // a duplicate PLANNED
	offs, proj = s.waitRemoved("the cleaner removes the pin's first record", 2, func() {
		pad.At = time.Now().UTC()
		s.produce(record(pad))
	})
	defer proj.Close()
	st = proj.State
	if op, _ := st.Operation(plan.PlanID); op.State != fsm.Committed || st.Boundary()[0] != 296 {
		t.Errorf("after the cleaner removed the pin's first record: c %s, boundary %s; want c COMMITTED and 0=296", op.State, st.Boundary())
	}
	if d := st.Disputed(); len(d) > 0 {
		t.Errorf("still disputed: %v", d)
	}
	if risk, why := st.AtRisk(); risk {
		t.Errorf("still at risk: %s", why)
	}
}
