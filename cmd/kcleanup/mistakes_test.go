package main

// Operator mistakes at the edges, where the operator's input is resolved (issue 20): a topic
// that is not a control topic named as one, a typo'd topic name. Each test fails on the
// behaviour before the fix: the topic read as an empty control topic ("Boundary: none
// committed"), a hint to create the typo.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/topicconfig"
	"github.com/kcleanup/kcleanup/worker"
)

// TestATopicNotShapedLikeAControlTopicIsNeverReadAsOne: a data topic (3 partitions,
// compact,delete) or a compacted one-partition topic of someone else's records, named as the
// control topic, is refused by every command that would read it, naming what it is and, when a
// control topic's binding names it, that control topic; never "Boundary: none committed".
func TestATopicNotShapedLikeAControlTopicIsNeverReadAsOne(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 3, 20, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	dir := t.TempDir()
	_, planFile := opTestPlan(t, dir, "chk-1", topic, id, events.Offsets{0: 5, 1: 5, 2: 5})
	if code, _, stderr := e.run(t, "submit", planFile); code != exitOK { // PLANNED binds control to topic
		t.Fatalf("submit: exit %d\n%s", code, stderr)
	}
	// Settings a control topic's, records someone else's.
	other := kafkatest.NewTopic(t, e.cl, "optest-notctl", 1, topicconfig.CreateSettings())
	t.Cleanup(func() { e.deleteTopic(t, other) })
	kafkatest.Produce(t, e.cl, other, 0, 5)

	for _, tc := range []struct {
		name  string
		args  []string
		stdio bool // doctor says it in a finding on stdout
		want  []string
	}{
		{"status", []string{"status", "--control-topic", topic}, false,
			[]string{topic + " has 3 partitions and cleanup.policy=compact,delete", "looks like a data topic", "its control topic is " + control}},
		{"status -o json", []string{"status", "-o", "json", "--control-topic", topic}, false, []string{"looks like a data topic"}},
		{"history", []string{"history", "--control-topic", topic}, false, []string{"looks like a data topic", "its control topic is " + control}},
		{"doctor", []string{"doctor", "--control-topic", topic}, true, []string{"looks like a data topic", "its control topic is " + control}},
		{"submit", []string{"submit", planFile, "--control-topic", other}, false, []string{other + " has 5 record(s), none in kcleanup's or Flink Agents' control format"}},
		{"adopt", []string{"adopt", "--from", topic}, false, []string{topic + " has 3 partitions", "looks like a data topic"}},
		{"mirror sync", []string{"mirror", "sync", "--control-topic", topic}, false, []string{"looks like a data topic"}},
		{"status of other records", []string{"status", "--control-topic", other}, false,
			[]string{other + " has 5 record(s), none in kcleanup's or Flink Agents' control format", "looks like a data topic"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := e.run(t, tc.args...)
			if code != exitError {
				t.Errorf("exit %d, want %d", code, exitError)
			}
			out := stderr
			if tc.stdio {
				out = stdout
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("want %q", w)
				}
			}
			if strings.Contains(stdout, "Boundary: none committed") || !strings.Contains(stderr, "Hint: ") {
				t.Errorf("read as a control topic, or no hint")
			}
			if t.Failed() {
				t.Logf("kcleanup %s\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), stdout, stderr)
			}
		})
	}
	if recs, _ := e.controlRecords(t, other); len(recs) != 5 {
		t.Errorf("%s holds %d records after the commands, want its 5: a refused command writes nothing", other, len(recs))
	}
}

