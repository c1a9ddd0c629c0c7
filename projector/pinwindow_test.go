package projector

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
)

// A later copy of an accepted COMMITTED (a re-run apply's, or a duplicated
// delivery) lands after a pin the commit had voided; Repairs re-appends the
// pin after the copy. Kafka's cleaner may remove the first COMMITTED (its
// copy is lag-old) before the first PINNED (the pin's repair is not): a
// fresh reader then folds the pin first, active, and the copy rejected by
// it. Found by the simulation (seeds 4454 and 9629, docs/design.md §12).
func TestPinRepairWindowAfterACommitCopy(t *testing.T) {
	topic, tid := "action-state", testTopicID(1)
	plan := newPlan("chk-0", topic, tid, events.Offsets{0: 296})
	committed := func(offset int64) Record {
		env := envelope(plan, events.Committed, 1, "apply")
		env.Boundary = plan.Offsets
		return record(offset, env)
	}
	pin := events.NewPin("sp-1", topic, tid, events.Offsets{0: 0}, time.Time{}, "rollback", testEpoch.Add(2*time.Second), "pinner")
	log := []Record{
		record(0, envelope(plan, events.Planned, 0, "apply")),
		committed(1),
		record(2, pin), // void on partition 0: the commit landed first
		committed(3),   // the later copy
	}
	full := fold(log)
	if got := full.Boundary(); got[0] != 296 {
		t.Fatalf("full history's boundary %s, want 0=296", got)
	}
	reps := full.Repairs()
	if len(reps) == 0 {
		t.Fatalf("no repair re-appends the pin after the commit's copy")
	}
	for i, r := range reps {
		r.Offset = int64(4 + i)
		// As a worker writes it: its view had folded the log below 4.
		r.Headers = []Header{{Key: HeaderMaintenance, Value: []byte(MaintenanceRepair)}, {Key: HeaderRead, Value: []byte("4")}}
		log = append(log, r)
	}
	full = fold(log)
	if risk, why := full.AtRisk(); risk || len(full.Repairs()) > 0 || len(full.Retractions()) > 0 || len(full.Disputed()) > 0 {
		t.Fatalf("the full history after the repair is not settled: at risk %v (%s), %d repairs, %d retractions, disputed %v",
			risk, why, len(full.Repairs()), len(full.Retractions()), full.Disputed())
	}
	// The cleaner with offsets below 4 lag-old: the first COMMITTED goes
	// (its copy at 3 is old enough), the first PINNED stays (its repair at
	// 4 is not).
	fresh := fold(compactBelow(log, 4))
	risk, why := fresh.AtRisk()
	t.Logf("in the window: boundary %s (full history %s); at risk %v: %s", fresh.Boundary(), full.Boundary(), risk, why)
	if fresh.Boundary()[0] < full.Boundary()[0] && !risk {
		t.Fatalf("a fresh reader of the partly compacted log folds the boundary %s, below the full history's %s, and is not at risk: a gate would allow what is about to be deleted", fresh.Boundary(), full.Boundary())
	}
	for _, r := range fresh.Retractions() {
		if string(r.Key) == events.Key(plan.PlanID, events.Committed) {
			t.Fatalf("a fresh reader in the window retracts the COMMITTED the full log accepted (offset %d, now %v)", r.Offset, r.Now)
		}
	}
	if got := fresh.Disputed(); !slices.Equal(got, []string{plan.PlanID}) {
		t.Fatalf("Disputed() = %v, want the plan %s (a worker reads the log afresh)", got, plan.PlanID)
	}
	// A further copy of the commit (its writer's late duplicate) lands
	// after the pin's repair: still a copy of what the full log may have
	// accepted, still not retracted (seed 9629 retracted it, the other
	// workers repaired it, for as long as the seed ran).
	again := fold(append(compactBelow(log, 4), committed(5)))
	for _, r := range again.Retractions() {
		if string(r.Key) == events.Key(plan.PlanID, events.Committed) {
			t.Fatalf("after a later copy, a fresh reader in the window retracts the COMMITTED the full log accepted (offset %d)", r.Offset)
		}
	}
	if risk, _ := again.AtRisk(); !risk {
		t.Fatalf("after a later copy, the fresh reader in the window is no longer at risk (boundary %s)", again.Boundary())
	}
	// Once the cleaner removed the first PINNED too, a fresh read agrees.
	after := fold(compactBelow(log, 5))
	if risk, why := after.AtRisk(); risk || !after.Boundary().Equal(full.Boundary()) || !maps.Equal(opStates(after), opStates(full)) {
		t.Fatalf("after the window: boundary %s (full %s), states %v (full %v), at risk %v: %s",
			after.Boundary(), full.Boundary(), opStates(after), opStates(full), risk, why)
	}
}

