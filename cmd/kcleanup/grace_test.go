package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/protocol"
)

// TestApplyWaitsOutTheRestoreGrace: `kcleanup apply --restore-grace` with
// a Flink Agents mirror attached writes the plan's COMMITTED to the mirror,
// says until when it waits, and appends DELETING (after which it deletes)
// no earlier than the grace after the brokers made the mirror's record
// readable; then it finishes, APPLIED. The grace is read from
// KCLEANUP_RESTORE_GRACE too. Real broker.
func TestApplyWaitsOutTheRestoreGrace(t *testing.T) {
	const grace = 6 * time.Second
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 2, 200, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	dir := t.TempDir()
	_, path1 := opTestPlan(t, dir, "chk-1", topic, id, events.Offsets{0: 100, 1: 50})
	if code, _, stderr := e.run(t, "apply", path1); code != exitOK {
		t.Fatalf("apply: exit %d\n%s", code, stderr)
	}
	mirror := kafkatest.NewTopic(t, e.cl, topic+".flink", 1, map[string]string{"cleanup.policy": "compact"})
	// The attachment carries 3s; the process's own 6s lengthens it.
	if code, _, stderr := e.run(t, "mirror", "attach", mirror, "--topic", topic, "--reason", "the job reads it", "--restore-grace", "3s"); code != exitOK {
		t.Fatalf("mirror attach: exit %d\n%s", code, stderr)
	}

	p2, path2 := opTestPlan(t, dir, "chk-2", topic, id, events.Offsets{0: 150, 1: 120})
	t.Setenv(envRestoreGrace, grace.String())
	code, stdout, stderr := e.run(t, "-o", "json", "apply", path2)
	if code != exitOK || !strings.Contains(stderr, "[grace] waiting out the restore grace of 6s until ") {
		t.Fatalf("apply --restore-grace: exit %d, want 0 and the wait announced\n%s", code, stderr)
	}
	var rep applyReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.State != fsm.Applied {
		t.Fatalf("state %s after the grace, want APPLIED", rep.State)
	}

	c, ctx := e.cluster(t)
	view, err := c.ReadMirror(ctx, mirror)
	if err != nil {
		t.Fatal(err)
	}
	var acked time.Time
	for _, o := range view.Fold.Operations() {
		if o.Plan.PlanID == p2.PlanID {
			acked = view.Visible[o.First]
			if o.Status != flinkagents.Applied {
				t.Fatalf("mirror holds %s as %s, want APPLIED", p2.PlanID, o.Status)
			}
		}
	}
	if acked.IsZero() {
		t.Fatalf("no known time for plan %s on the mirror: %+v", p2.PlanID, view.Visible)
	}
	proj, err := c.Project(ctx, control)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	op, _ := proj.State.Operation(p2.PlanID)
	deleting := false
	for _, h := range op.History {
		if h.Event == events.Deleting {
			deleting = true
			if h.At.Before(acked.Add(grace)) {
				t.Fatalf("DELETING at %s, before the grace was out (the mirror's COMMITTED was acknowledged at %s, + %s)", h.At, acked, grace)
			}
		}
	}
	if !deleting {
		t.Fatalf("no DELETING for %s: %+v", p2.PlanID, op.History)
	}
}

