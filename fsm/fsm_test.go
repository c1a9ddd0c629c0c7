package fsm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/errors"
	lfsm "github.com/looplab/fsm"

	"github.com/kcleanup/kcleanup/events"
)

// TestTranscripts runs the datadriven files under testdata/. Regenerate the
// expected output with `go test ./fsm -rewrite` and review the diff.
//
//	next from=<STATE> event=<EVENT>   one step (NONE or an empty value is None)
//	walk                              events from None, one per input line
//	table                             the transition table
//	states                            each state with its allowed events
func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "next":
				var from, e string
				d.ScanArgs(t, "from", &from)
				d.ScanArgs(t, "event", &e)
				to, err := checkedNext(t, parseState(from), events.Event(e))
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				return to.String() + "\n"
			case "walk":
				return walk(t, d.Input)
			case "table":
				var b strings.Builder
				for _, tr := range Transitions() {
					fmt.Fprintf(&b, "%s --%s--> %s\n", tr.From, tr.Event, tr.To)
				}
				return b.String()
			case "states":
				var b strings.Builder
				for _, s := range States() {
					fmt.Fprintf(&b, "%s allowed=%v terminal=%t\n", s, Allowed(s), s.Terminal())
				}
				return b.String()
			default:
				d.Fatalf(t, "unknown command %q", d.Cmd)
				return ""
			}
		})
	})
}

// walk applies each input line as an event, starting from None. A rejected
// event leaves the state unchanged, as in the projector's fold.
func walk(t *testing.T, input string) string {
	var b strings.Builder
	s := None
	for _, line := range strings.Split(input, "\n") {
		e := events.Event(strings.TrimSpace(line))
		to, err := checkedNext(t, s, e)
		if err != nil {
			fmt.Fprintf(&b, "%s --%s--> error: %v\n", s, e, err)
			continue
		}
		fmt.Fprintf(&b, "%s --%s--> %s\n", s, e, to)
		s = to
	}
	fmt.Fprintf(&b, "final: %s terminal=%t\n", s, s.Terminal())
	return b.String()
}

// checkedNext calls Next and fails the test if looplab/fsm disagrees, or if
// an error does not match ErrInvalidTransition.
func checkedNext(t *testing.T, from State, e events.Event) (State, error) {
	t.Helper()
	to, err := Next(from, e)
	assertSameAsLooplab(t, from, e, to, err)
	if err != nil && !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("Next(%s, %s): error %q does not match ErrInvalidTransition", from, e, err)
	}
	return to, err
}

func assertSameAsLooplab(t *testing.T, from State, e events.Event, to State, err error) {
	t.Helper()
	wantTo, wantErr := nextLooplab(from, e)
	if to != wantTo || fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Errorf("Next(%q, %q) = (%q, %v); looplab/fsm says (%q, %v)", from, e, to, err, wantTo, wantErr)
	}
}

func parseState(s string) State {
	if s == "NONE" {
		return None
	}
	return State(s)
}

// lifecycle is the lifecycle of docs/design.md §4–§6 written out by hand, apart from
// the table: an edge added to or dropped from the table fails the test below
// until this spec is changed with it.
var lifecycle = map[[2]string]State{
	{"", "PLANNED"}:           Planned,
	{"PLANNED", "COMMITTED"}:  Committed,
	{"COMMITTED", "DELETING"}: Deleting,
	{"DELETING", "DELETING"}:  Deleting, // a worker's retry
	{"DELETING", "APPLIED"}:   Applied,
}

// pairs is every (state, event) pair the tests probe, including states and
// events the table does not know.
func pairs() (states []State, evs []events.Event) {
	return append(States(), "BOGUS", "planned", " PLANNED"),
		append(Events(), "", "NONE", "BOGUS", "applied", "PLANNED ")
}

