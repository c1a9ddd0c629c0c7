package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

func TestPreviewOnFake(t *testing.T) {
	c, _ := workertest.FakeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := workertest.DataTopic(t, c, "t", 2, 100)
	ctl := protocol.ControlTopicFor("t")

	// No control topic: no boundary, Preview does not create one, and it refuses as apply
	// does (no writer creates a control topic: init does).
	pv, err := c.Preview(ctx, ctl, workertest.MustPlan(t, "C1", "t", id, events.Offsets{0: 40, 1: 60}), worker.Options{})
	if err != nil || !errors.Is(pv.Refusal, protocol.ErrNoControlTopic) || !strings.Contains(strings.Join(errors.GetAllHints(pv.Refusal), "\n"), "kcleanup init --topic t") {
		t.Fatalf("preview: %v %v", err, pv.Refusal)
	}
	if pv.ControlTopicExists || len(pv.Partitions) != 2 || pv.Partitions[0].PlanOffset != 40 || pv.Partitions[1].PlanOffset != 60 {
		t.Fatalf("preview %+v", pv)
	}
	if _, err := c.TopicMetadata(ctx, ctl); !errors.Is(err, worker.ErrTopicNotFound) {
		t.Fatalf("control topic after Preview: %v", err)
	}

	// Commit C1; a plan below it previews with the boundary and a refusal.
	proj := workertest.ControlProjection(t, ctx, c, ctl, "t")
	c1 := workertest.MustPlan(t, "C1", "t", id, events.Offsets{0: 40, 1: 60})
	if _, err := c.Apply(ctx, proj, c1, worker.Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	pv, err = c.Preview(ctx, ctl, workertest.MustPlan(t, "C0", "t", id, events.Offsets{0: 50, 1: 30}), worker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p1 := pv.Partitions[1]
	if !pv.ControlTopicExists || p1.Boundary == nil || *p1.Boundary != 60 || p1.BoundarySetBy != c1.PlanID {
		t.Fatalf("preview %+v", pv)
	}
	if !errors.Is(pv.Refusal, protocol.ErrRejected) || !strings.Contains(pv.Refusal.Error(), "partition 1: plan offset 30 is below the committed boundary 60") ||
		strings.Contains(pv.Refusal.Error(), "partition 0") {
		t.Fatalf("refusal %v", pv.Refusal)
	}

	// A partition the topic lacks has no row; Preflight names it.
	pv, err = c.Preview(ctx, ctl, workertest.MustPlan(t, "C2", "t", id, events.Offsets{0: 50, 1: 70, 2: 5}), worker.Options{})
	if err != nil || len(pv.Partitions) != 2 || pv.Refusal == nil || !strings.Contains(pv.Refusal.Error(), "has partitions [0 1] but the plan covers [0 1 2]") {
		t.Fatalf("extra partition: %+v %v", pv, err)
	}
}

// TestPrepareControlTopicCreatesNothing: apply and submit never create a control topic
// (issue 35): a missing one is refused with init's fix; an existing one is checked.
func TestPrepareControlTopicCreatesNothing(t *testing.T) {
	c, _ := workertest.FakeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := workertest.DataTopic(t, c, "t", 1, 10)
	ctl := protocol.ControlTopicFor("t")

	err := c.PrepareControlTopic(ctx, ctl, workertest.MustPlan(t, "C1", "t", id, events.Offsets{0: 10}), worker.Options{})
	if !errors.Is(err, protocol.ErrRejected) || !errors.Is(err, protocol.ErrNoControlTopic) {
		t.Fatalf("missing control topic: %v", err)
	}
	if _, err := c.TopicMetadata(ctx, ctl); !errors.Is(err, worker.ErrTopicNotFound) {
		t.Fatalf("PrepareControlTopic created the control topic: %v", err)
	}
	if _, err := c.CreateControlTopic(ctx, ctl, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.PrepareControlTopic(ctx, ctl, workertest.MustPlan(t, "C1", "t", id, events.Offsets{0: 10}), worker.Options{}); err != nil {
		t.Fatalf("existing control topic: %v", err)
	}
}