// The other order, which the pin-dispute rule must leave alone: a commit
// the pin rejected, retracted, then a late duplicate of it lands just
// before a worker's repair of the pin (that worker read the log before the
// duplicate). Every view that read the full order saw the commit rejected
// and retracted: none is disputed, and the duplicate is retracted at once,
// as before, or the cleaner would let it land before the pin's repair.
func TestPinRepairAfterARetractedCommitIsNoDispute(t *testing.T) {
	topic, tid := "action-state", testTopicID(1)
	plan := newPlan("chk-0", topic, tid, events.Offsets{0: 296})
	committed := func(offset int64) Record {
		env := envelope(plan, events.Committed, 2, "apply")
		env.Boundary = plan.Offsets
		return record(offset, env)
	}
	pin := events.NewPin("sp-1", topic, tid, events.Offsets{0: 0}, time.Time{}, "rollback", testEpoch.Add(time.Second), "pinner")
	repairPin := record(5, pin)
	repairPin.Headers = []Header{{Key: HeaderMaintenance, Value: []byte(MaintenanceRepair)}, {Key: HeaderRead, Value: []byte("5")}}
	retract := Record{Offset: 3, Key: []byte(events.Key(plan.PlanID, events.Committed)),
		Headers: []Header{{Key: HeaderMaintenance, Value: []byte(MaintenanceRetraction)}}}
	log := []Record{
		record(0, envelope(plan, events.Planned, 0, "apply")),
		record(1, pin),
		committed(2), // rejected: above the pin
		retract,
		committed(4), // a late duplicate delivery
		repairPin,
	}
	st := fold(log)
	if risk, why := st.AtRisk(); risk || len(st.Disputed()) > 0 {
		t.Fatalf("a view that read the full order is at risk (%v: %s) or disputed (%v)", risk, why, st.Disputed())
	}
	rs := st.Retractions()
	if len(rs) != 1 || string(rs[0].Key) != events.Key(plan.PlanID, events.Committed) || rs[0].Offset != 4 || !rs[0].Now {
		t.Fatalf("retractions %+v, want the duplicate COMMITTED at offset 4, at once", rs)
	}
	if b := st.Boundary(); len(b) != 0 {
		t.Fatalf("boundary %s, want none: the pin rejected the only commit", b)
	}
}

// A commit rejected for a pin that lands between a worker's read and its
// repair of that pin (the repair's writer had not read it: header
// kcleanup-read at or below its offset) is no dispute: it is retracted at
// once, or the cleaner, once it removed the pin's first record, would show
// it before the pin and accepted. Without the header (an older worker's
// repair) nothing is disputed either, as before.
func TestPinRepairByAWriterThatHadNotReadTheCommitIsNoDispute(t *testing.T) {
	topic, tid := "action-state", testTopicID(1)
	plan := newPlan("chk-0", topic, tid, events.Offsets{0: 296})
	env := envelope(plan, events.Committed, 2, "apply")
	env.Boundary = plan.Offsets
	pin := events.NewPin("sp-1", topic, tid, events.Offsets{0: 0}, time.Time{}, "rollback", testEpoch.Add(time.Second), "pinner")
	for _, headers := range [][]Header{
		{{Key: HeaderMaintenance, Value: []byte(MaintenanceRepair)}, {Key: HeaderRead, Value: []byte("2")}},
		{{Key: HeaderMaintenance, Value: []byte(MaintenanceRepair)}},
	} {
		repairPin := record(3, pin)
		repairPin.Headers = headers
		st := fold([]Record{
			record(0, envelope(plan, events.Planned, 0, "apply")),
			record(1, pin),
			record(2, env), // rejected: above the pin, landed after the repair's writer read
			repairPin,
		})
		if risk, why := st.AtRisk(); risk || len(st.Disputed()) > 0 {
			t.Fatalf("headers %v: at risk (%v: %s) or disputed (%v)", headers, risk, why, st.Disputed())
		}
		rs := st.Retractions()
		if len(rs) != 1 || string(rs[0].Key) != events.Key(plan.PlanID, events.Committed) || !rs[0].Now {
			t.Fatalf("headers %v: retractions %+v, want the COMMITTED at offset 2, at once", headers, rs)
		}
	}
}