// disagreements compares a lookup with looplab/fsm on every pair: looplab's
// own verdict (allowed, and where to), not the error text we render for it.
func disagreements(next func(State, events.Event) (State, error)) []string {
	var out []string
	states, evs := pairs()
	for _, s := range states {
		for _, e := range evs {
			to, err := next(s, e)
			m := newMachine(s)
			lerr := m.Event(context.Background(), string(e))
			var self lfsm.NoTransitionError
			lallowed := lerr == nil || (errors.As(lerr, &self) && self.Err == nil)
			lto := State(m.Current())
			switch {
			case (err == nil) != lallowed:
				out = append(out, fmt.Sprintf("%s/%s: allowed=%t, looplab allowed=%t", s, e, err == nil, lallowed))
			case err == nil && to != lto:
				out = append(out, fmt.Sprintf("%s/%s: to %s, looplab to %s", s, e, to, lto))
			}
		}
	}
	return out
}

// TestNextMatchesLooplab holds Next's precomputed lookup equal to looplab/fsm
// for every pair, and both equal to the lifecycle spec above.
func TestNextMatchesLooplab(t *testing.T) {
	for _, d := range disagreements(Next) {
		t.Error("Next disagrees with looplab/fsm: " + d)
	}
	states, evs := pairs()
	for _, s := range states {
		for _, e := range evs {
			to, err := Next(s, e)
			want, ok := lifecycle[[2]string{string(s), string(e)}]
			if (err == nil) != ok || to != want {
				t.Errorf("Next(%s, %q) = (%s, %v); the lifecycle says (%s, allowed=%t)", s, e, to, err, want, ok)
			}
		}
	}
}

// TestLooplabComparisonCanFail: the comparison above catches a lookup that
// drifted from the table (an extra edge, a missing one, a wrong target).
func TestLooplabComparisonCanFail(t *testing.T) {
	drifted := map[string]func(State, events.Event) (State, error){
		"extra edge PLANNED --APPLIED--> APPLIED": func(s State, e events.Event) (State, error) {
			if s == Planned && e == events.Applied {
				return Applied, nil
			}
			return Next(s, e)
		},
		"missing retry DELETING --DELETING-->": func(s State, e events.Event) (State, error) {
			if s == Deleting && e == events.Deleting {
				return None, invalid(s, e)
			}
			return Next(s, e)
		},
		"wrong target COMMITTED --DELETING--> APPLIED": func(s State, e events.Event) (State, error) {
			if to, err := Next(s, e); err != nil || s != Committed || e != events.Deleting {
				return to, err
			}
			return Applied, nil
		},
	}
	for name, next := range drifted {
		if len(disagreements(next)) == 0 {
			t.Errorf("%s: looplab comparison found no difference", name)
		}
	}
}

func TestInvalidTransitionError(t *testing.T) {
	to, err := Next(Planned, events.Applied)
	if !errors.Is(err, ErrInvalidTransition) {
		t.Fatalf("Next(PLANNED, APPLIED) error %v does not match ErrInvalidTransition", err)
	}
	if to != None {
		t.Errorf("Next returned state %q with an error, want None", to)
	}
	const want = "APPLIED is not allowed in state PLANNED (allowed: COMMITTED)"
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

// TestStatesNameTheirEvents: a state's value is the name of the event that
// leads to it (the contract with the events package).
func TestStatesNameTheirEvents(t *testing.T) {
	for _, tr := range Transitions() {
		if string(tr.To) != string(tr.Event) {
			t.Errorf("transition %v: state %q is not named after its event", tr, tr.To)
		}
	}
}

// TestTransitionsIsACopy: callers cannot edit the lifecycle through the slice.
func TestTransitionsIsACopy(t *testing.T) {
	Transitions()[0].To = Applied
	if to, err := Next(None, events.Planned); err != nil || to != Planned {
		t.Fatalf("Next(NONE, PLANNED) = %q, %v after editing Transitions()", to, err)
	}
}

// TestDiagramUpToDate fails when docs/state-diagram.md no longer matches the
// table.
func TestDiagramUpToDate(t *testing.T) {
	path := filepath.Join("..", "docs", "state-diagram.md")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v (run `make docs`)", path, err)
	}
	if string(got) != Markdown() {
		t.Errorf("%s is stale: run `make docs` and commit it.\nwant:\n%s", path, Markdown())
	}
}

