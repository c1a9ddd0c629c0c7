package worker_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/checkpoint/store"
	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/flinkgentest"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// TestAFollowRoundKilledIsTheSameNextRound (issue 32 item 4, "a worker killed mid-round is
// replaced and the next round is the same"): worker A follows a retention policy over real
// Flink checkpoints and dies at each point of its round — after listing and deciding, right
// after its PLANNED is acknowledged, right after its COMMITTED is — with its connections cut
// and its context cancelled at that moment, so it writes nothing more. A fresh worker B (its
// own clients, projection and follower) then runs a round over the same unchanged locations:
// it decides the same plan (the plan ID A wrote or decided, the same boundary), appends no
// second PLANNED or COMMITTED, and it and its owner's pass (Finish) take the interrupted plan
// to APPLIED: the log starts are what the oldest checkpoint needs, the invariants hold.
//
// It fails, for "after PLANNED", if FollowRound returns on any plan already on the control
// topic instead of committing one left PLANNED (the `known` test of worker/follow.go without
// its state): B then leaves the plan PLANNED and nothing is deleted — tried once, it fails so.
func TestAFollowRoundKilledIsTheSameNextRound(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	cases, err := flinkgentest.FollowCases(flinkgentest.Cases(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, point := range []string{"after listing", "after PLANNED", "after COMMITTED"} {
		t.Run(strings.ReplaceAll(point, " ", "-"), func(t *testing.T) {
			cl := kafkatest.Client(t, addr)
			var rb [3]byte
			_, _ = rand.Read(rb[:])
			topic := "k" + hex.EncodeToString(rb[:]) // 7 characters, as the checkpoints' "actions"
			kafkatest.CreateTopic(t, cl, topic, 4, map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1"})
			ctl := protocol.ControlTopicFor(topic)
			t.Cleanup(func() { _, _ = kadm.NewClient(cl).DeleteTopics(context.Background(), topic, ctl) })
			for p := int32(0); p < 4; p++ {
				kafkatest.Produce(t, cl, topic, p, 3200)
			}
			ctx, cancel := context.WithTimeout(context.Background(), workertest.RealTimeout)
			defer cancel()
			id, err := kafkatest.TopicIDUncached(ctx, cl, topic)
			if err != nil {
				t.Fatal(err)
			}
			base := t.TempDir()
			for i, c := range cases {
				if err := flinkgentest.CopyAs(c, filepath.Join(base, flinkgentest.JobID, "chk-"+string(rune('1'+i))), topic, id); err != nil {
					t.Fatal(err)
				}
			}
			want := events.Offsets{0: 1100, 1: 1101, 2: 1102, 3: 1103} // what chk-1, the oldest, needs
			setup := workertest.Connect(t, addr)
			proj := workertest.ControlProjection(t, ctx, setup, ctl, topic)
			if _, err := setup.SetRetention(ctx, proj, events.Retention{Topic: topic, Watch: []string{base}, Every: time.Second, Reason: "follow the job"}, worker.Options{Actor: "test/ops"}); err != nil {
				t.Fatal(err)
			}
			follower := func() *worker.Follower {
				return &worker.Follower{Store: store.Options{Confined: true, Roots: store.Roots{{Scheme: "file", Path: base}}}}
			}

			// Worker A, killed at point.
			a := &killable{}
			aCtx, aKill := context.WithCancel(ctx)
			a.kill = aKill
			var written atomic.Value // the PLANNED's plan ID A's client saw acknowledged
			hook := produced(func(r *kgo.Record) {
				id, ev, err := events.ParseKey(r.Key)
				if err != nil {
					return
				}
				if ev == events.Planned {
					written.Store(id)
				}
				if point == "after "+string(ev) {
					a.die()
				}
			})
			ac, err := worker.Connect(kgo.SeedBrokers(addr), kgo.Dialer(a.dial), kgo.WithHooks(hook))
			if err != nil {
				t.Fatal(err)
			}
			defer ac.Close()
			aProj, err := ac.Project(ctx, ctl)
			if err != nil {
				t.Fatal(err)
			}
			defer aProj.Close()
			observe := func(p protocol.Progress) {
				if p.Step == "retention" && point == "after listing" {
					a.die()
				}
			}
			dA, _, errA := ac.FollowRound(aCtx, aProj, follower(), worker.Options{Actor: "worker-a", Observe: observe})
			if errA == nil || !a.dead.Load() || dA.Plan == nil {
				t.Fatalf("worker A was not killed %s: err %v, plan %v", point, errA, dA.Plan)
			}
			t.Logf("worker A decided plan %s (%s) and died %s: %v", dA.Plan.PlanID[:12], dA.Plan.Offsets, point, errA)
			if w, _ := written.Load().(string); point != "after listing" && w != dA.Plan.PlanID {
				t.Fatalf("worker A's PLANNED is of plan %q, its decision %s", w, dA.Plan.PlanID)
			}
			before := controlKeys(t, setup, ctl)
			t.Logf("control topic after A: %v", before)

			// Worker B, fresh, over the same locations.
			bc := workertest.Connect(t, addr)
			bProj := workertest.ControlProjection(t, ctx, bc, ctl, topic)
			dB, ok, err := bc.FollowRound(ctx, bProj, follower(), worker.Options{Actor: "worker-b"})
			if err != nil || !ok {
				t.Fatalf("worker B's round: ok %v, err %v, decision %+v", ok, err, dB)
			}
			// The same decision: the same target and, unless A's COMMITTED already raised the
			// boundary to it (then nothing is left to rise), the same plan.
			if !dA.Plan.Offsets.Equal(want) || !dB.Target.Equal(want) {
				t.Fatalf("worker A planned %v, worker B's target is %v; want %v", dA.Plan.Offsets, dB.Target, want)
			}
			switch {
			case point == "after COMMITTED" && (dB.Plan != nil || dB.NoPlan != protocol.NoPlanNothingToRise):
				t.Fatalf("worker B, after A's COMMITTED: plan %v, %s (%s); want none, the boundary being there", dB.Plan, dB.NoPlan, dB.Why)
			case point != "after COMMITTED" && (dB.Plan == nil || dB.Plan.PlanID != dA.Plan.PlanID || dB.Plan.SourceRecoveryPoint != dA.Plan.SourceRecoveryPoint):
				t.Fatalf("worker B decided %+v (%s); worker A decided plan %s from %s", dB.Plan, dB.Why, dA.Plan.PlanID, dA.Plan.SourceRecoveryPoint)
			}
			plan := dA.Plan.PlanID
			// The owner's pass finishes what is COMMITTED (worker/daemon does so after each round).
			if err := bProj.CatchUp(ctx); err != nil {
				t.Fatal(err)
			}
			if out, err := bc.Finish(ctx, bProj, plan, worker.Options{Actor: "worker-b"}); err != nil || out.State != "APPLIED" {
				t.Fatalf("worker B's pass over plan %s: %+v, %v", plan[:12], out, err)
			}
			// A second round of B: the same plan, nothing new written.
			if d, _, err := bc.FollowRound(ctx, bProj, follower(), worker.Options{Actor: "worker-b"}); err != nil || d.Plan != nil {
				t.Fatalf("worker B's next round after APPLIED: plan %v, %v, %s", d.Plan, err, d.Why)
			}
			keys := controlKeys(t, setup, ctl)
			t.Logf("control topic after B: %v", keys)
			for _, e := range []events.Event{events.Planned, events.Committed, events.Deleting, events.Applied} {
				if n := keys[plan+"/"+string(e)]; n != 1 {
					t.Errorf("%s of plan %s appended %d times, want once", e, plan[:12], n)
				}
			}
			for k := range keys {
				if id, _, err := events.ParseKey([]byte(k)); err == nil && id != plan {
					t.Errorf("a second plan on the control topic: %s", k)
				}
			}
			starts, err := bc.StartOffsets(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			if !starts.Equal(want) {
				t.Errorf("log starts %v, want %v (what chk-1 needs)", starts, want)
			}
			workertest.RequireInvariants(t, bc, ctl)
		})
	}
}

// killable is a process's network for a worker in this test process: once die is called,
// every connection it opened fails its reads and writes and no new one opens, and its
// context is cancelled — what a SIGKILL does to the worker's side of the sockets.
type killable struct {
	mu    sync.Mutex
	conns []net.Conn
	dead  atomic.Bool
	kill  context.CancelFunc
}

func (k *killable) dial(ctx context.Context, network, host string) (net.Conn, error) {
	if k.dead.Load() {
		return nil, errors.New("killed")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dead.Load() {
		_ = c.Close()
		return nil, errors.New("killed")
	}
	k.conns = append(k.conns, c)
	return c, nil
}

func (k *killable) die() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dead.Swap(true) {
		return
	}
	k.kill()
	for _, c := range k.conns {
		_ = c.Close()
	}
}

// produced is a hook that sees each record Kafka acknowledged, before the producer's caller does.
type produced func(*kgo.Record)

func (f produced) OnProduceRecordUnbuffered(r *kgo.Record, err error) {
	if err == nil {
		f(r)
	}
}

// controlKeys counts the control topic's records by key.
func controlKeys(t *testing.T, c *worker.Cluster, ctl string) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), workertest.RealTimeout)
	defer cancel()
	ends, err := kadm.NewClient(c.Client()).ListEndOffsets(ctx, ctl)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(ctl, 0)
	recs, err := workertest.ReadControl(ctx, c, ctl, end.Offset)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range recs {
		out[string(r.Key)]++
	}
	return out
}
