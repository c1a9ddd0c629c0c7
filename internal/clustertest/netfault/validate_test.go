package netfault_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/internal/clustertest/netfault"
)

// validateTimeout is validate's --timeout under a fault; slack is what the process may take
// beyond it (start, flag parsing, the answer's printing) before it counts as a hang.
const (
	validateTimeout = 4 * time.Second
	slack           = 4 * time.Second
)

// TestValidateUnderNetworkFaults: with a committed and applied boundary at 100, `kcleanup
// validate` through a faulted link, for every fault (on every broker, and a partition from the
// control topic's leader only and from the data topic's leader only), answers within --timeout
// (plus process slack), never ALLOWED (exit 0) for a recovery point below the boundary, and
// ALLOWED or "cannot tell" (exit 4) for one above it, never another answer; once the link heals
// the one above is ALLOWED again. Fails with a gate that answers from a cached view or lets a
// read that did not reach the control topic's end count as caught up.
func TestValidateUnderNetworkFaults(t *testing.T) {
	s := newScene(t)
	_, file := s.PlanFile("rp-100", 100)
	s.MustKcleanup(s.K.Bootstrap, "apply", file, "--timeout", "60s")
	below, above := s.MarkersFile(50), s.MarkersFile(200)
	link := s.net.Links()[0]
	ctlLeader, dataLeader := s.separateLeaders()
	type target struct {
		name  string
		nodes []int32
	}
	targets := []target{{"every broker", nil}}
	cases := 0
	for _, f := range netfault.Faults() {
		ts := targets
		if f.Name == netfault.Partition.Name {
			ts = append(ts, target{fmt.Sprintf("the control topic's leader %d only", ctlLeader), []int32{ctlLeader}},
				target{fmt.Sprintf("the data topic's leader %d only", dataLeader), []int32{dataLeader}})
		}
		for _, tg := range ts {
			f.Apply(t, link, tg.nodes...)
			for _, tc := range []struct {
				markers string
				allowed bool // whether ALLOWED holds
			}{{below, false}, {above, true}} {
				out, code, took := s.Kcleanup(nil, link.Bootstrap, "validate", "--markers", tc.markers, "--timeout", validateTimeout.String())
				cases++
				t.Logf("%s on %s, %s: exit %d in %s", f, tg.name, map[bool]string{true: "above", false: "below"}[tc.allowed], code, took.Round(time.Millisecond))
				if took > validateTimeout+slack {
					t.Errorf("%s on %s: validate took %s with --timeout %s: a hang\n%s", f, tg.name, took, validateTimeout, out)
				}
				switch {
				case code == 0 && !tc.allowed:
					t.Errorf("%s on %s: validate ALLOWED a recovery point below the boundary\n%s", f, tg.name, out)
				case code == 4 && !contains(out, "cannot tell", "CANNOT"):
					t.Errorf("%s on %s: exit 4 without saying it cannot tell\n%s", f, tg.name, out)
				case code != 0 && code != 4 && !(code == 3 && !tc.allowed):
					t.Errorf("%s on %s: validate exit %d, want 0 or 4 (3 below the boundary)\n%s", f, tg.name, code, out)
				}
			}
			link.Heal(t)
			out, code, _ := s.Kcleanup(nil, link.Bootstrap, "validate", "--markers", above, "--timeout", "30s")
			if code != 0 {
				t.Errorf("after %s on %s healed: validate exit %d, want ALLOWED\n%s", f, tg.name, code, out)
			}
		}
	}
	t.Logf("%d validations under %d faults: none wrongly ALLOWED, none hung", cases, len(netfault.Faults()))
	s.Check()
}
