package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/gate"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/worker"
)

// An open transaction on the control topic holds its last stable offset
// back: a reader with read_committed reads only up to it, and a COMMITTED
// appended after it (by a worker, without a transaction) is not seen. The
// gate must not call that view caught up and allow a recovery point below
// the boundary it cannot see.
func TestValidateOpenTransactionOnTheControlTopicIsNotCaughtUp(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Kafka broker")
	}
	bootstrap := kafkatest.Bootstrap(t)
	cl := kafkatest.Client(t, bootstrap)
	c := workertest.Connect(t, bootstrap)
	ctx, cancel := context.WithTimeout(context.Background(), workertest.RealTimeout)
	defer cancel()

	live := workertest.Applied(t, c, cl, "gate-open-txn")
	proj := workertest.ControlProjection(t, ctx, c, live.Ctl, live.Topic)
	c2 := workertest.MustPlan(t, "C2", live.Topic, live.ID, events.Offsets{0: 180, 1: 120})
	if v, err := c.Submit(ctx, proj, c2, worker.Options{Actor: "test/submit"}); err != nil || v.Outcome != projector.Accepted {
		t.Fatalf("submit C2: %v %+v", err, v)
	}

	txn, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.TransactionalID("gate-open-txn-writer"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Topic: live.Ctl, Partition: 0, Key: []byte("x"), Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	commit := events.Envelope{SchemaVersion: 1, Event: events.Committed, PlanID: c2.PlanID, Plan: c2, At: time.Now().UTC(),
		Actor: "test/worker", Boundary: events.Offsets{0: 180, 1: 120}}
	if _, err := c.Append(ctx, live.Ctl, commit); err != nil {
		t.Fatal(err)
	}

	markers := []events.Marker{{Topic: live.Topic, TopicID: live.ID, Offsets: events.Offsets{0: 160, 1: 120}}}
	opts := worker.ValidateOptions{ControlTopic: live.Ctl, Bootstrap: bootstrap}
	v := c.Validate(ctx, markers, opts)
	if v.Allowed || v.Class != gate.CannotTell || v.Reason != gate.NotCaughtUp || !strings.Contains(v.Message, "a transaction is still open at offset") {
		t.Fatalf("with a transaction open before COMMITTED C2 (0=180): %s %s: %s %+v", v.Class, v.Reason, v.Message, v.Notes)
	}

	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	// EndTxn returns before the abort markers are written: until they land
	// the gate may still answer not-caught-up, never allowed.
	kafkatest.Eventually(t, 30*time.Second, "the gate to see past the aborted transaction", func() bool {
		v = c.Validate(ctx, markers, opts)
		if v.Allowed {
			t.Fatalf("allowed after the abort: %s", v.Message)
		}
		return v.Reason != gate.NotCaughtUp
	})
	if v.Class != gate.Refused || v.Reason != gate.BelowBoundary {
		t.Fatalf("after the abort: %s %s: %s", v.Class, v.Reason, v.Message)
	}
}
