package fsm

import (
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
)

// State is where one operation stands in its lifecycle. Its value is the name
// of the event that led to it, so that a state and its event read alike.
type State string

// The states of an operation, in lifecycle order.
const (
	// None: no record of the operation has been accepted yet.
	None      State = ""
	Planned   State = State(events.Planned)
	Committed State = State(events.Committed)
	Deleting  State = State(events.Deleting)
	Applied   State = State(events.Applied)
)

// String names the state for people; None, whose value is empty, prints as NONE.
func (s State) String() string {
	if s == None {
		return "NONE"
	}
	return string(s)
}

// Transition is one row of the lifecycle table: Event moves an operation
// in state From to state To.
type Transition struct {
	From  State
	Event events.Event
	To    State
}

// table is the lifecycle (docs/design.md §4–§5), the one place it is written down.
// Next, the looplab/fsm machine, the lookup map and the diagram are all built
// from it.
var table = []Transition{
	{None, events.Planned, Planned},
	{Planned, events.Committed, Committed},
	{Committed, events.Deleting, Deleting},
	// A worker that crashed after DELETING appends it again before it
	// retries DeleteRecords (docs/design.md §6); a retry is not an error.
	{Deleting, events.Deleting, Deleting},
	{Deleting, events.Applied, Applied},
}

// ErrInvalidTransition is matched (errors.Is) by every error of Next.
var ErrInvalidTransition = errors.New("fsm: invalid lifecycle transition")

// Transitions returns a copy of the lifecycle table, in lifecycle order.
func Transitions() []Transition {
	return append([]Transition(nil), table...)
}

// Events returns every event of the table once, in lifecycle order.
func Events() []events.Event {
	var out []events.Event
	seen := map[events.Event]bool{}
	for _, t := range table {
		if !seen[t.Event] {
			seen[t.Event] = true
			out = append(out, t.Event)
		}
	}
	return out
}

// States returns every state of the table once, None first, in lifecycle order.
func States() []State {
	var out []State
	seen := map[State]bool{}
	for _, t := range table {
		for _, s := range []State{t.From, t.To} {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// Allowed returns the events accepted in state s, in table order; nil for a
// terminal or unknown state.
func Allowed(s State) []events.Event {
	var out []events.Event
	for _, t := range table {
		if t.From == s {
			out = append(out, t.Event)
		}
	}
	return out
}

// OperationStates returns the states an operation can be in, in lifecycle
// order: States without None. Views that list or count operations by state
// take their columns from here, so a new state reaches them all.
func OperationStates() []State { return States()[1:] }

// Order is s's place in the lifecycle (0 for the first state an operation
// is in), -1 for a state the table does not know. Views sort by it.
func (s State) Order() int {
	for i, k := range OperationStates() {
		if k == s {
			return i
		}
	}
	return -1
}

// EventOrder is e's place in the lifecycle (0 for the first event), -1 for
// an event the table does not know.
func EventOrder(e events.Event) int {
	for i, k := range Events() {
		if k == e {
			return i
		}
	}
	return -1
}

// Unfinished reports whether an operation in s was committed and not yet
// applied: a worker must finish it (COMMITTED or DELETING).
func (s State) Unfinished() bool { return s.known() && s != None && s != Planned && !s.Terminal() }

// Terminal reports whether s is a state of the table that no event leaves:
// an operation there is finished for good.
func (s State) Terminal() bool {
	return s.known() && len(Allowed(s)) == 0
}

func (s State) known() bool {
	for _, k := range States() {
		if k == s {
			return true
		}
	}
	return false
}

// step is the lookup Next uses: the table as a map, built once. A test
// cross-checks it against looplab/fsm for every (state, event) pair.
type step struct {
	from  State
	event events.Event
}

var steps = func() map[step]State {
	m := make(map[step]State, len(table))
	for _, t := range table {
		m[step{t.From, t.Event}] = t.To
	}
	return m
}()

// Next returns the state an operation in state from reaches through event e.
// It is pure and safe for concurrent use: fsm keeps no per-operation memory.
// A pair the table does not allow returns an error matching
// ErrInvalidTransition that names the state, the event and what is allowed.
func Next(from State, e events.Event) (State, error) {
	if to, ok := steps[step{from, e}]; ok {
		return to, nil
	}
	return None, invalid(from, e)
}

// invalid builds the error for a pair the table does not allow.
func invalid(from State, e events.Event) error {
	var allowed []string
	for _, a := range Allowed(from) {
		allowed = append(allowed, string(a))
	}
	list := "none"
	if from.Terminal() {
		list = "none, " + from.String() + " is terminal"
	}
	if len(allowed) > 0 {
		list = strings.Join(allowed, ", ")
	}
	var err error
	switch {
	case !knownEvent(e):
		err = errors.Newf("unknown event %q in state %s (allowed: %s)", string(e), from, list)
	case !from.known():
		err = errors.Newf("%s is not allowed in unknown state %q (allowed: %s)", string(e), string(from), list)
	default:
		err = errors.Newf("%s is not allowed in state %s (allowed: %s)", string(e), from, list)
	}
	return errors.Mark(err, ErrInvalidTransition)
}

func knownEvent(e events.Event) bool {
	for _, k := range Events() {
		if k == e {
			return true
		}
	}
	return false
}
