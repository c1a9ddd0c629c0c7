package netfault_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/clustertest/netfault"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
)

// liveness is the bound on a committed plan's APPLIED after the heal: the worker's session
// timeout (6s, worker/daemon.DefaultSessionTimeout) plus one retry interval (its backoff's
// maximum, 30s, DefaultBackoffMax).
const liveness = 6*time.Second + 30*time.Second

// TestApplyPartitionedBetweenCommittedAndDeleteRecords: `kcleanup apply` whose link is
// partitioned (bytes stop, no reset) at its first DeleteRecords, for longer than its --timeout,
// exits 1 within its documented bound (apply --help: --timeout bounds each of its three phases
// separately, so a whole apply may take three times as long) with an error that says the plan is committed and left for the
// workers; nothing was deleted; once the link heals, a worker finishes the plan (APPLIED,
// log start at the boundary) within the liveness bound, and the invariants hold.
func TestApplyPartitionedBetweenCommittedAndDeleteRecords(t *testing.T) {
	s := newScene(t)
	link := s.net.Links()[0]
	p, file := s.PlanFile("rp-100", 100)
	netfault.PartitionOn(21, "DeleteRecords").Apply(t, link)
	const timeout = 8 * time.Second
	out, code, took := s.Kcleanup(nil, link.Bootstrap, "apply", file, "--timeout", timeout.String())
	t.Logf("apply partitioned at DeleteRecords: exit %d in %s\n%s", code, took.Round(time.Millisecond), out)
	if code != 1 {
		t.Errorf("apply: exit %d, want 1", code)
	}
	if took > 3*timeout+slack { // the partitioned phase itself ends at its own --timeout
		t.Errorf("apply took %s with --timeout %s: beyond its three phases' bound (3 x --timeout)", took, timeout)
	}
	if !contains(strings.ToLower(out), "worker") {
		t.Errorf("apply's error does not say that the workers finish the plan:\n%s", out)
	}
	st, _ := s.Operation(p.PlanID)
	if st != fsm.Committed && st != fsm.Deleting {
		t.Fatalf("after apply lost its link: %s, want COMMITTED or DELETING (the plan left for the workers)", st)
	}
	if ls := s.logStart(); ls != 0 {
		t.Fatalf("log start %d after a DeleteRecords that never reached a broker", ls)
	}
	s.Check()

	// The partition outlasts apply; the workers' link (direct) heals the plan.
	s.startWorker("w1", s.K.Bootstrap)
	start := time.Now()
	kafkatest.Eventually(t, liveness+30*time.Second, "the plan APPLIED by a worker", func() bool {
		st, _ := s.Operation(p.PlanID)
		return st == fsm.Applied
	})
	took = time.Since(start)
	t.Logf("liveness: APPLIED %s after the worker started (bound %s)", took.Round(time.Millisecond), liveness)
	if took > liveness {
		t.Errorf("APPLIED after %s, beyond session timeout + one retry interval (%s)", took, liveness)
	}
	if _, ls := s.Operation(p.PlanID); !ls.Equal(events.Offsets{0: 100}) {
		t.Errorf("APPLIED with log start %v, want {0:100}", ls)
	}
	link.Heal(t)
	s.Check()
}
