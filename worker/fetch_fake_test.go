package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
)

// A bounded read (worker/fetch.go) whose Fetch is refused with a
// retriable error, as a leader that just moved refuses it
// (NOT_LEADER_OR_FOLLOWER), fetches again instead of failing the read, as
// a consumer does (kfake answers the first Fetch with the error). That the
// retry goes to the new leader is not shown here: one broker.
func TestBoundedReadRetriesARefusedFetch(t *testing.T) {
	const topic = "flink-refused"
	fk, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatal(err)
	}
	defer fk.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(fk.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	p, err := events.BuildPlan("a1", []events.Marker{{Topic: "data", TopicID: "q1zrJqN9Sy6tLFW2q_4mPA", Offsets: events.Offsets{0: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	r := &kgo.Record{Topic: topic, Partition: 0, Key: []byte(p.PlanID), Value: kafkatest.FlinkRecord("COMMITTED", p)}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var refused atomic.Int64
	fk.ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.FetchRequest)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.SetVersion(req.GetVersion())
		for _, qt := range req.Topics {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = qt.Topic, qt.TopicID
			for _, qp := range qt.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode = qp.Partition, kerr.NotLeaderForPartition.Code
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		refused.Add(1)
		return resp, nil, true
	})
	c := workertest.Connect(t, fk.ListenAddrs()[0])
	ft, err := c.ReadFlinkTopic(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ft.Fold.Operations()); n != 1 || refused.Load() != 1 {
		t.Fatalf("read %d operations after %d refused fetches, want 1 after 1", n, refused.Load())
	}
}
