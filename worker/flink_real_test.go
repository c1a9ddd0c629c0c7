package worker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// flinkFixture is a data topic with 100 records per partition and a control
// topic in Flink Agents' format, on the real broker.
type flinkFixture struct {
	c         *worker.Cluster
	cl        *kgo.Client
	data, ctl string
	id        string
}

func newFlinkFixture(t *testing.T) *flinkFixture {
	t.Helper()
	boot := kafkatest.Bootstrap(t)
	cl := kafkatest.Client(t, boot)
	data := kafkatest.NewTopic(t, cl, "flink-data", 2, map[string]string{
		"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1"})
	ctl := kafkatest.NewTopic(t, cl, "flink-ctl", 1, map[string]string{"cleanup.policy": "compact"})
	var recs []*kgo.Record
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 100; i++ {
			recs = append(recs, &kgo.Record{Topic: data, Partition: p, Key: []byte{byte(i)}, Value: []byte("v")})
		}
	}
	ctx := ctxT(t, 30*time.Second)
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c := workertest.Connect(t, boot)
	info, err := c.TopicMetadata(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	return &flinkFixture{c: c, cl: cl, data: data, ctl: ctl, id: info.ID}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func (f *flinkFixture) plan(t *testing.T, rp string, offs events.Offsets) events.Plan {
	t.Helper()
	p, err := events.BuildPlan(rp, []events.Marker{{Topic: f.data, TopicID: f.id, Offsets: offs}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// write appends records to the Flink Agents control topic as its tool does.
func (f *flinkFixture) write(t *testing.T, recs ...*kgo.Record) {
	t.Helper()
	for _, r := range recs {
		r.Topic = f.ctl
	}
	if err := f.cl.ProduceSync(ctxT(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func flinkRec(status string, p events.Plan) *kgo.Record {
	return &kgo.Record{Key: []byte(p.PlanID), Value: kafkatest.FlinkRecord(status, p)}
}

// Reading and adoption of a Flink Agents control topic on the real broker:
// the fold reads read_committed (an aborted tombstone does not fail it),
// the effective boundary is the per-partition maximum, adoption writes the
// plans as kcleanup plans with their IDs and ends at the same boundary,
// APPLIED only where the live log starts prove it, and a re-run adopts
// nothing new.
func TestFlinkTopicReadAndAdopt(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Kafka broker")
	}
	f := newFlinkFixture(t)
	ctx := ctxT(t, 90*time.Second)
	p1 := f.plan(t, "chk-1", events.Offsets{0: 30, 1: 20})
	p2 := f.plan(t, "chk-2", events.Offsets{0: 60, 1: 20})
	f.write(t, flinkRec("COMMITTED", p1))
	if _, err := f.c.DeleteRecords(ctx, f.data, p1.Offsets); err != nil {
		t.Fatal(err)
	}
	f.write(t, flinkRec("APPLIED", p1))

	// An aborted transaction's tombstone: read_committed never sees it.
	tx := kafkatest.Client(t, kafkatest.Bootstrap(t), kgo.TransactionalID("flink-abort-"+f.ctl))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, &kgo.Record{Topic: f.ctl, Key: []byte(p1.PlanID)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := tx.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	f.write(t, flinkRec("COMMITTED", p2))

	ft, err := f.c.ReadFlinkTopic(ctx, f.ctl)
	if err != nil {
		t.Fatal(err)
	}
	if err := ft.Check(); err != nil {
		t.Fatalf("the fold failed: %v", err)
	}
	b, err := ft.Fold.Boundary(f.data, f.id, []int32{0, 1})
	if err != nil || !b.Equal(events.Offsets{0: 60, 1: 20}) {
		t.Fatalf("effective boundary %v (%v), want 0=60 1=20", b, err)
	}
	if err := ft.Fold.Validate([]events.Marker{{Topic: f.data, TopicID: f.id, Offsets: events.Offsets{0: 59, 1: 90}}}); !errors.Is(err, flinkagents.ErrRefused) ||
		!strings.Contains(err.Error(), "from offset 59 because the committed cleanup boundary is 60") {
		t.Fatalf("validate below the boundary: %v", err)
	}

	kctl := kafkatest.NewTopic(t, f.cl, "flink-adopted.kcleanup", 1, map[string]string{"cleanup.policy": "compact"})
	proj, err := f.c.Project(ctx, kctl)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	src, err := f.c.PrepareAdoption(ctx, f.ctl)
	if err != nil {
		t.Fatal(err)
	}
	if !src.Boundary.Equal(b) {
		t.Fatalf("prepared boundary %v, want %v", src.Boundary, b)
	}
	ad, err := f.c.Adopt(ctx, src, proj, worker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !ad.Boundary.Equal(b) || !proj.State.Boundary().Equal(b) {
		t.Fatalf("kcleanup boundary %v, Flink Agents' effective boundary %v", proj.State.Boundary(), b)
	}
	want := map[string]fsm.State{p1.PlanID: fsm.Applied, p2.PlanID: fsm.Committed}
	for id, st := range want {
		op, ok := proj.State.Operation(id)
		if !ok || op.State != st {
			t.Errorf("plan %s: %v %s, want %s", id, ok, op.State, st)
		}
		if err := op.Plan.Validate(); err != nil {
			t.Errorf("adopted plan %s does not verify: %v", id, err)
		}
	}
	if len(ad.Plans) != 2 || ad.Plans[0].PlanID != p1.PlanID || ad.Plans[1].PlanID != p2.PlanID {
		t.Fatalf("adopted %+v, want p1 then p2", ad.Plans)
	}
	// kcleanup's own gate now refuses what the job refuses.
	if v := f.c.Validate(ctx, []events.Marker{{Topic: f.data, TopicID: f.id, Offsets: events.Offsets{0: 59, 1: 90}}},
		worker.ValidateOptions{ControlTopic: proj.Topic}); v.Allowed {
		t.Fatal("kcleanup allowed a recovery point the job refuses")
	}

	next := proj.Next
	src, err = f.c.PrepareAdoption(ctx, f.ctl)
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.c.Adopt(ctx, src, proj, worker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ap := range again.Plans {
		if !ap.Already {
			t.Errorf("re-run adopted %s again", ap.PlanID)
		}
	}
	if proj.Next != next {
		t.Fatalf("a re-run wrote records: next %d -> %d", next, proj.Next)
	}
}

// Every failure of the job's fold makes adoption refuse and write nothing.
// An open transaction on a Flink Agents control topic pins its last stable
// offset below a plan committed after the transaction began: a reader that
// stopped there would miss the plan's boundary. ReadFlinkTopic is not caught
// up until the transaction ends, and then sees the plan.
func TestFlinkTopicOpenTransactionIsNotCaughtUp(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Kafka broker")
	}
	f := newFlinkFixture(t)
	ctx := ctxT(t, 90*time.Second)
	p1 := f.plan(t, "chk-1", events.Offsets{0: 30, 1: 20})
	tx := kafkatest.Client(t, kafkatest.Bootstrap(t), kgo.TransactionalID("flink-open-"+f.ctl))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, &kgo.Record{Topic: f.ctl, Key: []byte(p1.PlanID)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	f.write(t, flinkRec("COMMITTED", p1))

	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if ft, err := f.c.ReadFlinkTopic(short, f.ctl); !errors.Is(err, worker.ErrNotCaughtUp) || !strings.Contains(fmt.Sprint(err), "transaction is still open") {
		t.Fatalf("read with an open transaction: %v (fold %+v), want ErrNotCaughtUp naming the transaction", err, ft)
	}
	if err := tx.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	ft, err := f.c.ReadFlinkTopic(ctx, f.ctl)
	if err != nil {
		t.Fatal(err)
	}
	if err := ft.Check(); err != nil {
		t.Fatalf("the fold failed: %v", err)
	}
	if b, err := ft.Fold.Boundary(f.data, f.id, []int32{0, 1}); err != nil || !b.Equal(p1.Offsets) {
		t.Fatalf("effective boundary %v (%v), want %v", b, err, p1.Offsets)
	}
}

func TestFlinkAdoptRefusesWhatTheJobCannotRead(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Kafka broker")
	}
	f := newFlinkFixture(t)
	ctx := ctxT(t, 60*time.Second)
	p1 := f.plan(t, "chk-1", events.Offsets{0: 30, 1: 20})
	f.write(t, flinkRec("APPLIED", p1), &kgo.Record{Key: []byte(p1.PlanID)}) // a tombstone
	_, err := f.c.PrepareAdoption(ctx, f.ctl)
	if !errors.Is(err, protocol.ErrRejected) || !strings.Contains(err.Error(), "tombstone") {
		t.Fatalf("adopt over a tombstone: %v", err)
	}
}

// kcleanup never writes to a control topic in Flink Agents' format: one
// kcleanup event, repair or retraction tombstone there would make the
// job's recovery fail. Decide and Repair (which a worker owning the topic
// runs every pass) refuse with ErrBlocked, and the topic's end stays put.
func TestFlinkTopicIsNeverWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Kafka broker")
	}
	f := newFlinkFixture(t)
	ctx := ctxT(t, 60*time.Second)
	p1 := f.plan(t, "chk-1", events.Offsets{0: 30, 1: 20})
	f.write(t, flinkRec("COMMITTED", p1), &kgo.Record{Key: []byte("stray"), Value: []byte("x")})
	proj, err := f.c.Project(ctx, f.ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	if got := proj.Format(); got != projector.FormatFlinkAgents {
		t.Fatalf("format %q, want %q", got, projector.FormatFlinkAgents)
	}
	if len(proj.State.Retractions()) == 0 {
		t.Fatal("the test needs keys the fold would retract")
	}
	end := proj.Next
	if _, err := proj.Decide(ctx, workertest.Envelope(events.Planned, p1, "")); !errors.Is(err, protocol.ErrBlocked) || !strings.Contains(err.Error(), "never writes") {
		t.Fatalf("Decide on a Flink Agents topic: %v", err)
	}
	if err := proj.Repair(ctx); !errors.Is(err, protocol.ErrBlocked) {
		t.Fatalf("Repair on a Flink Agents topic: %v", err)
	}
	ends, err := f.c.EndOffsets(ctx, f.ctl)
	if err != nil || ends[0] != end {
		t.Fatalf("the Flink Agents topic grew from %d to %v (%v)", end, ends, err)
	}
}

// In a mixed control topic kcleanup's accepted records are still repaired,
// but no new event is decided, and Flink Agents' records are never
// tombstoned as retractions.
func TestMixedTopicRepairsButNeverRetractsFlinkKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Kafka broker")
	}
	f := newFlinkFixture(t)
	ctx := ctxT(t, 60*time.Second)
	p1 := f.plan(t, "chk-1", events.Offsets{0: 30, 1: 20})
	key, value := workertest.Envelope(events.Planned, p1, "").Encode()
	old := flinkRec("COMMITTED", p1)
	old.Timestamp = time.Now().Add(-2 * protocol.RetractionGrace) // past the grace: a retraction candidate
	f.write(t, &kgo.Record{Key: key, Value: value}, old)
	proj, err := f.c.Project(ctx, f.ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	if got := proj.Format(); got != projector.FormatMixed {
		t.Fatalf("format %q, want %q", got, projector.FormatMixed)
	}
	if _, err := proj.Decide(ctx, workertest.Envelope(events.Planned, p1, "")); !errors.Is(err, protocol.ErrBlocked) {
		t.Fatalf("Decide on a mixed topic: %v", err)
	}
	if rs := proj.State.Retractions(); len(rs) != 1 || string(rs[0].Key) != p1.PlanID {
		t.Fatalf("retractions %+v: the test needs the Flink Agents key listed", rs)
	}
	end := proj.Next
	if err := proj.Repair(ctx); err != nil {
		t.Fatalf("Repair on a mixed topic: %v", err)
	}
	ends, err := f.c.EndOffsets(ctx, f.ctl)
	if err != nil || ends[0] != end {
		t.Fatalf("Repair wrote to the mixed topic: end %d -> %v (%v)", end, ends, err)
	}
}
