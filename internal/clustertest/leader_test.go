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
			s.MustKcleanup(s.K.Bootstrap, "init", "--topic", s.Topic)
			s.waitISR(s.Topic, 3)
			p, file := s.PlanFile("rp-1", 100)
			out, code, _ := s.Kcleanup([]string{worker.FailpointEnv + "=" + tc.failpoint}, s.K.Bootstrap, "apply", file)
			if code != -1 {
				t.Fatalf("apply with %s=%s: exit %d, want death by SIGKILL\n%s", worker.FailpointEnv, tc.failpoint, code, out)
			}
			if st, _ := s.Operation(p.PlanID); st != tc.left {
				t.Fatalf("the dead apply left %s, want %s", st, tc.left)
			}

			old := s.partition(s.Topic).Leader
			s.K.Kill(t, old)
			// Run at once, through the election: until the controller fences the dead broker
			// (broker.session.timeout.ms) its dial is refused, then the new leader answers
			// NOT_LEADER_OR_FOLLOWER or OFFSET_NOT_AVAILABLE for a moment; apply asks again
			// within its --timeout (worker.askAgain).
			s.MustKcleanup(s.K.Bootstrap, "apply", file, "--timeout", "60s")
			st, logStart := s.Operation(p.PlanID)
			if st != fsm.Applied || !logStart.Equal(events.Offsets{0: 100}) {
				t.Fatalf("after the election the apply left %s with log start %v, want APPLIED with {0:100}", st, logStart)
			}

			s.K.Start(t, old)
			s.waitISR(s.Topic, 3)
			for _, id := range kafkatest.Nodes {
				kafkatest.Eventually(t, time.Minute, fmt.Sprintf("broker %d serves log start %d", id, logStart[0]), func() bool {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					got, err := s.K.LogStartOn(ctx, id, s.Topic, 0)
					if err != nil {
						t.Logf("broker %d: %v", id, err)
					}
					return err == nil && got == logStart[0]
				})
			}
			s.Check()
		})
	}
}
