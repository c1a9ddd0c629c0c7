package workertest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/worker"
)

// Connect is a worker.Cluster on the brokers at bootstrap, closed at the end of the test.
func Connect(t testing.TB, bootstrap string) *worker.Cluster {
	t.Helper()
	c, err := worker.Connect(kgo.SeedBrokers(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// FakeBroker is a one-broker kfake cluster made with opts (beside NumBrokers(1)) and a
// worker.Cluster on it, for tests that also drive the broker (take it away, hold requests).
func FakeBroker(t testing.TB, opts ...kfake.Opt) (*worker.Cluster, *kfake.Cluster) {
	t.Helper()
	fk, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fk.Close)
	return Connect(t, fk.ListenAddrs()[0]), fk
}

// FakeCluster is a worker.Cluster on a one-broker kfake cluster, and that broker's address.
func FakeCluster(t testing.TB) (*worker.Cluster, string) {
	t.Helper()
	c, fk := FakeBroker(t)
	return c, fk.ListenAddrs()[0]
}

// DataTopic creates a data topic with the configs kcleanup needs and n records in each
// partition, and returns its topic ID.
func DataTopic(t testing.TB, c *worker.Cluster, name string, partitions int32, n int) string {
	t.Helper()
	ctx := context.Background()
	s := func(v string) *string { return &v }
	_, err := kadm.NewClient(c.Client()).CreateTopic(ctx, partitions, 1, map[string]*string{
		"cleanup.policy": s("compact,delete"), "retention.ms": s("-1"), "retention.bytes": s("-1"),
	}, name)
	if err != nil {
		t.Fatal(err)
	}
	var rs []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < n; i++ {
			rs = append(rs, &kgo.Record{Topic: name, Partition: p, Key: []byte{byte(i)}, Value: []byte("v")})
		}
	}
	if err := c.Client().ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	info, err := c.TopicMetadata(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return info.ID
}

// ControlProjection creates a data topic's control topic and opens a caught-up projection
// of it, closed at the end of the test.
func ControlProjection(t testing.TB, ctx context.Context, c *worker.Cluster, ctl, dataTopic string) *worker.Projection {
	t.Helper()
	if err := c.EnsureControlTopic(ctx, ctl, dataTopic, worker.Options{}); err != nil {
		t.Fatal(err)
	}
	proj, err := c.Project(ctx, ctl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proj.Close)
	return proj
}

// MustPlan is the plan of one marker.
func MustPlan(t testing.TB, rp, topic, id string, offs events.Offsets) events.Plan {
	t.Helper()
	p, err := events.BuildPlan(rp, []events.Marker{{Topic: topic, TopicID: id, Offsets: offs}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Envelope is the control record e of plan, written now by actor (worker.Actor() when
// empty), as a writer other than kcleanup's apply path would append it (tests append it with
// Cluster.Append).
func Envelope(e events.Event, plan events.Plan, actor string) events.Envelope {
	if actor == "" {
		actor = worker.Actor()
	}
	return events.Envelope{SchemaVersion: events.SchemaVersion, Event: e, PlanID: plan.PlanID, Plan: plan,
		At: time.Now().UTC(), Actor: actor}
}