// The same window through an UNPINNED (the simulation's seed 7852): an
// operator's second UNPINNED overwrites the first's key, the repairs
// re-append the UNPINNED, the commit accepted after it and a pin that
// commit voided; the cleaner removes the first UNPINNED before the
// repairs are old enough. A fresh reader has the commit rejected by the
// first pin, the second pin active, and the worker's repaired copy of the
// commit rejected by it: a repaired COMMITTED is one another view accepted,
// so the key is disputed, never retracted, and the reader is at risk.
func TestPinRepairWindowAfterASecondUnpin(t *testing.T) {
	topic, tid := "action-state", testTopicID(1)
	plan := newPlan("chk-4", topic, tid, events.Offsets{0: 730})
	env := envelope(plan, events.Committed, 3, "apply")
	env.Boundary = plan.Offsets
	pin1 := events.NewPin("sp-21", topic, tid, events.Offsets{0: 263}, time.Time{}, "rollback", testEpoch, "pinner")
	pin2 := events.NewPin("sp-111", topic, tid, events.Offsets{0: 95}, time.Time{}, "rollback", testEpoch.Add(4*time.Second), "pinner")
	id1 := pin1.Pin.PinID
	log := []Record{
		record(0, pin1),
		record(1, events.NewUnpin(id1, "done", testEpoch.Add(time.Second), "operator")),
		record(2, envelope(plan, events.Planned, 2, "apply")),
		record(3, env),
		record(4, pin2), // void: the commit landed first
		record(5, events.NewUnpin(id1, "done", testEpoch.Add(5*time.Second), "operator")), // the second UNPINNED
	}
	full := fold(log)
	reps := full.Repairs()
	if len(reps) == 0 {
		t.Fatal("no repairs for the moved UNPINNED")
	}
	for i, r := range reps {
		r.Offset = int64(6 + i)
		r.Headers = []Header{{Key: HeaderMaintenance, Value: []byte(MaintenanceRepair)}, {Key: HeaderRead, Value: []byte("6")}}
		log = append(log, r)
	}
	full = fold(log)
	if got := full.Boundary(); got[0] != 730 {
		t.Fatalf("full history's boundary %s, want 0=730", got)
	}
	// The cleaner with offsets below 6 lag-old: the first UNPINNED goes.
	fresh := fold(compactBelow(log, 6))
	risk, why := fresh.AtRisk()
	t.Logf("%d repairs; in the window: boundary %s (full history %s); at risk %v: %s", len(reps), fresh.Boundary(), full.Boundary(), risk, why)
	if fresh.Boundary()[0] < full.Boundary()[0] && !risk {
		t.Fatalf("a fresh reader folds the boundary %s, below the full history's %s, and is not at risk", fresh.Boundary(), full.Boundary())
	}
	for _, r := range fresh.Retractions() {
		if string(r.Key) == events.Key(plan.PlanID, events.Committed) {
			t.Fatalf("a fresh reader in the window retracts the COMMITTED the full log accepted (offset %d, now %v)", r.Offset, r.Now)
		}
	}
}