// TestCtrlCStopsTheRestoreGraceWait: Ctrl-C while apply waits out the
// restore grace stops the wait at once: exit 130, nothing deleted, the plan
// COMMITTED, and the error says so. The built binary, a real broker.
func TestCtrlCStopsTheRestoreGraceWait(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 2, 100, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	if code, _, stderr := e.run(t, "init", "--topic", topic); code != exitOK {
		t.Fatalf("init: exit %d\n%s", code, stderr)
	}
	mirror := kafkatest.NewTopic(t, e.cl, topic+".flink", 1, map[string]string{"cleanup.policy": "compact"})
	if code, _, stderr := e.run(t, "mirror", "attach", mirror, "--topic", topic, "--reason", "the job reads it"); code != exitOK {
		t.Fatalf("mirror attach: exit %d\n%s", code, stderr)
	}
	plan, path := opTestPlan(t, t.TempDir(), "chk-1", topic, id, events.Offsets{0: 30, 1: 20})
	// No --restore-grace: the attachment's (the default, 15m) is waited out.
	apply, stderr := e.opStartProcess(t, nil, "apply", path)
	opAwait(t, "apply waits out the restore grace", func() bool {
		return strings.Contains(stderr.String(), "[grace] waiting out the restore grace of 15m0s until ")
	})
	if err := apply.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := opExitCode(t, apply)
	opWantFailure(t, code, stderr.String(), exitInterrupted, "Error: interrupted", "sent no DeleteRecords",
		"Hint: the wait for the restore grace (until ", ") was stopped: nothing was deleted")
	// Re-run exactly as the hint says: it waits out the same grace (issue 30: it deleted at once).
	again, stderr2 := e.opStartProcess(t, nil, "apply", path)
	opAwait(t, "the re-run waits out the restore grace too", func() bool {
		return strings.Contains(stderr2.String(), "[grace] waiting out the restore grace of 15m0s until ")
	})
	if got := e.logStarts(t, topic); !got.Equal(events.Offsets{0: 0, 1: 0}) {
		t.Errorf("log starts %v after the re-run started: something was deleted", got)
	}
	if err := again.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	opWantFailure(t, opExitCode(t, again), stderr2.String(), exitInterrupted, "Error: interrupted", ") was stopped: nothing was deleted")
	if got := e.logStarts(t, topic); !got.Equal(events.Offsets{0: 0, 1: 0}) {
		t.Errorf("log starts %v: something was deleted", got)
	}
	if st := e.status(t, control); len(st.Operations) == 0 || st.Operations[len(st.Operations)-1].PlanID != plan.PlanID ||
		st.Operations[len(st.Operations)-1].State != fsm.Committed {
		t.Errorf("after the interrupted wait: %+v, want plan %s COMMITTED", st.Operations, plan.PlanID)
	}
}

// TestMirrorGraceIsOnTheControlTopic: `kcleanup mirror grace D` changes the
// restore grace the mirror's attachment carries; status shows it, history
// shows the change with its reason, and an apply with no --restore-grace of
// its own waits it out (issue 30: the grace was each process's flag). Real
// broker.
func TestMirrorGraceIsOnTheControlTopic(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 2, 200, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	dir := t.TempDir()
	_, path1 := opTestPlan(t, dir, "chk-1", topic, id, events.Offsets{0: 100, 1: 50})
	if code, _, stderr := e.run(t, "apply", path1); code != exitOK {
		t.Fatalf("apply: exit %d\n%s", code, stderr)
	}
	mirror := kafkatest.NewTopic(t, e.cl, topic+".flink", 1, map[string]string{"cleanup.policy": "compact"})
	if code, _, stderr := e.run(t, "mirror", "attach", mirror, "--topic", topic, "--restore-grace", "0"); code != exitOK {
		t.Fatalf("mirror attach: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := e.run(t, "-o", "json", "mirror", "grace", "5s", "--topic", topic, "--reason", "restores take 5 seconds")
	if code != exitOK || !strings.Contains(stdout, `"restoreGrace": "5s"`) {
		t.Fatalf("mirror grace: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if g := e.statusJSON(t, control).MirrorGrace; g == nil || g.Seconds != 5 || g.Unset || g.Mirror != mirror {
		t.Fatalf("status mirrorGrace %+v, want 5 seconds on %s", g, mirror)
	}
	code, stdout, stderr = e.run(t, "history", "--topic", topic, "--all")
	if code != exitOK || !strings.Contains(stdout, "restore grace 0s -> 5s: restores take 5 seconds") {
		t.Fatalf("history does not show the change: exit %d\n%s\n%s", code, stdout, stderr)
	}

	p2, path2 := opTestPlan(t, dir, "chk-2", topic, id, events.Offsets{0: 150, 1: 120})
	code, _, stderr = e.run(t, "apply", path2)
	if code != exitOK || !strings.Contains(stderr, "[grace] waiting out the restore grace of 5s until ") {
		t.Fatalf("apply without --restore-grace: exit %d, want 0 after waiting out the attachment's 5s\n%s", code, stderr)
	}
	if got := e.logStarts(t, topic); !got.Equal(p2.Offsets) {
		t.Fatalf("log starts %v after the grace, want %v", got, p2.Offsets)
	}
}
