package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
)

// TestWorkerWithoutGraceFlagWaitsOutTheAttachmentsGrace: the restore grace
// belongs to the control topic (issue 30). The mirror is attached with a
// grace of 20 seconds; a worker started with no --restore-grace at all, and
// one with a shorter one, both wait it out: nothing is deleted until 20
// seconds after the mirror's COMMITTED of the plan was acknowledged, and
// /v1/status lists the wait until then. Real broker.
func TestWorkerWithoutGraceFlagWaitsOutTheAttachmentsGrace(t *testing.T) {
	const grace = 20 * time.Second
	_, c, admin := workertest.RealBroker(t)
	rc := workertest.RealControlled(t, c, admin, "log-grace", 50)
	data, ctl := rc.Topic, rc.Ctl
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	mirror := kafkatest.NewTopic(t, admin, data+".flink", 1, map[string]string{"cleanup.policy": "compact"})
	proj, err := c.Project(ctx, ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	att, err := c.AttachMirror(ctx, proj, mirror, "test", worker.Options{Actor: "test", AttachGrace: grace, AttachWithGrace: true})
	if err != nil {
		t.Fatal(err)
	}
	if !att.HasGrace || att.RestoreGrace != grace {
		t.Fatalf("attachment %+v: want it to carry the grace %s", att, grace)
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

	// One replica with no flag, one with a shorter grace of its own: the
	// owner, whichever it is, waits out the attachment's.
	base := []Option{WithControlTopics(ctl), WithGroupTimings(6*time.Second, 500*time.Millisecond, 10*time.Second),
		WithPollInterval(100 * time.Millisecond), WithBackoff(50*time.Millisecond, time.Second), WithShutdownGrace(time.Second)}
	a := startDaemon(t, c, base...)
	b := startDaemon(t, c, append(base, WithRestoreGrace(time.Second))...)
	var g report.GraceOperation
	kafkatest.Eventually(t, 60*time.Second, "the owner mirrors the plan and waits out the attachment's grace", func() bool {
		for _, r := range []*running{a, b} {
			for _, ts := range r.d.WorkerStatusView(false).ControlTopics {
				for _, w := range ts.RestoreGrace {
					if w.PlanID == plan.PlanID {
						g = w
						return true
					}
				}
			}
		}
		return false
	})
	if got := g.Until.Sub(g.Since); got != grace {
		t.Fatalf("the owner waits %s (from %s until %s), want the attachment's %s", got, g.Since, g.Until, grace)
	}
	for time.Now().Before(g.Until.Add(-time.Second)) {
		starts, err := c.StartOffsets(ctx, data)
		if err != nil {
			t.Fatal(err)
		}
		if starts[0] != 0 || starts[1] != 0 {
			t.Fatalf("log starts %s at %s: deleted before the attachment's grace was out at %s", starts, time.Now().Format(time.RFC3339Nano), g.Until.Format(time.RFC3339Nano))
		}
		time.Sleep(250 * time.Millisecond)
	}
	kafkatest.Eventually(t, 60*time.Second, "the owner applies the plan after the grace", func() bool {
		return stateOf(t, c, ctl, plan.PlanID) == fsm.Applied
	})
	if err := proj.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	op, _ := proj.State.Operation(plan.PlanID)
	for _, h := range op.History {
		if h.Event == events.Deleting && h.At.Before(g.Until) {
			t.Fatalf("DELETING at %s (by %s), before the attachment's grace was out at %s", h.At, h.Actor, g.Until)
		}
	}
}
