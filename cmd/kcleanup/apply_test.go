package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// opApplyDoc is the part of `apply -o json` the tests read.
type opApplyDoc struct {
	SchemaVersion  int                 `json:"schemaVersion"`
	PlanID         string              `json:"planId"`
	State          fsm.State           `json:"state"`
	AlreadyApplied bool                `json:"alreadyApplied"`
	Boundary       events.Offsets      `json:"boundary"`
	LogStart       events.Offsets      `json:"logStart"`
	LiveLogStart   events.Offsets      `json:"liveLogStart"`
	Steps          []protocol.Progress `json:"steps"`
}

func opDecodeApply(t *testing.T, stdout string) opApplyDoc {
	t.Helper()
	var d opApplyDoc
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatalf("apply -o json: %v\n%s", err, stdout)
	}
	if d.SchemaVersion != 1 {
		t.Fatalf("schemaVersion %d", d.SchemaVersion)
	}
	return d
}

// TestApplyEndToEnd applies a plan on the real broker and cross-checks the log-start offsets
// with Kafka's own kafka-get-offsets; a second apply reports the plan as already APPLIED and
// writes nothing.
func TestApplyEndToEnd(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 2, 200, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	plan, path := opTestPlan(t, t.TempDir(), "chk-7", topic, id, events.Offsets{0: 150, 1: 100})

	code, stdout, stderr := e.run(t, "-o", "json", "apply", path)
	if code != exitOK {
		t.Fatalf("apply: exit %d\n%s", code, stderr)
	}
	for _, step := range []string{
		"[planned] PLANNED " + plan.PlanID + " at control offset 0",
		"[committed] COMMITTED " + plan.PlanID + " at control offset 1",
		"[deleting] DELETING " + plan.PlanID,
		"[delete-records] DeleteRecords on 2 of 2 partitions of " + topic,
		"[verify]",
		"[applied] APPLIED " + plan.PlanID,
	} {
		if !strings.Contains(stderr, step) {
			t.Errorf("stderr lacks step %q:\n%s", step, stderr)
		}
	}
	d := opDecodeApply(t, stdout)
	want := events.Offsets{0: 150, 1: 100}
	if d.PlanID != plan.PlanID || d.State != fsm.Applied || d.AlreadyApplied ||
		!d.LogStart.Equal(want) || !d.Boundary.Equal(want) || len(d.Steps) < 6 {
		t.Errorf("apply -o json: %+v", d)
	}

	// Kafka's own tool: --time -2 is the earliest offset, i.e. the log start.
	out := kafkatest.RunTool(t, "kafka-get-offsets", "--topic", topic, "--time", "-2")
	for p, off := range want {
		if line := fmt.Sprintf("%s:%d:%d", topic, p, off); !strings.Contains(out, line) {
			t.Errorf("kafka-get-offsets lacks %q:\n%s", line, out)
		}
	}
	recs, _ := e.controlRecords(t, control)
	var got []events.Event
	for _, r := range recs {
		got = append(got, r.Event)
	}
	if fmt.Sprint(got) != fmt.Sprint([]events.Event{events.Planned, events.Committed, events.Deleting, events.Applied}) {
		t.Errorf("control records: %v", got)
	}

	// Again: nothing to do, nothing written, exit 0.
	before := e.snapshot(t, topic, control)
	code, stdout, stderr = e.run(t, "apply", path)
	if code != exitOK || !strings.Contains(stderr, "already APPLIED") || !strings.Contains(stdout, "already") {
		t.Errorf("second apply: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	e.assertUnchanged(t, topic, control, before)

	// Records deleted since, outside kcleanup: re-applying shows the live log start next to
	// the boundary, not only the one APPLIED verified.
	e.deleteRecordsTo(t, topic, events.Offsets{0: 180})
	code, stdout, stderr = e.run(t, "apply", path)
	if code != exitOK || !strings.Contains(stdout, "0=180 1=100 (live; APPLIED verified 0=150 1=100)") {
		t.Errorf("apply after a deletion outside kcleanup: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = e.run(t, "-o", "json", "apply", path)
	if d := opDecodeApply(t, stdout); code != exitOK || !d.AlreadyApplied || !d.LiveLogStart.Equal(events.Offsets{0: 180, 1: 100}) || !d.LogStart.Equal(want) {
		t.Errorf("apply -o json after a deletion outside kcleanup: exit %d %+v\n%s", code, d, stderr)
	}
}

// TestApplyRefusalsLeaveKafkaUnchanged runs apply (and submit) on each kind of bad input of the
// issue against the real broker: each fails with exit 1 and an error that says what to do, and
// Kafka is exactly as it was: no record on the control topic (not even a new control topic), and
// the same log starts.
func TestApplyRefusalsLeaveKafkaUnchanged(t *testing.T) {
	e := opTestEnv(t)

	t.Run("tampered plan", func(t *testing.T) {
		topic, id := e.governedTopic(t, 1, 100, opGoodDataConfigs())
		_, path := opTestPlan(t, t.TempDir(), "chk-1", topic, id, events.Offsets{0: 50})
		data, _ := os.ReadFile(path)
		edited := strings.Replace(string(data), `"0": 50`, `"0": 90`, 1)
		if edited == string(data) {
			t.Fatalf("plan text not as expected:\n%s", data)
		}
		if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		control := protocol.ControlTopicFor(topic)
		before := e.snapshot(t, topic, control)
		for _, cmd := range []string{"apply", "submit"} {
			code, _, stderr := e.run(t, cmd, path)
			opWantFailure(t, code, stderr, exitError, "plan file "+path+`: invalid plan: field "planId": does not match the plan's content`,
				"Hint: make a new plan from the recovery point instead of editing one")
		}
		e.assertUnchanged(t, topic, control, before)
	})

	t.Run("topic recreated since the plan", func(t *testing.T) {
		topic, oldID := e.governedTopic(t, 1, 100, opGoodDataConfigs())
		_, path := opTestPlan(t, t.TempDir(), "chk-1", topic, oldID, events.Offsets{0: 50})
		e.recreate(t, topic, 1, opGoodDataConfigs())
		// A new client: e.cl's producer still knows the old incarnation's ID.
		kafkatest.Produce(t, kafkatest.Client(t, e.bootstrap), topic, 0, 100)
		newID := e.topicID(t, topic)
		if newID == oldID {
			t.Fatalf("recreated topic kept its ID %s", oldID)
		}
		control := protocol.ControlTopicFor(topic)
		before := e.snapshot(t, topic, control)
		for _, cmd := range []string{"apply", "submit"} {
			code, _, stderr := e.run(t, cmd, path)
			opWantFailure(t, code, stderr, exitError,
				fmt.Sprintf("has topic ID %s but the plan was made for ID %s: the topic was deleted and recreated", newID, oldID),
				"Hint: make a new plan from recovery markers of the current topic",
				"Hint: nothing was committed or deleted")
		}
		e.assertUnchanged(t, topic, control, before)
	})

	t.Run("data topic compact only", func(t *testing.T) {
		cfg := opGoodDataConfigs()
		cfg["cleanup.policy"] = "compact"
		topic, id := e.governedTopic(t, 1, 100, cfg)
		_, path := opTestPlan(t, t.TempDir(), "chk-1", topic, id, events.Offsets{0: 50})
		control := protocol.ControlTopicFor(topic)
		before := e.snapshot(t, topic, control)
		code, _, stderr := e.run(t, "apply", path)
		opWantFailure(t, code, stderr, exitError,
			`cleanup.policy is "compact"; kcleanup needs compact,delete`,
			fmt.Sprintf("Hint: kafka-configs --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config 'retention.ms=-1,retention.bytes=-1,cleanup.policy=[compact,delete]'", e.bootstrap, topic))
		e.assertUnchanged(t, topic, control, before)
	})

	t.Run("offset above the high watermark", func(t *testing.T) {
		topic, id := e.governedTopic(t, 2, 100, opGoodDataConfigs())
		_, path := opTestPlan(t, t.TempDir(), "chk-1", topic, id, events.Offsets{0: 50, 1: 101})
		control := protocol.ControlTopicFor(topic)
		before := e.snapshot(t, topic, control)
		code, _, stderr := e.run(t, "apply", path)
		opWantFailure(t, code, stderr, exitError,
			"partition 1: plan offset 101 is outside the available range [0, 100] (log start, high watermark)",
			"Hint: plan from a recovery point whose offsets are still in the topic")
		if strings.Contains(stderr, "partition 0") {
			t.Errorf("partition 0 is fine but is named:\n%s", stderr)
		}
		e.assertUnchanged(t, topic, control, before)
	})

	t.Run("offset below the log start", func(t *testing.T) {
		topic, id := e.governedTopic(t, 1, 100, opGoodDataConfigs())
		e.deleteRecordsTo(t, topic, events.Offsets{0: 60})
		_, path := opTestPlan(t, t.TempDir(), "chk-1", topic, id, events.Offsets{0: 40})
		control := protocol.ControlTopicFor(topic)
		before := e.snapshot(t, topic, control)
		code, _, stderr := e.run(t, "apply", path)
		opWantFailure(t, code, stderr, exitError,
			"partition 0: plan offset 40 is outside the available range [60, 100] (log start, high watermark)")
		e.assertUnchanged(t, topic, control, before)
	})

	t.Run("plan below the committed boundary", func(t *testing.T) {
		topic, id := e.governedTopic(t, 2, 100, opGoodDataConfigs())
		dir := t.TempDir()
		first, path := opTestPlan(t, dir, "chk-2", topic, id, events.Offsets{0: 60, 1: 60})
		if code, _, stderr := e.run(t, "apply", path); code != exitOK {
			t.Fatalf("first apply: exit %d\n%s", code, stderr)
		}
		_, older := opTestPlan(t, dir, "chk-1", topic, id, events.Offsets{0: 70, 1: 50})
		control := protocol.ControlTopicFor(topic)
		before := e.snapshot(t, topic, control)
		for _, cmd := range []string{"apply", "submit"} {
			code, _, stderr := e.run(t, cmd, older)
			opWantFailure(t, code, stderr, exitError,
				fmt.Sprintf("partition 1: plan offset 50 is below the committed boundary 60 (set by plan %s)", first.PlanID),
				"Hint: plan from a newer recovery point")
			if strings.Contains(stderr, "partition 0:") {
				t.Errorf("partition 0 is above the boundary but is named:\n%s", stderr)
			}
			// One error per partition, the decisive one (issue 14 row 4): partition 1 is also
			// below its log start, which the boundary makes moot.
			if n := strings.Count(stderr, "partition 1:"); n != 1 || strings.Contains(stderr, "outside the available range") {
				t.Errorf("partition 1 is named %d times, want once with the boundary:\n%s", n, stderr)
			}
		}
		e.assertUnchanged(t, topic, control, before)
	})

	t.Run("control topic with two partitions", func(t *testing.T) {
		topic, id := e.dataTopic(t, 1, 100, opGoodDataConfigs())
		control := protocol.ControlTopicFor(topic)
		kafkatest.CreateTopic(t, e.cl, control, 2, map[string]string{"cleanup.policy": "compact"})
		_, path := opTestPlan(t, t.TempDir(), "chk-1", topic, id, events.Offsets{0: 50})
		before := e.snapshot(t, topic, control)
		for _, cmd := range []string{"apply", "submit"} {
			code, _, stderr := e.run(t, cmd, path)
			opWantFailure(t, code, stderr, exitError,
				"control topic "+control+": has 2 partitions; a control topic needs exactly one",
				"Hint: create a new one-partition control topic: kcleanup init --topic "+topic+" --control-topic <new name>")
		}
		e.assertUnchanged(t, topic, control, before)
		if n := e.endOffsets(t, control); n[1] != 0 {
			t.Errorf("partition 1 of the control topic got records: %v", n)
		}
	})

	t.Run("control topic with the delete policy", func(t *testing.T) {
		topic, id := e.governedTopic(t, 1, 100, opGoodDataConfigs())
		control := "optest-ctl-" + id[:8]
		kafkatest.CreateTopic(t, e.cl, control, 1, map[string]string{"cleanup.policy": "delete"})
		_, path := opTestPlan(t, t.TempDir(), "chk-1", topic, id, events.Offsets{0: 50})
		before := e.snapshot(t, topic, control)
		code, _, stderr := e.run(t, "--control-topic", control, "apply", path)
		opWantFailure(t, code, stderr, exitError,
			"control topic "+control+`: cleanup.policy is "delete"; a control topic needs exactly compact`,
			fmt.Sprintf("Hint: kafka-configs --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config cleanup.policy=compact", e.bootstrap, control))
		e.assertUnchanged(t, topic, control, before)
	})
}

// TestApplyUnreachableBrokerFailsWithinTimeout points every operator command, with --timeout 2s,
// at a port that refuses connections and at a listener that accepts them and never answers: each
// must fail with a hint (plan: write the plan and say the preview is unavailable) and finish
// promptly. The measured times are logged.
func TestApplyUnreachableBrokerFailsWithinTimeout(t *testing.T) {
	kafkatest.Bootstrap(t) // an integration test: it skips under -short like the others
	clearEnv(t)
	dir := t.TempDir()
	_, path := opTestPlan(t, dir, "chk-1", "action-state", "oBnTyPS2TqmC9ctLrPFH6w", events.Offsets{0: 50})
	markers := opTestMarkers(t, dir, "m.json", events.Marker{Topic: "action-state", TopicID: "oBnTyPS2TqmC9ctLrPFH6w", Offsets: events.Offsets{0: 50}})
	silent := opSilentListener(t)
	const timeout = 2 * time.Second
	for _, server := range []struct{ name, addr, want string }{
		{"refused", "127.0.0.1:1", "Hint: could not connect to 127.0.0.1:1"},
		{"silent", silent, "Hint: no answer from " + silent + " within --timeout 2s"},
	} {
		for _, tc := range []struct {
			args []string
			code int
		}{
			{[]string{"apply", path}, exitError},
			{[]string{"submit", path}, exitError},
			{[]string{"init", "--topic", "action-state"}, exitError},
			{[]string{"doctor", "--topic", "action-state"}, exitError},
			{[]string{"plan", "--markers", markers, "--recovery-point", "chk-1"}, exitOK},
		} {
			t.Run(server.name+"/"+tc.args[0], func(t *testing.T) {
				t.Parallel()
				began := time.Now()
				code, stdout, stderr := runCLI(t, append([]string{"-b", server.addr, "--timeout", timeout.String()}, tc.args...)...)
				took := time.Since(began)
				want := server.want
				if tc.args[0] == "plan" {
					want = "preview unavailable: "
					if !strings.Contains(stdout, `"planId"`) {
						t.Errorf("plan did not write the plan:\n%s", stdout)
					}
				}
				opWantFailure(t, code, stderr, tc.code, want)
				t.Logf("took %s with --timeout %s", took.Round(time.Millisecond), timeout)
				// Generous for a loaded machine, far below the default --timeout of 30s: proves
				// that the flag bounds the wait.
				if took > timeout+5*time.Second {
					t.Errorf("took %s with --timeout %s", took, timeout)
				}
			})
		}
	}
}

// TestApplyConflictingPlansConcurrently starts two kcleanup processes together with plans that
// are each valid but conflict (A raises partition 0 above B, B raises partition 1 above A):
// exactly one wins, the other reports that it was superseded and by which plan, and the
// boundary is the winner's.
func TestApplyConflictingPlansConcurrently(t *testing.T) {
	e := opTestEnv(t)
	opTestBinary(t) // build before the race starts
	const rounds = 4
	races := 0
	for round := 0; round < rounds; round++ {
		topic, id := e.governedTopic(t, 2, 200, opGoodDataConfigs())
		control := protocol.ControlTopicFor(topic)
		dir := t.TempDir()
		planA, pathA := opTestPlan(t, dir, "chk-A", topic, id, events.Offsets{0: 150, 1: 100})
		planB, pathB := opTestPlan(t, dir, "chk-B", topic, id, events.Offsets{0: 100, 1: 150})

		var wg sync.WaitGroup
		var a, b opProcess
		start := make(chan struct{})
		wg.Add(2)
		go func() { defer wg.Done(); <-start; a = e.runProcess(t, nil, "-o", "json", "apply", pathA) }()
		go func() { defer wg.Done(); <-start; b = e.runProcess(t, nil, "-o", "json", "apply", pathB) }()
		close(start)
		wg.Wait()

		winner, loser, winPlan, losePlan := a, b, planA, planB
		if a.code != exitOK {
			winner, loser, winPlan, losePlan = b, a, planB, planA
		}
		if winner.code != exitOK || loser.code != exitError {
			t.Fatalf("round %d: exit codes A=%d B=%d, want one 0 and one 1\nA:\n%s\nB:\n%s", round, a.code, b.code, a.stderr, b.stderr)
		}
		// Usually both pass the check and race to COMMITTED: the loser reads back that it was
		// superseded. If one process lagged so far that the winner had committed before its
		// check, the check refuses it instead, naming the same winner; if it lagged until the
		// winner had deleted too (a first plan's tombstone scan widens the window), the physical
		// check refuses it. All are correct and write nothing; at least one round must be a
		// real race (asserted after the loop).
		superseded := fmt.Sprintf("plan %s was superseded by plan %s", losePlan.PlanID, winPlan.PlanID)
		switch {
		case strings.Contains(loser.stderr, superseded):
			races++
			opWantFailure(t, loser.code, loser.stderr, exitError, "nothing was deleted for this plan")
		case strings.Contains(loser.stderr, "is outside the available range"):
			opWantFailure(t, loser.code, loser.stderr, exitError, "(log start, high watermark)", "Hint: nothing was committed or deleted")
		default:
			opWantFailure(t, loser.code, loser.stderr, exitError,
				"is below the committed boundary", "(set by plan "+winPlan.PlanID+")", "Hint: nothing was committed or deleted")
		}
		if loser.stdout != "" {
			t.Errorf("the loser printed a result:\n%s", loser.stdout)
		}
		d := opDecodeApply(t, winner.stdout)
		if d.State != fsm.Applied || !d.Boundary.Equal(winPlan.Offsets) {
			t.Errorf("winner: %+v, want APPLIED with boundary %v", d, winPlan.Offsets)
		}
		if got := e.logStarts(t, topic); !got.Equal(winPlan.Offsets) {
			t.Errorf("log starts %v, want the winner's %v", got, winPlan.Offsets)
		}
		recs, _ := e.controlRecords(t, control)
		committed := 0
		for _, r := range recs {
			if r.Event == events.Committed && strings.HasPrefix(r.Key, losePlan.PlanID) {
				committed++
			}
		}
		// The loser's COMMITTED may be on the log, rejected by the fold: the projection shows
		// only the winner committed.
		st := e.status(t, control)
		if !st.Boundary.Equal(winPlan.Offsets) {
			t.Errorf("projected boundary %v, want the winner's %v", st.Boundary, winPlan.Offsets)
		}
		for _, op := range st.Operations {
			want := fsm.Applied
			if op.PlanID == losePlan.PlanID {
				want = fsm.Planned
			}
			if op.State != want {
				t.Errorf("operation %s is %s, want %s", op.PlanID, op.State, want)
			}
		}
		t.Logf("round %d: %s won; the loser's COMMITTED records on the log: %d", round, map[bool]string{true: "A", false: "B"}[winPlan.PlanID == planA.PlanID], committed)
	}
	t.Logf("%d of %d rounds raced to COMMITTED", races, rounds)
	if races == 0 {
		t.Errorf("no round raced: the loser was always refused by its check, so the superseded path was not exercised")
	}
}

// TestApplyResumesAnInterruptedPlan kills apply right after COMMITTED (a failpoint), then runs
// it again: it resumes and finishes. --no-wait stops after COMMITTED on purpose.
func TestApplyResumesAnInterruptedPlan(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 2, 100, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	dir := t.TempDir()
	plan, path := opTestPlan(t, dir, "chk-1", topic, id, events.Offsets{0: 30, 1: 40})

	crashed := e.runProcess(t, []string{worker.FailpointEnv + "=" + worker.AfterCommitted}, "apply", path)
	if crashed.code != -1 || !strings.Contains(crashed.stderr, "[committed] COMMITTED "+plan.PlanID) {
		t.Fatalf("failpoint run: exit %d (want killed)\n%s", crashed.code, crashed.stderr)
	}
	if got := e.logStarts(t, topic); !got.Equal(events.Offsets{0: 0, 1: 0}) {
		t.Fatalf("log starts moved before DELETING: %v", got)
	}
	code, stdout, stderr := e.run(t, "-o", "json", "apply", path)
	if code != exitOK || !strings.Contains(stderr, "is COMMITTED: resuming") {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	if d := opDecodeApply(t, stdout); d.State != fsm.Applied || !d.LogStart.Equal(plan.Offsets) {
		t.Errorf("resume: %+v", d)
	}
	if got := e.logStarts(t, topic); !got.Equal(plan.Offsets) {
		t.Errorf("log starts %v, want %v", got, plan.Offsets)
	}

	// --no-wait: COMMITTED and nothing deleted; a later apply finishes it.
	next, path2 := opTestPlan(t, dir, "chk-2", topic, id, events.Offsets{0: 60, 1: 70})
	code, stdout, stderr = e.run(t, "-o", "json", "apply", "--no-wait", path2)
	if code != exitOK {
		t.Fatalf("--no-wait: exit %d\n%s", code, stderr)
	}
	if d := opDecodeApply(t, stdout); d.State != fsm.Committed || !d.Boundary.Equal(next.Offsets) || d.LogStart != nil {
		t.Errorf("--no-wait: %+v", d)
	}
	if strings.Contains(stderr, "[deleting]") {
		t.Errorf("--no-wait went on to delete:\n%s", stderr)
	}
	if got := e.logStarts(t, topic); !got.Equal(plan.Offsets) {
		t.Errorf("--no-wait moved log starts: %v", got)
	}
	code, stdout, stderr = e.run(t, "apply", path2)
	if code != exitOK || !strings.Contains(stdout, "APPLIED") {
		t.Fatalf("apply after --no-wait: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := e.logStarts(t, topic); !got.Equal(next.Offsets) {
		t.Errorf("log starts %v, want %v", got, next.Offsets)
	}
	recs, _ := e.controlRecords(t, control)
	if n := opCountEvents(recs, events.Committed); n != 2 {
		t.Errorf("%d COMMITTED records, want 2 (one per plan)", n)
	}
}

// TestApplyAfterCommitBlockedThenResumed: the data topic's policy is changed between COMMITTED
// and the deletion. apply stops before DeleteRecords, says the boundary is committed and how to
// resume; once the policy is fixed, the same apply finishes.
func TestApplyAfterCommitBlockedThenResumed(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 1, 100, opGoodDataConfigs())
	plan, path := opTestPlan(t, t.TempDir(), "chk-1", topic, id, events.Offsets{0: 70})
	if code, _, stderr := e.run(t, "apply", "--no-wait", path); code != exitOK {
		t.Fatalf("apply --no-wait: exit %d\n%s", code, stderr)
	}
	e.setTopicConfig(t, topic, "cleanup.policy", "compact")
	code, stdout, stderr := e.run(t, "apply", path)
	opWantFailure(t, code, stderr, exitError,
		"[resume] plan "+plan.PlanID+" is COMMITTED: resuming",
		`cleanup.policy is "compact"`,
		"Hint: the boundary is committed and recovery enforces it",
		"run kcleanup apply "+path+" again")
	if stdout != "" || strings.Contains(stderr, "[delete-records]") {
		t.Errorf("blocked apply went on:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	if got := e.logStarts(t, topic); got[0] != 0 {
		t.Errorf("log start moved to %d while the policy forbade it", got[0])
	}
	e.setTopicConfig(t, topic, "cleanup.policy", "compact,delete")
	if code, _, stderr := e.run(t, "apply", path); code != exitOK {
		t.Fatalf("apply after the fix: exit %d\n%s", code, stderr)
	}
	if got := e.logStarts(t, topic); got[0] != 70 {
		t.Errorf("log start %d, want 70", got[0])
	}
}
