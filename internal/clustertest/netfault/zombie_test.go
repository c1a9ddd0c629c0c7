package netfault_test

import (
	"context"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/clustertest/netfault"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/worker"
)

// TestZombieOwnerPartitionedMidRun: the worker that owns the control topic (w1, on link A) is
// partitioned at its DeleteRecords of a committed plan, past its session timeout; a survivor
// (w2, on link B) takes the control topic over and finishes the plan; then w1's network heals
// while it still runs. Whatever w1 appends afterwards (printed) changes nothing the log had
// decided: the plan stays APPLIED with the same log start, the data topic's log start stays at
// the boundary, and the invariants hold. The liveness after the partition is measured.
func TestZombieOwnerPartitionedMidRun(t *testing.T) {
	s := newScene(t)
	links := s.net.Links()
	a, b := links[0], links[1]
	p, file := s.PlanFile("rp-100", 100)
	// The plan is committed and its apply dies: a worker must finish it.
	if out, code, _ := s.Kcleanup([]string{worker.FailpointEnv + "=" + worker.AfterCommitted}, s.K.Bootstrap, "apply", file); code != -1 {
		t.Fatalf("apply with the failpoint: exit %d, want death by SIGKILL\n%s", code, out)
	}
	netfault.PartitionOn(21, "DeleteRecords").Apply(t, a)
	w1 := s.startWorker("w1", a.Bootstrap)
	kafkatest.Eventually(t, time.Minute, "w1 reaches DELETING (its DeleteRecords swallowed)", func() bool {
		st, _ := s.Operation(p.PlanID)
		return st == fsm.Deleting
	})
	partitioned := time.Now()
	if ls := s.logStart(); ls != 0 {
		t.Fatalf("log start %d: w1's DeleteRecords reached a broker through the partition", ls)
	}
	s.startWorker("w2", b.Bootstrap)
	kafkatest.Eventually(t, liveness+30*time.Second, "the survivor w2 APPLIES the plan", func() bool {
		st, _ := s.Operation(p.PlanID)
		return st == fsm.Applied
	})
	took := time.Since(partitioned)
	t.Logf("liveness: APPLIED by the survivor %s after the owner was partitioned (bound %s)", took.Round(time.Millisecond), liveness)
	if took > liveness {
		t.Errorf("APPLIED %s after the partition, beyond session timeout + one retry interval (%s)", took, liveness)
	}
	st0, ls0 := s.Operation(p.PlanID)
	end0 := s.controlEnd()

	a.Heal(t) // w1 wakes up with its old view
	time.Sleep(15 * time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	end1 := s.controlEnd()
	recs, err := workertest.ReadControl(ctx, s.C, s.Ctl, end1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("control records appended after the heal (offsets %d..%d):", end0, end1-1)
	for _, r := range recs {
		if r.Offset >= end0 {
			t.Logf("  @%d %s %s", r.Offset, r.Key, r.Value)
		}
	}
	t.Logf("the zombie w1's last log lines:\n%s", w1.Tail(6))
	if st, ls := s.Operation(p.PlanID); st != st0 || !ls.Equal(ls0) || !ls.Equal(events.Offsets{0: 100}) {
		t.Errorf("after the zombie's heal: %s with log start %v, the log had decided %s with %v", st, ls, st0, ls0)
	}
	if ls := s.logStart(); ls != 100 {
		t.Errorf("data log start %d after the zombie's heal, want 100 (the committed boundary)", ls)
	}
	s.Check()
}

// controlEnd is the control topic's end offset (direct path).
func (s *scene) controlEnd() int64 {
	s.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := kafkatest.Admin(s.T, s.Cl).ListEndOffsets(ctx, s.Ctl)
	if err != nil {
		s.T.Fatal(err)
	}
	o, _ := ends.Lookup(s.Ctl, 0)
	return o.Offset
}
