package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

func TestApplyOnFakeWalksTheLifecycle(t *testing.T) {
	c, _ := workertest.FakeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := workertest.DataTopic(t, c, "action-state", 2, 200)
	ctl := protocol.ControlTopicFor("action-state")
	proj := workertest.ControlProjection(t, ctx, c, ctl, "action-state")

	var steps []string
	o := worker.Options{Observe: func(p protocol.Progress) { steps = append(steps, p.Step) }}
	c1 := workertest.MustPlan(t, "C1", "action-state", id, events.Offsets{0: 150, 1: 120})
	out, err := c.Apply(ctx, proj, c1, o)
	if err != nil {
		t.Fatalf("apply: %+v", err)
	}
	if out.State != fsm.Applied {
		t.Fatalf("state %s, want APPLIED", out.State)
	}
	if got := strings.Join(steps, ","); got != "tombstones,check,planned,committed,tombstones,deleting,tombstones,delete-records,verify,applied" { // a tombstone scan before COMMITTED, and before DELETING and the deletion (issue 35)
		t.Fatalf("steps %s", got)
	}
	start, err := c.StartOffsets(ctx, "action-state")
	if err != nil {
		t.Fatal(err)
	}
	if start[0] != 150 || start[1] != 120 {
		t.Fatalf("log start %v, want 0:150 1:120", start)
	}

	// A fresh projection, as any replica would build, agrees.
	fresh, err := c.Project(ctx, ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if fresh.State.Digest() != proj.State.Digest() {
		t.Fatal("a fresh replay differs from the writer's projection")
	}
	if b := fresh.State.Boundary(); b[0] != 150 || b[1] != 120 {
		t.Fatalf("boundary %v", b)
	}
	if n := len(fresh.State.Rejected()); n != 0 {
		t.Fatalf("%d rejected records: %v", n, fresh.State.Rejected())
	}

	// Applying again is a no-op that says so.
	again, err := c.Apply(ctx, fresh, c1, worker.Options{})
	if err != nil || !again.Already {
		t.Fatalf("re-apply: %+v %v", again, err)
	}

	// C0 is older: it is refused before anything is written.
	before := fresh.State.Next()
	c0 := workertest.MustPlan(t, "C0", "action-state", id, events.Offsets{0: 100, 1: 120})
	_, err = c.Apply(ctx, fresh, c0, worker.Options{})
	if !errors.Is(err, protocol.ErrRejected) || !strings.Contains(err.Error(), "below the committed boundary 150") {
		t.Fatalf("apply C0: %v", err)
	}
	if err := fresh.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if fresh.State.Next() != before {
		t.Fatal("a refused plan wrote to the control topic")
	}
}

func TestApplyResumesAfterNoWait(t *testing.T) {
	c, _ := workertest.FakeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := workertest.DataTopic(t, c, "t", 1, 50)
	ctl := protocol.ControlTopicFor("t")
	proj := workertest.ControlProjection(t, ctx, c, ctl, "t")
	plan := workertest.MustPlan(t, "cp", "t", id, events.Offsets{0: 40})
	out, err := c.Apply(ctx, proj, plan, worker.Options{NoWait: true})
	if err != nil || out.State != fsm.Committed {
		t.Fatalf("no-wait: %+v %v", out, err)
	}
	if start, _ := c.StartOffsets(ctx, "t"); start[0] != 0 {
		t.Fatalf("no-wait deleted: log start %d", start[0])
	}
	pending := proj.State.Pending()
	if len(pending) != 1 || pending[0].PlanID != plan.PlanID {
		t.Fatalf("pending %v", pending)
	}
	// Two finishers racing on the same operation: both succeed, the log
	// stays clean (duplicates collapse), the operation is APPLIED once.
	other, err := c.Project(ctx, ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := c.Finish(ctx, other, plan.PlanID, worker.Options{Actor: "w2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Finish(ctx, proj, plan.PlanID, worker.Options{Actor: "w1"}); err != nil {
		t.Fatal(err)
	}
	final, err := c.Project(ctx, ctl, projector.KeepAudit())
	if err != nil {
		t.Fatal(err)
	}
	defer final.Close()
	op, _ := final.State.Operation(plan.PlanID)
	if op.State != fsm.Applied {
		t.Fatalf("state %s", op.State)
	}
	for _, v := range final.State.Audit() {
		if v.Outcome == projector.Rejected {
			t.Fatalf("rejected record in a clean race: %+v", v)
		}
	}
}

// A key whose every record was rejected is tombstoned once it is older than
// RetractionGrace, so that compaction erases the rejected record; a young
// one is left for its writer to retry under.
func TestRepairRetractsRejectedKeysAfterTheGrace(t *testing.T) {
	c, _ := workertest.FakeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := workertest.DataTopic(t, c, "t", 1, 10)
	ctl := protocol.ControlTopicFor("t")
	if err := c.EnsureControlTopic(ctx, ctl, "t", worker.Options{}); err != nil {
		t.Fatal(err)
	}
	plan := workertest.MustPlan(t, "cp", "t", id, events.Offsets{0: 5})
	// COMMITTED for a plan whose boundary field is wrong: rejected.
	bad := workertest.Envelope(events.Committed, plan, "")
	bad.Boundary = events.Offsets{0: 1}
	key, value := bad.Encode()
	old := &kgo.Record{Topic: ctl, Partition: 0, Key: key, Value: value, Timestamp: time.Now().Add(-2 * protocol.RetractionGrace)}
	young := &kgo.Record{Topic: ctl, Partition: 0, Key: []byte("garbage"), Value: []byte("{"), Timestamp: time.Now()}
	if err := c.Client().ProduceSync(ctx, old, young).FirstErr(); err != nil {
		t.Fatal(err)
	}
	proj, err := c.Project(ctx, ctl, projector.KeepAudit())
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	if n := len(proj.State.Retractions()); n != 2 {
		t.Fatalf("%d retractions, want 2", n)
	}
	if err := proj.Repair(ctx); err != nil {
		t.Fatal(err)
	}
	left := proj.State.Retractions()
	if len(left) != 1 || string(left[0].Key) != "garbage" {
		t.Fatalf("retractions after repair: %v", left)
	}
	last := proj.State.Audit()[len(proj.State.Audit())-1]
	if last.Key != string(key) || last.Reason != projector.ReasonTombstone {
		t.Fatalf("last record %+v, want a tombstone on %s", last, key)
	}
	// A second pass writes nothing more.
	next := proj.Next
	if err := proj.Repair(ctx); err != nil {
		t.Fatal(err)
	}
	if proj.Next != next {
		t.Fatal("a second repair wrote again")
	}
}