func TestMermaidIsDeterministic(t *testing.T) {
	first := Mermaid()
	for range 20 {
		if Mermaid() != first {
			t.Fatal("Mermaid() changed between calls")
		}
	}
	for _, tr := range Transitions() {
		if tr.From == None {
			continue
		}
		edge := fmt.Sprintf("%s --> %s: %s", tr.From, tr.To, tr.Event)
		if !strings.Contains(first, edge) {
			t.Errorf("diagram lacks edge %q:\n%s", edge, first)
		}
	}
}

var sinkState State

// BenchmarkNext measures the path the projector takes once per record.
func BenchmarkNext(b *testing.B) {
	tr := Transitions()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r := tr[i%len(tr)]
		sinkState, _ = Next(r.From, r.Event)
	}
}

// BenchmarkNextLooplab measures building a looplab/fsm machine per call, the
// reason Next uses a precomputed map.
func BenchmarkNextLooplab(b *testing.B) {
	tr := Transitions()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r := tr[i%len(tr)]
		sinkState, _ = nextLooplab(r.From, r.Event)
	}
}

// BenchmarkNextInvalid measures a rejection, which builds an error.
func BenchmarkNextInvalid(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkState, _ = Next(Applied, events.Deleting)
	}
}

// FuzzNext: for any state and event, Next does not panic, agrees with
// looplab/fsm, and either succeeds or matches ErrInvalidTransition.
func FuzzNext(f *testing.F) {
	for _, tr := range Transitions() {
		f.Add(string(tr.From), string(tr.Event))
	}
	f.Add("APPLIED", "DELETING")
	f.Add("BOGUS", "")
	f.Fuzz(func(t *testing.T, from, e string) {
		checkedNext(t, State(from), events.Event(e))
	})
}

// TestOperationVocabulary: the views' columns and orders come from the table, so a new state
// or event reaches every view that lists them (issue 19 item 6).
func TestOperationVocabulary(t *testing.T) {
	want := []State{Planned, Committed, Deleting, Applied}
	if got := OperationStates(); !slices.Equal(got, want) {
		t.Fatalf("OperationStates() = %v, want %v", got, want)
	}
	for i, s := range want {
		if s.Order() != i {
			t.Errorf("%s.Order() = %d, want %d", s, s.Order(), i)
		}
	}
	if State("PAUSED").Order() != -1 || None.Order() != -1 {
		t.Error("an unknown state or None has a place in the lifecycle")
	}
	for i, e := range []events.Event{events.Planned, events.Committed, events.Deleting, events.Applied} {
		if EventOrder(e) != i {
			t.Errorf("EventOrder(%s) = %d, want %d", e, EventOrder(e), i)
		}
	}
	if EventOrder("PAUSED") != -1 {
		t.Error("an unknown event has a place in the lifecycle")
	}
	for s, want := range map[State]bool{None: false, Planned: false, Committed: true, Deleting: true, Applied: false, "PAUSED": false} {
		if s.Unfinished() != want {
			t.Errorf("%q.Unfinished() = %v, want %v", s, s.Unfinished(), want)
		}
	}
}

// TestEventsAreTheLifecycle: the events package's list of known events
// (events.Lifecycle, which Known, the decoder and their messages use) is
// this table's, in its order; and States is None then one state per event,
// the numbering projector's fold relies on.
func TestEventsAreTheLifecycle(t *testing.T) {
	if got, want := events.Lifecycle(), Events(); !slices.Equal(got, want) {
		t.Fatalf("events.Lifecycle() = %v, fsm.Events() = %v: one list, in one order", got, want)
	}
	states := States()
	if len(states) != len(Events())+1 || states[0] != None {
		t.Fatalf("States() = %v: want None, then one state per event of %v", states, Events())
	}
	for i, e := range Events() {
		if string(states[i+1]) != string(e) {
			t.Fatalf("States() = %v: state %d is not event %s's", states, i+1, e)
		}
	}
}
