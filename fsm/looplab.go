package fsm

import (
	"context"

	"github.com/cockroachdb/errors"
	lfsm "github.com/looplab/fsm"

	"github.com/kcleanup/kcleanup/events"
)

// newMachine builds a looplab/fsm machine from the table, standing in state
// from. It has no callbacks: it is used as a transition table only, which
// avoids looplab's callback pitfalls (SetState deadlocks, silently ignored
// misspelled keys).
func newMachine(from State) *lfsm.FSM {
	descs := make([]lfsm.EventDesc, 0, len(table))
	for _, t := range table {
		descs = append(descs, lfsm.EventDesc{
			Name: string(t.Event),
			Src:  []string{string(t.From)},
			Dst:  string(t.To),
		})
	}
	return lfsm.NewFSM(string(from), descs, nil)
}

// nextLooplab is Next computed by looplab/fsm, the authority for the table.
// It builds a machine per call (several maps), too slow for the projector's
// per-record fold; Next uses a precomputed map instead, and a test holds the
// two equal for every (state, event) pair.
func nextLooplab(from State, e events.Event) (State, error) {
	m := newMachine(from)
	// Never a cancellable context: a cancelled one can leave looplab stuck
	// in transition.
	err := m.Event(context.Background(), string(e))
	var noTransition lfsm.NoTransitionError
	var invalidEvent lfsm.InvalidEventError
	var unknownEvent lfsm.UnknownEventError
	switch {
	case err == nil:
		return State(m.Current()), nil
	case errors.As(err, &noTransition) && noTransition.Err == nil:
		// looplab reports a self-transition (DELETING → DELETING, a retry)
		// as NoTransitionError; for us it is an allowed step.
		return from, nil
	case errors.As(err, &invalidEvent), errors.As(err, &unknownEvent):
		return None, invalid(from, e)
	default:
		return None, errors.Wrapf(err, "looplab/fsm: %s in state %s", string(e), from)
	}
}
