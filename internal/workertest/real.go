package workertest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// RealTimeout bounds one step of a test on the real broker.
const RealTimeout = 60 * time.Second

// RealCase is one data topic and its control topic on the real broker.
type RealCase struct {
	Topic, ID, Ctl string
	Plan           events.Plan // applied C1, when applied
}

// RealBroker is the real broker (kafkatest.Bootstrap: skipped under -short): its address, and
// a worker.Cluster and a client on it, closed when the test ends.
func RealBroker(t testing.TB) (string, *worker.Cluster, *kgo.Client) {
	t.Helper()
	bootstrap := kafkatest.Bootstrap(t)
	return bootstrap, Connect(t, bootstrap), kafkatest.Client(t, bootstrap)
}

// RealControlled creates a two-partition data topic with records records in each partition
// and its control topic, as Cluster.EnsureControlTopic makes it (deleted when the test ends),
// on the real broker; nothing is applied.
func RealControlled(t testing.TB, c *worker.Cluster, cl *kgo.Client, name string, records int) RealCase {
	t.Helper()
	rc := RealCase{}
	rc.Topic, rc.ID = realDataTopic(t, cl, name, records)
	rc.Ctl = protocol.ControlTopicFor(rc.Topic)
	ctx, cancel := context.WithTimeout(context.Background(), RealTimeout)
	defer cancel()
	if err := c.EnsureControlTopic(ctx, rc.Ctl, rc.Topic, worker.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = kadm.NewClient(cl).DeleteTopics(context.Background(), rc.Ctl) })
	return rc
}

// RealDataTopic creates a two-partition data topic with 200 records in each partition on the
// real broker cl talks to, and returns its name and topic ID.
func RealDataTopic(t testing.TB, cl *kgo.Client, name string) (string, string) {
	t.Helper()
	return realDataTopic(t, cl, name, 200)
}

func realDataTopic(t testing.TB, cl *kgo.Client, name string, records int) (string, string) {
	t.Helper()
	topic := kafkatest.NewTopic(t, cl, name, 2, map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1"})
	kafkatest.Produce(t, cl, topic, 0, records)
	kafkatest.Produce(t, cl, topic, 1, records)
	ctx, cancel := context.WithTimeout(context.Background(), RealTimeout)
	defer cancel()
	id, err := kafkatest.TopicIDUncached(ctx, cl, topic)
	if err != nil {
		t.Fatal(err)
	}
	return topic, id
}

// Applied is a data topic whose control topic (as init makes it) has C1 (0=150 1=120) applied.
func Applied(t testing.TB, c *worker.Cluster, cl *kgo.Client, name string) RealCase {
	t.Helper()
	rc := RealCase{}
	rc.Topic, rc.ID = RealDataTopic(t, cl, name)
	rc.Ctl = protocol.ControlTopicFor(rc.Topic)
	ctx, cancel := context.WithTimeout(context.Background(), RealTimeout)
	defer cancel()
	proj := ControlProjection(t, ctx, c, rc.Ctl, rc.Topic)
	t.Cleanup(func() { _, _ = kadm.NewClient(c.Client()).DeleteTopic(context.Background(), rc.Ctl) })
	rc.Plan = MustPlan(t, "C1", rc.Topic, rc.ID, events.Offsets{0: 150, 1: 120})
	if out, err := c.Apply(ctx, proj, rc.Plan, worker.Options{Actor: "test/apply"}); err != nil || out.State != "APPLIED" {
		t.Fatalf("apply C1: %v %+v", err, out)
	}
	return rc
}
