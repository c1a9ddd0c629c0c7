package protocol_test

import (
	"testing"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/protocol"
)

// TestFollowCommits: a round commits its plan when the control topic does not hold it, or
// holds it only PLANNED (a round that died between its PLANNED and COMMITTED: nothing else
// ever commits it); a plan committed or further on is the owner's pass's; no plan, nothing.
func TestFollowCommits(t *testing.T) {
	p := plan(t, "chk-7", events.Offsets{0: 100})
	cases := []struct {
		name  string
		steps []any
		plan  *events.Plan
		want  bool
	}{
		{"no plan this round", nil, nil, false},
		{"not on the control topic", nil, &p, true},
		{"left PLANNED by a round that died", []any{p, events.Planned}, &p, true},
		{"COMMITTED: the owner's pass finishes it", []any{p, events.Planned, events.Committed}, &p, false},
		{"DELETING", []any{p, events.Planned, events.Committed, events.Deleting}, &p, false},
		{"APPLIED", []any{p, events.Planned, events.Committed, events.Deleting, events.Applied}, &p, false},
	}
	for _, c := range cases {
		st := state(t, c.steps...)
		if got := protocol.FollowCommits(protocol.FollowDecision{Plan: c.plan}, st); got != c.want {
			t.Errorf("%s: FollowCommits = %v, want %v", c.name, got, c.want)
		}
	}
}
