package page

import (
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/consoletest"
	"github.com/kcleanup/kcleanup/report"
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

// TestReportSaysWhy: the audit report says why each plan was planned and committed, from the
// records' own reasons (apply --reason), and "(no reason given)" where the writer gave none; a
// DELETING or APPLIED (the workers') carries no why. The story's chk-1 COMMITTED has a reason.
func TestReportSaysWhy(t *testing.T) {
	recs, c1, _ := consoletest.Story(t)
	proj := consoletest.Projection(recs)
	v := FromLog(report.StatusOf(proj), proj.View.State.Audit())
	for _, l := range v.Topics[0].Operations {
		if l.PlanID != c1.PlanID {
			continue
		}
		want := map[events.Event]string{events.Planned: "why: (no reason given)", events.Committed: "why: reclaim disk before the quarter close (OPS-1234)"}
		for _, m := range l.Steps {
			if m.Why != want[m.Event] {
				t.Errorf("%s: Why %q, want %q", m.Event, m.Why, want[m.Event])
			}
		}
		return
	}
	t.Fatalf("no lane for plan %s", c1.PlanID)
}
