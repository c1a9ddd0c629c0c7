package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
)

// TestApplyAndSubmitRecordTheReason (issue 35 item 7): submit --reason puts the operator's
// reason in the PLANNED, apply --reason in the COMMITTED (schema version 5), with the process's
// host/pid as actor; a plan applied without --reason is written as schema 1 and history says
// "(no reason given)". history (text and JSON) and status (text and JSON) show who and why.
// Before this change apply and submit had no --reason (unknown flag, exit 2).
func TestApplyAndSubmitRecordTheReason(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 2, 200, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	dir := t.TempDir()
	first, firstPath := opTestPlan(t, dir, "chk-1", topic, id, events.Offsets{0: 50, 1: 40})
	second, secondPath := opTestPlan(t, dir, "chk-2", topic, id, events.Offsets{0: 100, 1: 80})
	const proposed, because = "proposed for Tuesday's window (OPS-1)", "reclaim disk before the quarter close (OPS-1)"

	if code, _, stderr := e.run(t, "submit", firstPath, "--reason", proposed); code != exitOK {
		t.Fatalf("submit --reason: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := e.run(t, "apply", firstPath, "--reason", because); code != exitOK {
		t.Fatalf("apply --reason: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := e.run(t, "apply", secondPath); code != exitOK {
		t.Fatalf("apply without --reason: exit %d\n%s", code, stderr)
	}

	// What is on the log, read raw.
	recs, _ := e.controlRecords(t, control)
	want := map[string]string{
		events.Key(first.PlanID, events.Planned):    proposed,
		events.Key(first.PlanID, events.Committed):  because,
		events.Key(second.PlanID, events.Planned):   "",
		events.Key(second.PlanID, events.Committed): "",
	}
	for _, r := range recs {
		env, err := events.Decode([]byte(r.Key), r.Value)
		if err != nil {
			t.Fatalf("record %d (%s) does not decode: %v", r.Offset, r.Key, err)
		}
		w, ok := want[r.Key]
		if !ok {
			continue
		}
		delete(want, r.Key)
		version := events.SchemaVersion
		if w != "" {
			version = events.ReasonSchemaVersion
		}
		if env.Reason != w || env.SchemaVersion != version || !strings.Contains(env.Actor, "/") {
			t.Errorf("%s: reason %q, schema %d, actor %q; want reason %q, schema %d, a host/pid actor", r.Key, env.Reason, env.SchemaVersion, env.Actor, w, version)
		}
	}
	if len(want) != 0 {
		t.Errorf("records missing from the control topic: %v", want)
	}

	code, stdout, stderr := e.run(t, "history", "--topic", topic)
	if code != exitOK {
		t.Fatalf("history: exit %d\n%s", code, stderr)
	}
	for _, s := range []string{"why: " + proposed, "why: " + because, "why: " + report.NoReason} {
		if !strings.Contains(stdout, s) {
			t.Errorf("history lacks %q:\n%s", s, stdout)
		}
	}
	code, stdout, stderr = e.run(t, "-o", "json", "history", "--topic", topic)
	var doc historyDoc
	if err := json.Unmarshal([]byte(stdout), &doc); code != exitOK || err != nil {
		t.Fatalf("history -o json: exit %d, %v\n%s%s", code, err, stdout, stderr)
	}
	got := map[string]string{}
	for _, v := range doc.Verdicts {
		got[v.Key] = v.OperatorReason
	}
	if got[events.Key(first.PlanID, events.Planned)] != proposed || got[events.Key(first.PlanID, events.Committed)] != because ||
		got[events.Key(second.PlanID, events.Committed)] != "" {
		t.Errorf("history -o json operatorReason by key: %v", got)
	}

	code, stdout, stderr = e.run(t, "status", "--topic", topic)
	if code != exitOK || !strings.Contains(stdout, ": "+because) || !strings.Contains(stdout, ": "+report.NoReason) {
		t.Errorf("status does not say who committed each plan and why: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, op := range e.status(t, control).Operations {
		reason, by := op.Why()
		if op.PlanID == first.PlanID && (reason != because || !strings.Contains(by, "/")) || op.PlanID == second.PlanID && reason != "" {
			t.Errorf("status: plan %s: why %q by %q", op.PlanID, reason, by)
		}
	}
}

// TestReasonRefusals: a blank, over-long or multi-line --reason is a usage error (exit 2) that
// says what to do, before anything is written.
func TestReasonRefusals(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 1, 100, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	_, path := opTestPlan(t, t.TempDir(), "chk-1", topic, id, events.Offsets{0: 10})
	before := e.snapshot(t, topic, control)
	for _, c := range []struct{ reason, want string }{
		{"  ", "--reason is given but blank"}, // every flag's rule (globals)
		{strings.Repeat("x", events.MaxReasonBytes+1), "--reason is 1025 bytes: at most 1024 are recorded"},
		{"line one\nline two", "--reason contains a control character"},
	} {
		for _, cmd := range []string{"apply", "submit"} {
			code, _, stderr := e.run(t, cmd, path, "--reason", c.reason)
			if code != exitUsage || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "Hint: ") {
				t.Errorf("%s --reason %.20q: exit %d, want %d and %q with a hint:\n%s", cmd, c.reason, code, exitUsage, c.want, stderr)
			}
		}
	}
	e.assertUnchanged(t, topic, control, before)
}
