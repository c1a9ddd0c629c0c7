package clustertest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/worker"
)

// TestDataLeaderKilledAroundDeleteRecords: an apply dies (failpoint) just after COMMITTED, or
// just after DeleteRecords, and the data partition's leader is SIGKILLed. The apply, run again
// at once, asks again through the election and finishes; the log start its APPLIED reports is
// what every replica serves once the old leader is back in sync, and the invariants hold.
func TestDataLeaderKilledAroundDeleteRecords(t *testing.T) {
	for _, tc := range []struct {
		failpoint string
		left      fsm.State
	}{
		{worker.AfterCommitted, fsm.Committed},
		{worker.AfterDeleteRecords, fsm.Deleting},
	} {
		t.Run(tc.failpoint, func(t *testing.T) {
			s := newScene(t)
			s.mustKcleanup("init", "--topic", s.topic)
			s.waitISR(s.topic, 3)
			p, file := s.planFile("rp-1", 100)
			out, code := s.kcleanup([]string{worker.FailpointEnv + "=" + tc.failpoint}, "apply", file)
			if code != -1 {
				t.Fatalf("apply with %s=%s: exit %d, want death by SIGKILL\n%s", worker.FailpointEnv, tc.failpoint, code, out)
			}
			if st, _ := s.operation(p.PlanID); st != tc.left {
				t.Fatalf("the dead apply left %s, want %s", st, tc.left)
			}

			old := s.partition(s.topic).Leader
			s.k.Kill(t, old)
			// Run at once, through the election: until the controller fences the dead broker
			// (broker.session.timeout.ms) its dial is refused, then the new leader answers
			// NOT_LEADER_OR_FOLLOWER or OFFSET_NOT_AVAILABLE for a moment; apply asks again
			// within its --timeout (worker.askAgain).
			s.mustKcleanup("apply", file, "--timeout", "60s")
			st, logStart := s.operation(p.PlanID)
			if st != fsm.Applied || !logStart.Equal(events.Offsets{0: 100}) {
				t.Fatalf("after the election the apply left %s with log start %v, want APPLIED with {0:100}", st, logStart)
			}

			s.k.Start(t, old)
			s.waitISR(s.topic, 3)
			for _, id := range kafkatest.Nodes {
				kafkatest.Eventually(t, time.Minute, fmt.Sprintf("broker %d serves log start %d", id, logStart[0]), func() bool {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					got, err := s.k.LogStartOn(ctx, id, s.topic, 0)
					if err != nil {
						t.Logf("broker %d: %v", id, err)
					}
					return err == nil && got == logStart[0]
				})
			}
			s.check()
		})
	}
}
