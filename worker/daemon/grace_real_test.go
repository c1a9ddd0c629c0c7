package daemon

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
)

// TestRestoreGraceSurvivesAnOwnerStoppedMidWait: with a Flink Agents
// mirror attached and --restore-grace D, the owner writes the plan's
// COMMITTED to the mirror and then deletes nothing until D after the
// brokers made that record readable (its commit marker's timestamp): it
// lists the wait in /v1/status with that instant, while the data topic
// keeps every record. Stopped mid-wait, it is replaced by a second replica,
// which waits until the same instant (the record's time, not its own first
// sight), then deletes: the DELETING it appends, and so its DeleteRecords,
// comes no earlier. Real broker.
func TestRestoreGraceSurvivesAnOwnerStoppedMidWait(t *testing.T) {
	const grace = 25 * time.Second
	_, c, admin := workertest.RealBroker(t)
	rc := workertest.RealControlled(t, c, admin, "restore-grace", 50)
	data, ctl := rc.Topic, rc.Ctl
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	mirror := kafkatest.NewTopic(t, admin, data+".flink", 1, map[string]string{"cleanup.policy": "compact"})
	proj, err := c.Project(ctx, ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	if _, err := c.AttachMirror(ctx, proj, mirror, "test", worker.Options{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	info, err := c.TopicMetadata(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := events.BuildPlan("cp-1", []events.Marker{{Topic: data, TopicID: info.ID, Offsets: events.Offsets{0: 20, 1: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, c, ctl, plan)

	untouched := func(when string) {
		t.Helper()
		starts, err := c.StartOffsets(ctx, data)
		if err != nil {
			t.Fatal(err)
		}
		if starts[0] != 0 || starts[1] != 0 {
			t.Fatalf("%s: log starts %s: records were deleted inside the restore grace", when, starts)
		}
		if st := stateOf(t, c, ctl, plan.PlanID); st != fsm.Committed {
			t.Fatalf("%s: plan is %s inside the restore grace, want COMMITTED (no DELETING)", when, st)
		}
	}
	waiting := func(r *running) (report.GraceOperation, bool) {
		for _, ts := range r.d.WorkerStatusView(false).ControlTopics {
			for _, g := range ts.RestoreGrace {
				if g.PlanID == plan.PlanID {
					return g, true
				}
			}
		}
		return report.GraceOperation{}, false
	}
	opts := []Option{WithControlTopics(ctl), WithRestoreGrace(grace), WithGroupTimings(6*time.Second, 500*time.Millisecond, 10*time.Second),
		WithPollInterval(100 * time.Millisecond), WithBackoff(50*time.Millisecond, time.Second), WithShutdownGrace(time.Second)}

	first := startDaemon(t, c, opts...)
	var g1 report.GraceOperation
	kafkatest.Eventually(t, 60*time.Second, "the first owner mirrors the plan and waits out the grace", func() bool {
		var ok bool
		g1, ok = waiting(first)
		return ok
	})
	untouched("the first owner waits")
	// /v1/status lists the wait in its schema; the metrics count it (so
	// that KcleanupOperationStuck does not take it for a stuck operation).
	body := serve(t, first.d.Handler(), "/v1/status")
	workertest.ValidateWorkerStatus(t, body)
	if !strings.Contains(string(body), `"restoreGrace"`) {
		t.Fatalf("/v1/status does not list the wait:\n%s", body)
	}
	if m := string(serve(t, first.d.Handler(), "/metrics")); !strings.Contains(m, `kcleanup_restore_grace_operations{control_topic="`+ctl+`"} 1`) {
		t.Fatalf("/metrics does not count the wait:\n%s", m)
	}
	if !g1.TimeKnown || g1.Mirror != mirror {
		t.Fatalf("the wait %+v: want mirror %s and the record's time known (its commit marker)", g1, mirror)
	}
	// The instant comes from the mirror record: its commit marker's broker
	// timestamp, which every reader reads alike.
	v, err := c.ReadMirror(ctx, mirror)
	if err != nil {
		t.Fatal(err)
	}
	var off int64 = -1
	for _, o := range v.Fold.Operations() {
		if o.Plan.PlanID == plan.PlanID && o.Status == flinkagents.Committed {
			off = o.First
		}
	}
	acked, ok := v.Visible[off]
	if off < 0 || !ok {
		t.Fatalf("the mirror holds no COMMITTED of the plan with a known time: %+v, visible %v", v.Fold.Operations(), v.Visible)
	}
	if !g1.Since.Equal(acked) || !g1.Until.Equal(acked.Add(grace)) {
		t.Fatalf("the owner waits from %s until %s; the mirror's record was acknowledged at %s: want until %s", g1.Since, g1.Until, acked, acked.Add(grace))
	}

	// The first owner stops mid-wait (before the grace is out) and a
	// second replica takes over.
	first.cancel()
	<-first.done
	untouched("the first owner stopped")
	second := startDaemon(t, c, opts...)
	var g2 report.GraceOperation
	kafkatest.Eventually(t, 60*time.Second, "the second owner resumes the wait", func() bool {
		var ok bool
		g2, ok = waiting(second)
		return ok
	})
	untouched("the second owner waits")
	if !g2.Until.Equal(g1.Until) {
		t.Fatalf("the second owner waits until %s, the first until %s: a resumed wait must end at the record's time plus the grace", g2.Until, g1.Until)
	}
	kafkatest.Eventually(t, 90*time.Second, "the second owner applies the plan after the grace", func() bool {
		return stateOf(t, c, ctl, plan.PlanID) == fsm.Applied
	})
	starts, err := c.StartOffsets(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	if starts[0] < 20 || starts[1] < 10 {
		t.Fatalf("log starts %s after APPLIED, want at or above %s", starts, plan.Offsets)
	}
	if err := proj.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	op, _ := proj.State.Operation(plan.PlanID)
	for _, h := range op.History {
		if h.Event == events.Deleting && h.At.Before(g1.Until) {
			t.Fatalf("DELETING at %s (by %s), before the grace was out at %s: DeleteRecords follows it", h.At, h.Actor, g1.Until)
		}
	}
}

// serve is h's answer to GET path.
func serve(t *testing.T, h http.Handler, path string) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", path, rec.Code, body)
	}
	return body
}