// TestATypoedTopicGetsTheNearestNamesNeverAdviceToCreateIt: status, history, init and doctor given a
// topic that does not exist say "no topic X", the existing names nearest to it and how to list
// them; none advises creating the misspelt name (issue 20, row "typo'd name").
func TestATypoedTopicGetsTheNearestNamesNeverAdviceToCreateIt(t *testing.T) {
	e := opTestEnv(t)
	topic, _ := e.dataTopic(t, 1, 1, opGoodDataConfigs())
	if code, _, stderr := e.run(t, "init", "--topic", topic); code != exitOK {
		t.Fatalf("init: exit %d\n%s", code, stderr)
	}
	typo := topic[:len(topic)-1] + "x" // one letter off
	if strings.HasSuffix(topic, "x") {
		typo = topic[:len(topic)-1] + "y"
	}
	for _, tc := range []struct {
		args   []string
		stdout bool // init says it in a finding
		want   []string
	}{
		{[]string{"status", "--topic", typo}, false, []string{"no topic " + typo, "did you mean " + topic, "kafka-topics --bootstrap-server"}},
		{[]string{"history", "--topic", typo}, false, []string{"no topic " + typo, "did you mean " + topic}},
		{[]string{"status", "--control-topic", typo + ".kcleanup"}, false, []string{"no control topic " + typo + ".kcleanup", "did you mean " + protocol.ControlTopicFor(topic)}},
		{[]string{"init", "--topic", typo}, true, []string{"no topic " + typo, "did you mean " + topic, "kafka-topics --bootstrap-server"}},
		{[]string{"doctor", "--topic", typo}, true, []string{"BLOCK  data topic " + typo + ": no topic " + typo, "did you mean " + topic}},
	} {
		code, stdout, stderr := e.run(t, tc.args...)
		out := stderr
		if tc.stdout {
			out = stdout
		}
		bad := code != exitError
		for _, w := range tc.want {
			bad = bad || !strings.Contains(out, w)
		}
		if strings.Contains(stdout+stderr, "--control-topic "+typo) || strings.Contains(stdout+stderr, "--topic "+typo) {
			bad = true // advice to create (or init) the typo
		}
		if bad {
			t.Errorf("kcleanup %s: exit %d, want %d and %q, never advice naming the typo\nstdout:\n%s\nstderr:\n%s",
				strings.Join(tc.args, " "), code, exitError, tc.want, stdout, stderr)
		}
	}
	if _, exists := e.controlRecords(t, protocol.ControlTopicFor(typo)); exists {
		t.Errorf("a control topic for the typo was created")
	}
}

// TestAPreviewRefusedAsAWholeShowsNoPartitionOK: apply commits all of a plan's partitions or
// none, so while it refuses the plan (partition 0 above the high watermark) the APPLY column
// of partition 1 shows that refusal, not "ok", and its NEW LOG START deletes nothing (issue 20,
// row "preview of a plan apply refuses as a whole").
func TestAPreviewRefusedAsAWholeShowsNoPartitionOK(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 2, 20, opGoodDataConfigs())
	dir := t.TempDir()
	markers := opTestMarkers(t, dir, "m.json", events.Marker{Topic: topic, TopicID: id, Offsets: events.Offsets{0: 500, 1: 10}})
	code, stdout, stderr := e.run(t, "plan", "--markers", markers, "--recovery-point", "chk-1", "--out", dir+"/p.json")
	wantExit(t, code, exitError, stdout, stderr)
	var row1 string
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "1" {
			row1 = l
		}
	}
	if !strings.Contains(row1, "refused: plan refused as a whole: ") || !strings.Contains(row1, "partition 0: plan offset 500 is outside the available range") ||
		strings.HasSuffix(strings.TrimSpace(row1), " ok") || !strings.HasPrefix(strings.Join(strings.Fields(row1), " "), "1 10 0 - -") {
		t.Errorf("partition 1's row: %q\nstdout:\n%s", row1, stdout)
	}
}

