package clustertest_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/worker"
)

// TestControlLeaderKilledBetweenCommittedAndDeleting: an apply dies just after COMMITTED and
// the control topic's leader is SIGKILLed. The COMMITTED survives the election, the apply run
// again at once finishes, and `kcleanup validate`, run every 100 ms from before the kill until
// APPLIED, never allows a recovery point below the boundary (it refuses, or cannot tell while
// the leader moves).
func TestControlLeaderKilledBetweenCommittedAndDeleting(t *testing.T) {
	s := newScene(t)
	s.MustKcleanup(s.K.Bootstrap, "init", "--topic", s.Topic)
	s.waitISR(s.Ctl, 3)
	p, file := s.PlanFile("rp-1", 100)
	if out, code, _ := s.Kcleanup([]string{worker.FailpointEnv + "=" + worker.AfterCommitted}, s.K.Bootstrap, "apply", file); code != -1 {
		t.Fatalf("apply with the failpoint: exit %d, want death by SIGKILL\n%s", code, out)
	}
	below := s.MarkersFile(50)

	var polls, allowed, refused atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			out, code, _ := s.Kcleanup(nil, s.K.Bootstrap, "validate", "--markers", below, "--timeout", "10s")
			polls.Add(1)
			switch code {
			case 0:
				allowed.Add(1)
				t.Errorf("validate ALLOWED a recovery point below the committed boundary:\n%s", out)
			case 3:
				refused.Add(1)
			}
		}
	})

	old := s.partition(s.Ctl).Leader
	s.K.Kill(t, old)
	// Run at once: through the election the control topic's leader refuses the dial, then
	// answers NOT_LEADER_OR_FOLLOWER or OFFSET_NOT_AVAILABLE for a moment, and apply asks
	// again within its --timeout (worker.askAgain).
	s.MustKcleanup(s.K.Bootstrap, "apply", file, "--timeout", "60s")
	close(stop)
	wg.Wait()
	t.Logf("validate ran %d times: %d refused, %d cannot tell, %d allowed", polls.Load(), refused.Load(), polls.Load()-refused.Load()-allowed.Load(), allowed.Load())
	if st, logStart := s.Operation(p.PlanID); st != fsm.Applied || !logStart.Equal(events.Offsets{0: 100}) {
		t.Fatalf("after the election: %s, log start %v, want APPLIED with {0:100}", st, logStart)
	}
	s.K.Start(t, old)
	s.waitISR(s.Ctl, 3)
	s.Check()
}
