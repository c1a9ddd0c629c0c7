package sim

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/protocol"
)

var (
	seeds = flag.Int("seeds", 300, "how many seeds TestSimulation runs (make sim: 10000)")
	only  = flag.Uint64("seed", 0, "run only this seed (replay a failure)")
)

// TestSimulation runs the fleet on many seeds and checks I1–I5 after each;
// then it checks that every fault kind and every protocol step was
// exercised, and prints how often.
func TestSimulation(t *testing.T) {
	cfg := DefaultConfig()
	first, last := uint64(1), uint64(*seeds)
	if *only != 0 {
		first, last = *only, *only
	}
	if testing.Short() && *only == 0 {
		last = min(last, 50)
	}
	faults, mirrorFaults := map[Fault]int{}, map[Fault]int{}
	mirrored, mirrorHeld := 0, 0
	steps := map[protocol.Kind]int{}
	failed := 0
	var records int64
	disputed, disputedSeeds := 0, 0
	var disputedIn []uint64
	pins, pinRejected := 0, 0
	staleByBinding, staleByIdentify := 0, 0
	graceSeeds, graceWaits, graceKills := 0, 0, 0
	skewed, pinHolds := 0, 0
	atRiskLower, atRiskHigher, atRiskStates := 0, 0, 0
	var atRiskSeeds []uint64
	for seed := first; seed <= last; seed++ {
		res := Run(seed, cfg)
		pins += res.Pins
		pinRejected += res.PinRejected
		staleByBinding += res.StaleByBinding
		staleByIdentify += res.StaleByIdentify
		skewed += res.Skewed
		pinHolds += res.PinHolds
		atRiskLower += res.AtRiskLower
		atRiskHigher += res.AtRiskHigher
		atRiskStates += res.AtRiskStates
		if res.AtRiskLower+res.AtRiskHigher+res.AtRiskStates > 0 {
			atRiskSeeds = append(atRiskSeeds, seed)
		}
		if res.Grace > 0 {
			graceSeeds++
		}
		graceWaits += res.GraceWaits
		graceKills += res.GraceKills
		for f, n := range res.Faults {
			faults[f] += n
		}
		for f, n := range res.MirrorFaults {
			mirrorFaults[f] += n
		}
		if res.Mirrored {
			mirrored++
		}
		if res.MirrorPlans > 0 {
			mirrorHeld++
		}
		for k, n := range res.Steps {
			steps[k] += n
		}
		records += res.Records
		if res.Disputed > 0 {
			disputed += res.Disputed
			disputedSeeds++
			disputedIn = append(disputedIn, seed)
		}
		if len(res.Errors) > 0 {
			failed++
			var b strings.Builder
			for _, err := range res.Errors {
				fmt.Fprintf(&b, "\n  %v", err)
			}
			t.Errorf("seed %d: %d violation(s):%s\nreplay: go test ./protocol/sim -run TestSimulation -seed=%d -v", seed, len(res.Errors), b.String(), seed)
			if failed >= 5 {
				t.Fatalf("stopping after %d failing seeds", failed)
			}
		}
	}
	n := last - first + 1
	t.Logf("%d seeds (%d with a Flink Agents mirror attached, %d of them ending with plans on it), %d failed; %d control records in all",
		n, mirrored, mirrorHeld, failed, records)
	t.Logf("%d worker passes in %d seeds (%v) read a disputed conflict (docs/design.md §5) or a pin dispute (§12) and repaired neither side", disputed, disputedSeeds, disputedIn)
	t.Logf("after a compaction, a fresh fold of the control topic as it is disagreed with the full history's while at risk (the gate cannot tell; docs/design.md §5): %d times with a lower boundary, %d with a higher one, %d with other operation states (seeds %v)", atRiskLower, atRiskHigher, atRiskStates, atRiskSeeds)
	t.Logf("%d pin events (PINNED, UNPINNED) appended; %d COMMITTED records rejected for a pin (docs/design.md §12)", pins, pinRejected)
	t.Logf("%d seeds ran with a restore grace; %d runs stopped to wait it out, %d processes were killed while waiting (docs/design.md §11)", graceSeeds, graceWaits, graceKills)
	if *only == 0 && n >= 200 && (graceWaits == 0 || graceKills == 0) {
		t.Errorf("in %d seeds, %d runs waited out a restore grace and %d processes died waiting: the grace was not exercised", n, graceWaits, graceKills)
	}
	t.Logf("%d processes and pin writers ran with a skewed clock; %d runs were held before DeleteRecords by a pin the broker's clock still held (docs/design.md §12, \"The two clocks\")", skewed, pinHolds)
	if *only == 0 && n >= 200 && (skewed == 0 || pinHolds == 0) {
		t.Errorf("in %d seeds, %d skewed clocks and %d pin holds: the broker's clock was not exercised", n, skewed, pinHolds)
	}
	if *only == 0 && n >= 50 && (pins == 0 || pinRejected == 0) {
		t.Errorf("no pin rejected a commit in %d seeds (%d pin events): the pin rules were not exercised", n, pins)
	}
	t.Logf("%d pin runs with markers of the data topic's previous incarnation were refused by the control topic's binding, %d by Identify's topic ID", staleByBinding, staleByIdentify)
	if *only == 0 && n >= 200 && (staleByBinding == 0 || staleByIdentify == 0) {
		t.Errorf("in %d seeds, %d stale pins refused by the binding and %d by Identify: the recreated topic was not exercised", n, staleByBinding, staleByIdentify)
	}
	var lines []string
	for _, f := range Faults() {
		lines = append(lines, fmt.Sprintf("  fault %-30s %8d  (mirror requests %d)", f, faults[f], mirrorFaults[f]))
	}
	kinds := append(protocol.Kinds(), protocol.MirrorKinds()...)
	for _, k := range kinds {
		lines = append(lines, fmt.Sprintf("  step  %-30s %8d", k, steps[k]))
	}
	t.Log("exercised:\n" + strings.Join(lines, "\n"))
	if *only != 0 || n < 200 {
		return // too few seeds to ask for full coverage
	}
	for _, f := range Faults() {
		if faults[f] == 0 {
			t.Errorf("fault %s was never injected in %d seeds", f, n)
		}
	}
	for _, k := range kinds {
		if steps[k] == 0 {
			t.Errorf("protocol step %s was never exercised in %d seeds", k, n)
		}
	}
}
