package worker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
)

// TestBoundedReadsEndAtAFencedTransaction is issue 35, item 3: a transaction whose producer was
// fenced (a newer producer of the same transactional.id initialised, and the coordinator aborted
// it) is the last thing in the log. The stable end is then just past its abort marker, and
// every bounded read (the Flink Agents topic's, a control topic's) must finish there, within
// its deadline, having read the records before it.
func TestBoundedReadsEndAtAFencedTransaction(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Kafka broker")
	}
	f := newFlinkFixture(t)
	ctx := ctxT(t, 60*time.Second)
	p1 := f.plan(t, "chk-1", events.Offsets{0: 30, 1: 20})
	f.write(t, flinkRec("COMMITTED", p1))

	txID := "fenced-" + f.ctl
	old := kafkatest.Client(t, kafkatest.Bootstrap(t), kgo.TransactionalID(txID))
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	applied := flinkRec("APPLIED", p1)
	applied.Topic = f.ctl
	if err := old.ProduceSync(ctx, applied).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The writer dies without ending it; a newer producer of the same ID fences it.
	newer := kafkatest.Client(t, kafkatest.Bootstrap(t), kgo.TransactionalID(txID))
	if _, _, err := newer.ProducerID(ctx); err != nil { // InitProducerId: the coordinator aborts the old one
		t.Fatal(err)
	}
	end := endOffset(t, f, f.ctl)
	kafkatest.Eventually(t, 30*time.Second, "the fenced transaction is aborted (the stable end reaches the end)", func() bool {
		return stableOffset(t, f, f.ctl) == endOffset(t, f, f.ctl)
	})
	t.Logf("log end %d, stable end %d after the fence", end, endOffset(t, f, f.ctl))

	began := time.Now()
	rctx := ctxT(t, 10*time.Second)
	ft, err := f.c.ReadFlinkTopic(rctx, f.ctl)
	if err != nil {
		t.Fatalf("read the Flink Agents topic ending at a fenced transaction: %v (after %s)", err, time.Since(began))
	}
	if ops := ft.Fold.Operations(); len(ops) != 1 || ops[0].Plan.PlanID != p1.PlanID {
		t.Errorf("operations read %+v, want the plan committed before the fenced transaction", ops)
	}
	t.Logf("ReadFlinkTopic took %s", time.Since(began).Round(time.Millisecond))

	// The end a mirror writer's read may capture (settledEnd asks the high watermark and the last
	// stable offset at once): the high watermark answered before the abort marker landed, the
	// last stable offset after it. Below it the fenced transaction's record, and nothing else to
	// move the read along: the marker lies at the end. Before issue 35 the read waited for a
	// record at that offset until its deadline ("read to offset 1 of 2").
	fencedAt := end - 1 // the abort marker; the fenced record is below it
	began = time.Now()
	ft, err = f.c.ReadFlinkTopicTo(ctxT(t, 10*time.Second), f.ctl, fencedAt)
	if err != nil {
		t.Fatalf("read to an end just past the fenced record: %v (after %s)", err, time.Since(began))
	}
	if ops := ft.Fold.Operations(); len(ops) != 1 || ops[0].Plan.PlanID != p1.PlanID {
		t.Errorf("operations read %+v, want the plan committed before the fenced transaction", ops)
	}
	t.Logf("ReadFlinkTopicTo(%d) took %s", fencedAt, time.Since(began).Round(time.Millisecond))

	// A kcleanup control topic read the same way (the gate's fresh read), to both ends.
	proj := f.c.OpenBoundedProjection(f.ctl)
	defer proj.Close()
	if err := proj.ReadTo(ctxT(t, 10*time.Second), fencedAt); err != nil {
		t.Fatalf("bounded read of a control topic to just past the fenced record: %v", err)
	}
	if err := proj.CatchUp(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("bounded read of a control topic ending at a fenced transaction: %v", err)
	}
}

func endOffset(t *testing.T, f *flinkFixture, topic string) int64 {
	t.Helper()
	lo, err := kadm.NewClient(f.cl).ListEndOffsets(ctxT(t, 10*time.Second), topic)
	o, ok := lo.Lookup(topic, 0)
	if err != nil || !ok || o.Err != nil {
		t.Fatalf("end offset of %s: %v %v", topic, err, o.Err)
	}
	return o.Offset
}

func stableOffset(t *testing.T, f *flinkFixture, topic string) int64 {
	t.Helper()
	lo, err := kadm.NewClient(f.cl).ListCommittedOffsets(ctxT(t, 10*time.Second), topic)
	o, ok := lo.Lookup(topic, 0)
	if err != nil || !ok || o.Err != nil {
		t.Fatalf("last stable offset of %s: %v %v", topic, err, o.Err)
	}
	return o.Offset
}
