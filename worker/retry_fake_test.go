package worker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// answerFirst makes the fake broker answer the first n requests of key with code on every
// partition (what a leader that moved, or a new leader whose high watermark is not caught up,
// answers) and records every request of that key it sees.
func answerFirst(fk *kfake.Cluster, key kmsg.Key, n int, code int16) (seen func() []kmsg.Request) {
	var mu sync.Mutex
	var reqs []kmsg.Request
	fk.ControlKey(key.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		fk.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		reqs = append(reqs, req)
		if len(reqs) > n {
			return nil, nil, false
		}
		switch req := req.(type) {
		case *kmsg.DeleteRecordsRequest:
			resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
			for _, t := range req.Topics {
				rt := kmsg.NewDeleteRecordsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewDeleteRecordsResponseTopicPartition()
					rp.Partition, rp.ErrorCode, rp.LowWatermark = p.Partition, code, -1
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil, true
		case *kmsg.ListOffsetsRequest:
			resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
			for _, t := range req.Topics {
				rt := kmsg.NewListOffsetsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewListOffsetsResponseTopicPartition()
					rp.Partition, rp.ErrorCode, rp.Offset = p.Partition, code, -1
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil, true
		}
		return nil, nil, false
	})
	return func() []kmsg.Request {
		mu.Lock()
		defer mu.Unlock()
		return append([]kmsg.Request(nil), reqs...)
	}
}

// TestApplyAsksAgainThroughALeaderElection: DeleteRecords answered NOT_LEADER_OR_FOLLOWER and
// ListOffsets answered OFFSET_NOT_AVAILABLE (a three-broker cluster answers both for a moment
// after its leader dies: internal/clustertest) are asked again within the deadline; every
// DeleteRecords asked for the same offsets, and the apply ends APPLIED.
func TestApplyAsksAgainThroughALeaderElection(t *testing.T) {
	c, fk := workertest.FakeBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := workertest.DataTopic(t, c, "action-state", 2, 200)
	ctl := protocol.ControlTopicFor("action-state")
	proj := workertest.ControlProjection(t, ctx, c, ctl, "action-state")
	plan := workertest.MustPlan(t, "C1", "action-state", id, events.Offsets{0: 150, 1: 120})

	deletes := answerFirst(fk, kmsg.DeleteRecords, 2, kerr.NotLeaderForPartition.Code)
	lists := answerFirst(fk, kmsg.ListOffsets, 3, kerr.OffsetNotAvailable.Code)
	out, err := c.Apply(ctx, proj, plan, worker.Options{})
	if err != nil {
		t.Fatalf("apply: %+v", err)
	}
	if out.State != fsm.Applied || !out.LogStart.Equal(events.Offsets{0: 150, 1: 120}) {
		t.Fatalf("apply ended %s with log start %v, want APPLIED with the plan's offsets", out.State, out.LogStart)
	}
	if n := len(lists()); n <= 3 {
		t.Errorf("ListOffsets asked %d times, want more than the 3 answered OFFSET_NOT_AVAILABLE", n)
	}
	reqs := deletes()
	if len(reqs) != 3 {
		t.Fatalf("DeleteRecords asked %d times, want 3 (two NOT_LEADER_OR_FOLLOWER, then the answer)", len(reqs))
	}
	for i, r := range reqs {
		if got, want := deleteOffsets(r), (events.Offsets{0: 150, 1: 120}); !got.Equal(want) {
			t.Errorf("DeleteRecords %d asked for %v, want the plan's %v every time", i+1, got, want)
		}
	}
}

// TestApplyDoesNotAskAgainOnALastingAnswer: POLICY_VIOLATION from DeleteRecords cannot change
// on a retry: it is asked once and the apply reports it.
func TestApplyDoesNotAskAgainOnALastingAnswer(t *testing.T) {
	c, fk := workertest.FakeBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := workertest.DataTopic(t, c, "action-state", 1, 200)
	ctl := protocol.ControlTopicFor("action-state")
	proj := workertest.ControlProjection(t, ctx, c, ctl, "action-state")
	plan := workertest.MustPlan(t, "C1", "action-state", id, events.Offsets{0: 150})

	deletes := answerFirst(fk, kmsg.DeleteRecords, 1000, kerr.PolicyViolation.Code)
	if _, err := c.Apply(ctx, proj, plan, worker.Options{}); err == nil {
		t.Fatal("apply succeeded although every DeleteRecords was refused with POLICY_VIOLATION")
	}
	if n := len(deletes()); n != 1 {
		t.Errorf("DeleteRecords asked %d times on POLICY_VIOLATION, want once", n)
	}
}

// TestDeleteRecordsAskedAgainOnlyWithTheSameOffsets: when franz-go gives a transient answer
// back (here: it retries nothing itself, kgo.RequestRetries(0)), kcleanup's own ask again
// (worker.askAgain) re-sends DeleteRecords, and only with the plan's offsets: a retry that
// re-sent other offsets would delete past the boundary. TestApplyAsksAgainThroughALeaderElection
// does not reach this path: franz-go retries NOT_LEADER_OR_FOLLOWER with the same request
// itself, and so does every network-fault test (docs/testing.md, the fault table's mutations).
func TestDeleteRecordsAskedAgainOnlyWithTheSameOffsets(t *testing.T) {
	fk, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fk.Close)
	c, err := worker.Connect(kgo.SeedBrokers(fk.ListenAddrs()...), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := workertest.DataTopic(t, c, "action-state", 2, 200)
	ctl := protocol.ControlTopicFor("action-state")
	proj := workertest.ControlProjection(t, ctx, c, ctl, "action-state")
	plan := workertest.MustPlan(t, "C1", "action-state", id, events.Offsets{0: 150, 1: 120})

	deletes := answerFirst(fk, kmsg.DeleteRecords, 2, kerr.NotLeaderForPartition.Code)
	out, err := c.Apply(ctx, proj, plan, worker.Options{})
	if err != nil {
		t.Fatalf("apply: %+v", err)
	}
	reqs := deletes()
	if len(reqs) != 3 {
		t.Fatalf("DeleteRecords asked %d times, want 3 (two NOT_LEADER_OR_FOLLOWER handed back by franz-go, then the answer)", len(reqs))
	}
	for i, r := range reqs {
		if got := deleteOffsets(r); !got.Equal(plan.Offsets) {
			t.Errorf("DeleteRecords %d asked for %v, want the plan's %v every time", i+1, got, plan.Offsets)
		}
	}
	if out.State != fsm.Applied || !out.LogStart.Equal(plan.Offsets) {
		t.Fatalf("apply ended %s with log start %v, want APPLIED with the plan's offsets %v", out.State, out.LogStart, plan.Offsets)
	}
}

// deleteOffsets are the offsets a DeleteRecords request asks for, by partition.
func deleteOffsets(r kmsg.Request) events.Offsets {
	got := events.Offsets{}
	for _, tp := range r.(*kmsg.DeleteRecordsRequest).Topics {
		for _, p := range tp.Partitions {
			got[p.Partition] = p.Offset
		}
	}
	return got
}
