package daemon

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
)

// A COMMITTED whose plan is above the high watermark (any producer can
// write one; apply refuses the plan) is blocked with its reason, and an
// attempt appends nothing: no DELETING per attempt.
func TestFinishBlocksAPlanAboveTheHighWatermark(t *testing.T) {
	c, _ := workertest.FakeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := workertest.DataTopic(t, c, "action-state", 2, 100)
	ctl := protocol.ControlTopicFor("action-state")
	proj := workertest.ControlProjection(t, ctx, c, ctl, "action-state")
	o := worker.Options{Actor: "script"}

	plan := workertest.MustPlan(t, "C9", "action-state", id, events.Offsets{0: 50, 1: 500})
	for _, e := range []events.Event{events.Planned, events.Committed} {
		env := workertest.Envelope(e, plan, o.Actor)
		if e == events.Committed {
			env.Boundary = plan.Offsets.Clone()
		}
		if _, err := c.Append(ctx, ctl, env); err != nil {
			t.Fatal(err)
		}
	}
	for attempt := 1; attempt <= 3; attempt++ {
		out, err := c.Finish(ctx, proj, plan.PlanID, o)
		if !errors.Is(err, protocol.ErrBlocked) || !worker.Permanent(err) {
			t.Fatalf("attempt %d: %v; want a blocked error", attempt, err)
		}
		if !strings.Contains(err.Error(), "action-state-1: the plan deletes up to offset 500, above the high watermark 100") {
			t.Fatalf("attempt %d: the error does not name the partition and both offsets: %v", attempt, err)
		}
		if len(errors.GetAllHints(err)) == 0 {
			t.Fatalf("attempt %d: no hint: %v", attempt, err)
		}
		op, _ := proj.State.Operation(plan.PlanID)
		if op.State != fsm.Committed || op.DeleteAttempts != 0 || out.State != fsm.Committed {
			t.Fatalf("attempt %d: state %s with %d DELETING records; want COMMITTED and none appended", attempt, op.State, op.DeleteAttempts)
		}
	}
	start, err := c.StartOffsets(ctx, "action-state")
	if err != nil {
		t.Fatal(err)
	}
	if start[0] != 0 || start[1] != 0 {
		t.Fatalf("log start %v: nothing may be deleted", start)
	}
}

// The worker reports such an operation blocked, with its reason, and retries
// it only on the blocked schedule: the control topic gains no DELETING.
func TestDaemonBlocksAPlanAboveTheHighWatermark(t *testing.T) {
	c := fakeGroupCluster(t)
	id, ctl := setup(t, c, "action-state")
	plan := workertest.MustPlan(t, "C9", "action-state", id, events.Offsets{0: 150, 1: 900})
	ctx := context.Background()
	for _, e := range []events.Event{events.Planned, events.Committed} {
		env := workertest.Envelope(e, plan, "script")
		if e == events.Committed {
			env.Boundary = plan.Offsets.Clone()
		}
		if _, err := c.Append(ctx, ctl, env); err != nil {
			t.Fatal(err)
		}
	}
	r := startDaemon(t, c, fastOptions(t, ctl)...)
	srv := httptest.NewServer(r.d.Handler())
	defer srv.Close()
	var st report.TopicStatus
	kafkatest.Eventually(t, 20*time.Second, "the operation shows as blocked", func() bool {
		st = report.TopicStatus{}
		getJSON(t, srv.URL+"/v1/status?controlTopic="+ctl, &st)
		return len(st.Blocked) == 1
	})
	if !strings.Contains(st.Blocked[0].Reason, "action-state-1: the plan deletes up to offset 900, above the high watermark 200") {
		t.Fatalf("blocked %+v: the reason does not name the partition and both offsets", st.Blocked[0])
	}
	time.Sleep(300 * time.Millisecond) // several poll intervals; asserting that nothing happens needs time
	n, retries := r.d.metrics.attemptCount(ctl, "blocked"), r.d.metrics.attemptCount(ctl, "retry")
	if n != 1 || retries != 0 {
		t.Fatalf("attempted %v times blocked and %v as transient within 300ms, want 1 and 0", n, retries)
	}
	proj, err := c.Project(ctx, ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	if op, _ := proj.State.Operation(plan.PlanID); op.State != fsm.Committed || op.DeleteAttempts != 0 {
		t.Fatalf("operation %s with %d DELETING records; want COMMITTED and none", op.State, op.DeleteAttempts)
	}
}

// Two served control topics bound to the same topic incarnation: each is blind to the other's
// boundary, so the fleet starts no deletion on either and shows the operation blocked with
// why and the fix, and /readyz names it for both (issue 20 item 4). The control topic gains
// no DELETING.
func TestDaemonBlocksTwoControlTopicsOfOneTopic(t *testing.T) {
	c := fakeGroupCluster(t)
	id, ctl := setup(t, c, "action-state")
	ctx := context.Background()
	second := "action-state-ops.kcleanup"
	if err := c.EnsureControlTopic(ctx, second, "action-state", worker.Options{}); err != nil {
		t.Fatal(err)
	}
	other := workertest.MustPlan(t, "C1", "action-state", id, events.Offsets{0: 10, 1: 10})
	if _, err := c.Append(ctx, second, workertest.Envelope(events.Planned, other, "old-kcleanup")); err != nil {
		t.Fatal(err)
	}
	plan := workertest.MustPlan(t, "C9", "action-state", id, events.Offsets{0: 50, 1: 50})
	commit(t, c, ctl, plan)

	r := startDaemon(t, c, fastOptions(t, ctl, second)...)
	srv := httptest.NewServer(r.d.Handler())
	defer srv.Close()
	var st report.TopicStatus
	kafkatest.Eventually(t, 20*time.Second, "the operation shows as blocked", func() bool {
		st = report.TopicStatus{}
		getJSON(t, srv.URL+"/v1/status?controlTopic="+ctl, &st)
		return len(st.Blocked) == 1
	})
	if want := "control topics " + ctl + " and " + second + " both govern topic action-state"; !strings.Contains(st.Blocked[0].Reason, want) {
		t.Fatalf("blocked %+v, want %q", st.Blocked[0], want)
	}
	if got := stateOf(t, c, ctl, plan.PlanID); got != fsm.Committed {
		t.Fatalf("state %s, want COMMITTED: nothing may be deleted while both are bound", got)
	}
	// /readyz names it for both, pending work or not, with the fix.
	var ready readiness
	getJSON(t, srv.URL+"/readyz", &ready)
	for _, topic := range []string{ctl, second} {
		if g := ready.Governance[topic]; !strings.Contains(g, "both govern topic action-state") || !strings.Contains(g, "fix: keep one control topic per data topic") {
			t.Errorf("/readyz governance[%s] = %q", topic, g)
		}
	}
	start, err := c.StartOffsets(ctx, "action-state")
	if err != nil {
		t.Fatal(err)
	}
	if start[0] != 0 || start[1] != 0 {
		t.Fatalf("log start %v: nothing may be deleted", start)
	}
}
