package worker_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/worker"
)

// newClients counts the Kafka clients made with a cluster's options.
type newClients struct{ n atomic.Int64 }

func (h *newClients) OnNewClient(*kgo.Client) { h.n.Add(1) }

// The bounded reads of a cluster (a mirror read as the Flink Agents job
// reads it, the gate's fresh read of a control topic) fetch on the
// cluster's own client instead of making a client each (issue 23, items 4
// and 6: an apply with a mirror attached made seven), and read what a
// consumer reads: each topic's own records, and after a topic is deleted
// and recreated under the same name only the new one's.
func TestBoundedReadsMakeNoClient(t *testing.T) {
	boot := kafkatest.Bootstrap(t)
	cl := kafkatest.Client(t, boot)
	ctx := ctxT(t, 2*time.Minute)
	compact := map[string]string{"cleanup.policy": "compact"}
	a := kafkatest.NewTopic(t, cl, "bounded-a", 1, compact)
	b := kafkatest.NewTopic(t, cl, "bounded-b", 1, compact)
	plan := func(rp string) events.Plan {
		p, err := events.BuildPlan(rp, []events.Marker{{Topic: "data", TopicID: "q1zrJqN9Sy6tLFW2q_4mPA", Offsets: events.Offsets{0: 10}}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	write := func(topic string, plans ...events.Plan) {
		t.Helper()
		for _, p := range plans {
			r := &kgo.Record{Topic: topic, Key: []byte(p.PlanID), Value: kafkatest.FlinkRecord("COMMITTED", p)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(a, plan("a1"), plan("a2"))
	write(b, plan("b1"))

	count := &newClients{}
	c, err := worker.Connect(kgo.SeedBrokers(boot), kgo.WithHooks(count))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	read := func(topic string, want ...string) {
		t.Helper()
		ft, err := c.ReadFlinkTopic(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range ft.Fold.Operations() {
			got = append(got, o.Plan.SourceRecoveryPoint)
		}
		if len(got) != len(want) {
			t.Fatalf("%s read as %v, want %v", topic, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s read as %v, want %v", topic, got, want)
			}
		}
	}
	for range 3 {
		read(a, "a1", "a2")
	}
	read(b, "b1")
	read(a, "a1", "a2")
	if _, err := c.ReadMirror(ctx, b); err != nil {
		t.Fatal(err)
	}
	v := c.Validate(ctx, nil, worker.ValidateOptions{ControlTopic: a}) // refused: no markers; the control topic read all the same
	if v.Allowed {
		t.Fatalf("Validate allowed no markers: %+v", v)
	}
	if n := count.n.Load(); n != 1 {
		t.Fatalf("%d clients made for six reads and a Validate: want 1, the cluster's own", n)
	}

	// Recreated under the same name: only the new topic's record is read.
	adm := kadm.NewClient(cl)
	if _, err := adm.DeleteTopic(ctx, a); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, time.Minute, "the topic recreated", func() bool {
		resp, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, a)
		return err == nil && resp.Err == nil
	})
	cl.PurgeTopicsFromClient(a) // the test's producer forgets the old topic's ID
	write(a, plan("a3"))
	// A read may fail while the broker settles the new topic; the first
	// one that does not must show the new topic only.
	var ft *worker.FlinkTopic
	kafkatest.Eventually(t, time.Minute, "the recreated topic read", func() bool {
		ft, err = c.ReadFlinkTopic(ctx, a)
		return err == nil
	})
	if ops := ft.Fold.Operations(); len(ops) != 1 || ops[0].Plan.SourceRecoveryPoint != "a3" {
		t.Fatalf("the recreated topic read as %d operations, want only a3", len(ops))
	}
	read(a, "a3")
}
