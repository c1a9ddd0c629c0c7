package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// A control topic whose latest COMMITTED the cleaner erased: the plan's
// DELETING and APPLIED survive. Recommit appends a COMMITTED again only
// where nothing more would be deleted, and Finish then deletes nothing.
func TestRecommitOnlyWhereNothingMoreIsDeleted(t *testing.T) {
	c, _ := workertest.FakeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := workertest.DataTopic(t, c, "action-state", 1, 400)
	ctl := protocol.ControlTopicFor("action-state")
	proj := workertest.ControlProjection(t, ctx, c, ctl, "action-state")
	o := worker.Options{Actor: "test"}

	p1 := workertest.MustPlan(t, "C1", "action-state", id, events.Offsets{0: 100})
	if _, err := c.Apply(ctx, proj, p1, o); err != nil {
		t.Fatalf("apply p1: %+v", err)
	}
	// p2 was applied (log start 300), then its COMMITTED was erased: the
	// log holds its PLANNED, DELETING and APPLIED only.
	p2 := workertest.MustPlan(t, "C2", "action-state", id, events.Offsets{0: 300})
	if _, err := c.DeleteRecords(ctx, "action-state", events.Offsets{0: 300}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []events.Event{events.Planned, events.Deleting, events.Applied} {
		env := workertest.Envelope(e, p2, o.Actor)
		if e == events.Applied {
			env.LogStart = events.Offsets{0: 300}
		}
		if _, err := c.Append(ctx, ctl, env); err != nil {
			t.Fatal(err)
		}
	}
	// p3's DELETING is forged: nothing was deleted up to 350.
	p3 := workertest.MustPlan(t, "C3", "action-state", id, events.Offsets{0: 350})
	for _, e := range []events.Event{events.Planned, events.Deleting} {
		if _, err := c.Append(ctx, ctl, workertest.Envelope(e, p3, o.Actor)); err != nil {
			t.Fatal(err)
		}
	}
	if err := proj.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if b := proj.State.Boundary(); b[0] != 350 {
		t.Fatalf("boundary %v, want 0=350: surviving DELETING records keep their plans in it", b)
	}
	if n := len(proj.State.Pending()); n != 0 {
		t.Fatalf("%d operations pending; evidence alone must never make a worker delete", n)
	}

	lines, err := c.Recommit(ctx, proj, o)
	if err != nil {
		t.Fatalf("recommit: %+v", err)
	}
	all := strings.Join(lines, "\n")
	if !strings.Contains(all, "plan "+p2.PlanID+": COMMITTED erased; re-appended") {
		t.Fatalf("p2 was not re-committed:\n%s", all)
	}
	if !strings.Contains(all, "plan "+p3.PlanID+": COMMITTED erased; not re-appended: action-state-0 has log start 300, below the plan's 350") {
		t.Fatalf("p3 (log start below its plan) was not refused with its reason:\n%s", all)
	}
	op2, _ := proj.State.Operation(p2.PlanID)
	op3, _ := proj.State.Operation(p3.PlanID)
	if op2.State != fsm.Committed || op3.State != fsm.Planned {
		t.Fatalf("p2 %s, p3 %s; want COMMITTED and PLANNED", op2.State, op3.State)
	}
	if risk, why := proj.State.AtRisk(); !risk || !strings.Contains(why, p3.PlanID) {
		t.Fatalf("AtRisk %t %q; p3's evidence is still unconfirmed", risk, why)
	}

	out, err := c.Finish(ctx, proj, p2.PlanID, o)
	if err != nil {
		t.Fatalf("finish p2: %+v", err)
	}
	if out.State != fsm.Applied || len(out.Deleted) != 0 {
		t.Fatalf("finish p2: state %s, deleted %v; want APPLIED with nothing deleted", out.State, out.Deleted)
	}
	start, err := c.StartOffsets(ctx, "action-state")
	if err != nil {
		t.Fatal(err)
	}
	if start[0] != 300 {
		t.Fatalf("log start %d, want 300: nothing more may be deleted", start[0])
	}
}