// TestApplyOfAnAppliedPlanAfterTheTopicWasRecreated: a plan APPLIED to one incarnation of a
// topic, applied again after the topic was deleted and recreated, exits 1 saying so with both
// topic IDs; never "APPLIED (already)" next to the new topic's log starts (issue 20, row
// "apply of an already-APPLIED plan after the topic was recreated").
func TestApplyOfAnAppliedPlanAfterTheTopicWasRecreated(t *testing.T) {
	e := opTestEnv(t)
	topic, oldID := e.governedTopic(t, 1, 20, opGoodDataConfigs())
	_, path := opTestPlan(t, t.TempDir(), "chk-1", topic, oldID, events.Offsets{0: 10})
	code, stdout, stderr := e.run(t, "apply", path)
	wantExit(t, code, exitOK, stdout, stderr)
	e.recreate(t, topic, 1, opGoodDataConfigs())
	newID := e.topicID(t, topic)
	if newID == oldID {
		t.Fatalf("recreated topic kept its ID %s", oldID)
	}
	control := protocol.ControlTopicFor(topic)
	before := e.snapshot(t, topic, control)
	code, stdout, stderr = e.run(t, "apply", path)
	opWantFailure(t, code, stderr, exitError, "was APPLIED to topic ID "+oldID, "now has ID "+newID, "it was recreated", "Hint: control topic "+control+" governs the old incarnation")
	if strings.Contains(stdout, "already") {
		t.Errorf("stdout says the plan holds:\n%s", stdout)
	}
	e.assertUnchanged(t, topic, control, before)
}

