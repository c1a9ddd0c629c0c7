package protocol_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
)

// walkBoundaryPlan is BoundaryPlan as it was, a walk over every operation:
// the reference the fast one must agree with.
func walkBoundaryPlan(st *projector.State) (projector.Operation, bool) {
	b := st.Boundary()
	if len(b) == 0 {
		return projector.Operation{}, false
	}
	var found projector.Operation
	ok := false
	for _, op := range st.Operations() {
		if op.State != fsm.Committed && op.State != fsm.Deleting && op.State != fsm.Applied || !op.Plan.Offsets.Equal(b) {
			continue
		}
		if !ok || op.State == fsm.Applied && found.State != fsm.Applied {
			found, ok = op, true
		}
	}
	return found, ok
}

// randomLog folds n transitions of plans over two partitions with offsets
// drawn from a few values, so that plans equal to the boundary, covered
// commits and rejected regressions all occur; each commit carries the
// boundary it would leave. Whatever the fold rejects is left out.
func randomLog(t *testing.T, rng *rand.Rand, n int) *projector.State {
	st := projector.New()
	var plans []events.Plan
	for i := range n {
		var env events.Envelope
		if len(plans) == 0 || rng.IntN(3) == 0 {
			p := plan(t, fmt.Sprintf("chk-%d", i), events.Offsets{0: int64(rng.IntN(4) * 10), 1: int64(rng.IntN(4) * 10)})
			plans = append(plans, p)
			env = events.Envelope{Event: events.Planned, Plan: p}
		} else {
			p := plans[rng.IntN(len(plans))]
			env = events.Envelope{Event: []events.Event{events.Committed, events.Deleting, events.Applied}[rng.IntN(3)], Plan: p}
			switch env.Event {
			case events.Committed:
				env.Boundary = st.Boundary().Clone()
				for part, o := range p.Offsets {
					env.Boundary[part] = max(env.Boundary[part], o)
				}
			case events.Applied:
				env.LogStart = p.Offsets.Clone()
			}
		}
		env.SchemaVersion, env.PlanID, env.At, env.Actor = events.SchemaVersion, env.Plan.PlanID, time.Unix(int64(i), 0).UTC(), "test"
		k, v := env.Encode()
		st.Step(projector.Record{Offset: int64(i), Key: k, Value: v, Timestamp: env.At})
	}
	return st
}

// TestBoundaryPlanAgreesWithTheWalk: on random logs, BoundaryPlan names the
// plan the walk over every operation names (APPLIED first, else the first
// planned), or none when the walk finds none.
func TestBoundaryPlanAgreesWithTheWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 7))
	found := 0
	for i := range 300 {
		st := randomLog(t, rng, 5+rng.IntN(40))
		want, wantOK := walkBoundaryPlan(st)
		got, ok := protocol.BoundaryPlan(st)
		if ok != wantOK || got.PlanID != want.PlanID {
			t.Fatalf("log %d: BoundaryPlan %s (%v), the walk %s (%v)", i, got.PlanID, ok, want.PlanID, wantOK)
		}
		if ok {
			found++
		}
	}
	if found < 30 {
		t.Fatalf("only %d of 300 logs had a boundary plan: the generator does not test much", found)
	}
}

// TestBoundaryPlanDoesNotWalkEveryOperation: what BoundaryPlan allocates
// does not grow with the operations before the last rise of the boundary
// (the walk exported every one of them: a history and maps each).
func TestBoundaryPlanDoesNotWalkEveryOperation(t *testing.T) {
	allocs := func(n int) float64 {
		var steps []any
		for i := range n {
			steps = append(steps, plan(t, fmt.Sprintf("chk-%d", i), events.Offsets{0: int64(10 * (i + 1))}),
				events.Planned, events.Committed, events.Deleting, events.Applied)
		}
		st := state(t, steps...)
		if op, ok := protocol.BoundaryPlan(st); !ok || op.Plan.Offsets[0] != int64(10*n) {
			t.Fatalf("%d operations: boundary plan %v, %v", n, op.Plan.Offsets, ok)
		}
		return testing.AllocsPerRun(20, func() { protocol.BoundaryPlan(st) })
	}
	if few, many := allocs(3), allocs(300); many != few {
		t.Fatalf("BoundaryPlan allocates %v times after 3 operations, %v after 300: it visits every operation", few, many)
	}
}
