package worker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector"
)

// A plan over enough partitions makes control records larger
// than Kafka's 1 MB default; the control topic and the producer are set up
// for them, and the record is read back whole. Real broker: kfake does not
// enforce max.message.bytes.
func TestLargeControlRecordsFit(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Kafka broker")
	}
	c := workertest.Connect(t, kafkatest.Bootstrap(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ctl := fmt.Sprintf("large-%d.kcleanup", time.Now().UnixNano())
	if _, err := c.CreateControlTopic(ctx, ctl, 1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = kadm.NewClient(c.Client()).DeleteTopic(context.Background(), ctl) })

	offs := events.Offsets{}
	for p := int32(0); p < 200_000; p++ {
		offs[p] = 100_000_000 + int64(p)*7_919_777%899_999_999 // varied, as real offsets are: compression must not hide the size
	}
	plan, err := events.BuildPlan("cp", []events.Marker{{Topic: "big", TopicID: "Xw8WDWFFGCB7AAZnSGmHfw", Offsets: offs}})
	if err != nil {
		t.Fatal(err)
	}
	env := workertest.Envelope(events.Planned, plan, "")
	if _, v := env.Encode(); len(v) <= 3<<20 {
		t.Fatalf("record is %d bytes; the test needs one above 3 MiB (compression)", len(v))
	}
	proj, err := c.Project(ctx, ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	v, err := proj.Decide(ctx, env)
	if err != nil {
		t.Fatalf("append a %d-partition PLANNED: %v", len(offs), err)
	}
	if v.Outcome != projector.Accepted && v.Outcome != projector.Duplicate {
		t.Fatalf("verdict %+v", v)
	}
	if op, ok := proj.State.Operation(plan.PlanID); !ok || len(op.Plan.Offsets) != len(offs) {
		t.Fatal("the large plan was not read back whole")
	}
}
