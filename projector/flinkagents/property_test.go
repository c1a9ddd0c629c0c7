package flinkagents

import (
	"math/rand/v2"
	"testing"

	"github.com/kcleanup/kcleanup/events"
)

// The sorted check finds an incomparable pair exactly when the job's
// all-pairs check does, and the pair it names really is incomparable.
func TestIncomparableMatchesAllPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	covers := func(a, b Plan) bool {
		for p, off := range b.Offsets {
			if a.Offsets[p] < off {
				return false
			}
		}
		return true
	}
	for range 20000 {
		n, parts := 1+rng.IntN(6), 1+rng.IntN(3)
		plans := make([]Plan, n)
		for i := range plans {
			o := events.Offsets{}
			for p := range parts {
				o[int32(p)] = int64(rng.IntN(4))
			}
			plans[i] = Plan{PlanID: string(rune('a' + i)), Offsets: o}
		}
		want := false
		for i := range plans {
			for j := i + 1; j < len(plans); j++ {
				if !covers(plans[i], plans[j]) && !covers(plans[j], plans[i]) {
					want = true
				}
			}
		}
		a, b, got := incomparable(plans)
		if got != want {
			t.Fatalf("plans %v: incomparable=%v, all pairs say %v", plans, got, want)
		}
		if got && (covers(a, b) || covers(b, a)) {
			t.Fatalf("named pair %v %v is comparable", a, b)
		}
	}
}