// TestStatusOfTheMirrorSaysWhoseMirrorItIs: status named the Flink Agents mirror kcleanup keeps
// says so and names the control topic whose MIRROR_ATTACHED names it, empty or seeded; never
// "kcleanup never writes here", never "every recovery point is allowed" (issue 20, row
// "status --control-topic <the mirror>").
func TestStatusOfTheMirrorSaysWhoseMirrorItIs(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.dataTopic(t, 1, 20, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	mirror := e.mirrorTopicName(t, topic)
	// No restore grace: the apply below deletes at once (the default would wait 15m).
	if code, stdout, stderr := e.run(t, "init", "--topic", topic, "--mirror-topic", mirror, "--restore-grace", "0"); code != exitOK {
		t.Fatalf("init: exit %d\n%s\n%s", code, stdout, stderr)
	}
	check := func(when string) {
		t.Helper()
		code, stdout, stderr := e.run(t, "status", "--control-topic", mirror)
		wantExit(t, code, exitOK, stdout, stderr)
		if !strings.Contains(stdout, "Mirror of:") || !strings.Contains(stdout, control+": the Flink Agents mirror kcleanup keeps") ||
			strings.Contains(stdout, "kcleanup never writes here") || strings.Contains(stdout, "every recovery point is allowed") {
			t.Errorf("%s:\n%s", when, stdout)
		}
		code, stdout, stderr = e.run(t, "status", "-o", "json", "--control-topic", mirror)
		wantExit(t, code, exitOK, stdout, stderr)
		if !strings.Contains(stdout, `"mirrorOf": [`) || !strings.Contains(stdout, `"`+control+`"`) {
			t.Errorf("%s, json:\n%s", when, stdout)
		}
		validateStatusSchema(t, []byte(stdout))
	}
	check("empty mirror")
	_, path := opTestPlan(t, t.TempDir(), "chk-1", topic, id, events.Offsets{0: 10})
	if code, stdout, stderr := e.run(t, "apply", path); code != exitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	check("mirror with a plan")
}

// TestTwoControlTopicsOfOneTopicBlockEachOther: a second control topic bound to the same topic
// incarnation would be blind to the first's boundary (and the first to its). submit refuses to
// bind one while another is bound; once both are (an older kcleanup bound the second), apply
// refuses to commit on either and doctor reports it as a BLOCK finding with the fix (issue 20
// item 4).
func TestTwoControlTopicsOfOneTopicBlockEachOther(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 1, 30, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	second := topic + "-ops" + worker.ControlTopicSuffix
	t.Cleanup(func() { e.deleteTopic(t, second) })
	dir := t.TempDir()
	_, p1 := opTestPlan(t, dir, "chk-1", topic, id, events.Offsets{0: 5})
	if code, stdout, stderr := e.run(t, "apply", p1); code != exitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// init refuses to make the second one (it would be empty: "no boundary" to every gate reading it) ...
	if code, stdout, stderr := e.run(t, "init", "--topic", topic, "--control-topic", second); code != exitError ||
		!strings.Contains(stdout, "but "+control+" governs topic "+topic) {
		t.Fatalf("init: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// ... so it is made by hand.
	kafkatest.CreateTopic(t, e.cl, second, 1, topicconfig.CreateSettings())
	both := "control topics " + second + " and " + control + " both govern topic " + topic + " (topic ID " + id + ")"
	p2, p2file := opTestPlan(t, dir, "chk-2", topic, id, events.Offsets{0: 8})
	code, _, stderr := e.run(t, "submit", p2file, "--control-topic", second)
	opWantFailure(t, code, stderr, exitError, "control topic "+second+" governs no topic yet, but "+control+" governs topic "+topic,
		"Hint: name the control topic that governs "+topic+" in every command, worker and pipeline: --control-topic "+control, "nothing was committed or deleted")
	if recs, _ := e.controlRecords(t, second); len(recs) != 0 {
		t.Fatalf("the refused submit wrote %d record(s) to %s", len(recs), second)
	}

	// An older kcleanup bound the second one all the same.
	planned := events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Planned, PlanID: p2.PlanID, Plan: p2, At: time.Now(), Actor: "old-kcleanup"}
	k, v := planned.Encode()
	if err := e.cl.ProduceSync(context.Background(), &kgo.Record{Topic: second, Partition: 0, Key: k, Value: v}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	before := e.snapshot(t, topic, control)
	_, p3 := opTestPlan(t, dir, "chk-3", topic, id, events.Offsets{0: 10})
	code, _, stderr = e.run(t, "apply", p3)
	opWantFailure(t, code, stderr, exitError, "control topics "+control+" and "+second+" both govern topic "+topic)
	e.assertUnchanged(t, topic, control, before)
	code, _, stderr = e.run(t, "apply", p2file, "--control-topic", second)
	opWantFailure(t, code, stderr, exitError, both)

	code, stdout, _ := e.run(t, "doctor", "--topic", topic)
	if code != exitError || !strings.Contains(stdout, "BLOCK  control topic "+control+": control topics "+control+" and "+second+" both govern topic "+topic) ||
		!strings.Contains(stdout, "hint: keep one control topic per data topic") {
		t.Errorf("doctor: exit %d\n%s", code, stdout)
	}
}

// TestAControlTopicGivenAsTheDataTopicIsNamedSo: `status --topic T.kcleanup` (the control topic
// where the data topic belongs) says T.kcleanup is a control topic and suggests
// `status --control-topic T.kcleanup`, never `init --topic T.kcleanup`, which would make a
// control topic for a control topic (issue 35 item 5). Real broker: the shape is read from it.
func TestAControlTopicGivenAsTheDataTopicIsNamedSo(t *testing.T) {
	e := opTestEnv(t)
	topic, _ := e.governedTopic(t, 1, 5, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	for _, args := range [][]string{{"status", "--topic", control}, {"history", "--topic", control}} {
		t.Run(args[0], func(t *testing.T) {
			code, stdout, stderr := e.run(t, args...)
			if code != exitError {
				t.Errorf("exit %d, want %d", code, exitError)
			}
			for _, w := range []string{control + " is a control topic, not a data topic", "Hint: name it as the control topic: kcleanup status --control-topic " + control} {
				if !strings.Contains(stderr, w) {
					t.Errorf("want %q", w)
				}
			}
			if strings.Contains(stderr, "init --topic "+control) {
				t.Errorf("suggests init --topic %s", control)
			}
			if t.Failed() {
				t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
			}
		})
	}
}
