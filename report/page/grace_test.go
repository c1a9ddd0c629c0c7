package page

import (
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/internal/consoletest"
	"github.com/kcleanup/kcleanup/report"
)

// TestConsoleShowsARestoreGraceWaitNotAStuckOperation: an operation the
// owner holds back for the restore grace, pending far longer than
// StuckAfter, is shown waiting until the time /v1/status names, not
// stuck; without the wait it would be.
func TestConsoleShowsARestoreGraceWaitNotAStuckOperation(t *testing.T) {
	ws, now := consoletest.FleetStatus(t)
	ts := ws.ControlTopics[0]
	ts.Blocked = nil
	_, _, c2 := consoletest.Story(t)
	now = now.Add(time.Hour)
	lane := func(ts report.TopicStatus) (Lane, Topic) {
		top := liveTopic(ts, now)
		for _, l := range top.Operations {
			if l.PlanID == c2.PlanID {
				return l, top
			}
		}
		t.Fatalf("no lane for %s", c2.PlanID)
		return Lane{}, top
	}
	if l, _ := lane(ts); l.Flag != "stuck" {
		t.Fatalf("setup: without the wait the operation is %q, want stuck", l.Flag)
	}
	until := now.Add(10 * time.Minute)
	ts.RestoreGrace = []report.GraceOperation{{PlanID: c2.PlanID, Mirror: "action-state.flink", Since: now.Add(-5 * time.Minute), TimeKnown: true, Until: until}}
	l, top := lane(ts)
	if l.Flag != "pending" || !strings.Contains(l.FlagText, "waiting out the restore grace until "+report.FormatTime(until)) {
		t.Fatalf("lane %q: %s", l.Flag, l.FlagText)
	}
	for _, a := range top.Alerts {
		if strings.Contains(a.Title, "Stuck") {
			t.Fatalf("alert %q for an operation waiting out the restore grace", a.Title)
		}
	}
}

// TestConsoleShowsABlockedRetentionPolicy: the owner's blocked round is an alert on the topic,
// with its reason; a round that only waits for --min-advance is not.
func TestConsoleShowsABlockedRetentionPolicy(t *testing.T) {
	for _, blocked := range []bool{true, false} {
		ts := report.TopicStatus{Owned: true, Retention: &report.RetentionFollow{Policy: "retention@3", At: time.Now(), NoPlan: "no-point",
			Why: "no completed recovery point of topic t in /c", Blocked: blocked}}
		if !blocked {
			ts.Retention.NoPlan, ts.Retention.Why = "below-advance", "no partition would rise"
		}
		ts.ControlTopic = "t.kcleanup"
		v := FromWorker(report.WorkerStatus{ControlTopics: []report.TopicStatus{ts}}, time.Now())
		found := false
		for _, a := range v.Topics[0].Alerts {
			if strings.HasPrefix(a.Title, "Retention policy blocked") {
				found = strings.Contains(a.Text, "no completed recovery point")
			}
		}
		if found != blocked {
			t.Errorf("blocked=%v: alerts %+v", blocked, v.Topics[0].Alerts)
		}
	}
}
