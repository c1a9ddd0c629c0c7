package page

import (
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
)

// TestLaneStepsNameATakeover: a DELETING or APPLIED written by another actor than the
// COMMITTED's says whom it took over from, so the audit report shows who deleted, not only who
// committed (issue 35 item 7); steps by the committer, and rejected steps, say nothing.
func TestLaneStepsNameATakeover(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	steps := []step{
		{event: events.Planned, at: at, actor: "ops/1", verdict: "accepted", offset: 1},
		{event: events.Committed, at: at.Add(time.Second), actor: "ops/1", verdict: "accepted", offset: 2},
		{event: events.Deleting, at: at.Add(2 * time.Second), actor: "ops/9", verdict: "rejected", bad: true, offset: 3},
		{event: events.Deleting, at: at.Add(3 * time.Second), actor: "worker/kc-1/17", verdict: "accepted", offset: 4},
		{event: events.Applied, at: at.Add(4 * time.Second), actor: "worker/kc-1/17", verdict: "accepted", offset: 5},
	}
	marks, _ := laneSteps(steps)
	want := []string{"", "", "", "ops/1", "ops/1"}
	for i, m := range marks {
		if m.TakenOverFrom != want[i] {
			t.Errorf("step %d (%s by %s): TakenOverFrom %q, want %q", i, m.Event, m.Actor, m.TakenOverFrom, want[i])
		}
	}
	steps[3].actor, steps[4].actor = "ops/1", "ops/1"
	marks, _ = laneSteps(steps)
	for i, m := range marks {
		if m.TakenOverFrom != "" {
			t.Errorf("step %d: the committer finished its own operation, yet TakenOverFrom %q", i, m.TakenOverFrom)
		}
	}
}
