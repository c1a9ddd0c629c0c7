package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
)

type historyJSON struct {
	SchemaVersion int    `json:"schemaVersion"`
	ControlTopic  string `json:"controlTopic"`
	ReadTo        int64  `json:"readTo"`
	PlanID        string `json:"planId"`
	Verdicts      []struct {
		Offset  int64      `json:"offset"`
		Key     string     `json:"key"`
		Event   string     `json:"event"`
		PlanID  string     `json:"planId"`
		Verdict string     `json:"verdict"`
		Reason  string     `json:"reason"`
		Detail  string     `json:"detail"`
		At      *time.Time `json:"at"`
		Actor   string     `json:"actor"`
	} `json:"verdicts"`
}

func decodeHistory(t *testing.T, stdout string) historyJSON {
	t.Helper()
	var doc historyJSON
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("history JSON: %v\n%s", err, stdout)
	}
	return doc
}

func TestHistoryListsEveryRecordWithItsVerdict(t *testing.T) {
	e := newReadEnv(t, true)
	// A second plan, PLANNED, then a COMMITTED written by hand that would raise partition 1
	// while its plan is below the boundary on partition 0 (a conflicting plan): the log
	// rejects it, and history says why. (A plan entirely below the boundary would be accepted
	// as covered: it raises nothing.)
	c0, err := events.BuildPlan("C0", []events.Marker{{Topic: e.topic, TopicID: e.topicID, Offsets: events.Offsets{0: 100, 1: 200}}})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	planned := events.Envelope{SchemaVersion: 1, Event: events.Planned, PlanID: c0.PlanID, Plan: c0, At: at, Actor: "script/1"}
	committed := planned
	committed.Event, committed.Boundary = events.Committed, events.Offsets{0: 150, 1: 200}
	for _, env := range []events.Envelope{planned, committed} {
		key, value := env.Encode()
		e.produceControl(t, key, value)
	}

	code, stdout, stderr := e.run(t, "history", "--topic", e.topic, "-o", "json")
	wantExit(t, code, exitOK, stdout, stderr)
	if _, ok := jsonKeys(t, stdout)["verdicts"]; !ok {
		t.Fatalf("no verdicts field:\n%s", stdout)
	}
	doc := decodeHistory(t, stdout)
	if doc.SchemaVersion != historySchemaVersion || doc.ControlTopic != e.control || doc.ReadTo != 6 {
		t.Errorf("schemaVersion %d, controlTopic %q, readTo %d", doc.SchemaVersion, doc.ControlTopic, doc.ReadTo)
	}
	type row struct{ event, plan, verdict, reason, actor string }
	want := []row{
		{"PLANNED", e.plan.PlanID, "accepted", "", "test/apply"},
		{"COMMITTED", e.plan.PlanID, "accepted", "", "test/apply"},
		{"DELETING", e.plan.PlanID, "accepted", "", "test/apply"},
		{"APPLIED", e.plan.PlanID, "accepted", "", "test/apply"},
		{"PLANNED", c0.PlanID, "accepted", "", "script/1"},
		{"COMMITTED", c0.PlanID, "rejected", string(projector.ReasonBoundaryRegression), "script/1"},
	}
	if len(doc.Verdicts) != len(want) {
		t.Fatalf("%d verdicts, want %d:\n%s", len(doc.Verdicts), len(want), stdout)
	}
	for i, v := range doc.Verdicts {
		got := row{v.Event, v.PlanID, v.Verdict, v.Reason, v.Actor}
		if got != want[i] || v.Offset != int64(i) || v.At == nil || v.Detail == "" || v.Key != v.PlanID+"/"+v.Event {
			t.Errorf("verdict %d: %+v, want %+v at offset %d with a time, key and detail", i, v, want[i], i)
		}
	}
	if d := doc.Verdicts[5].Detail; !strings.Contains(d, "partition 0: plan offset 100 is below the committed boundary 150") {
		t.Errorf("the rejection does not say why: %q", d)
	}
	if got := doc.Verdicts[5].At; got == nil || !got.Equal(at) {
		t.Errorf("at %v, want the record's %v", got, at)
	}

	t.Run("table", func(t *testing.T) {
		code, stdout, stderr := e.run(t, "history", "--topic", e.topic)
		wantExit(t, code, exitOK, stdout, stderr)
		for _, re := range []string{
			`(?m)^\s+0\s+\S+\s+PLANNED\s+` + e.plan.PlanID[:shortPlanID] + `\s+accepted\s+test/apply\s+\S`,
			`(?m)^\s+5\s+2025-03-04T05:06:07Z\s+COMMITTED\s+` + c0.PlanID[:shortPlanID] + `\s+rejected \(boundary-regression\)\s+script/1\s+partition 0: plan offset 100`,
		} {
			if !regexp.MustCompile(re).MatchString(stdout) {
				t.Errorf("history table does not match %s:\n%s", re, stdout)
			}
		}
	})

	t.Run("one plan by prefix", func(t *testing.T) {
		code, stdout, stderr := e.run(t, "history", "--topic", e.topic, "--plan", c0.PlanID[:8], "-o", "json")
		wantExit(t, code, exitOK, stdout, stderr)
		doc := decodeHistory(t, stdout)
		if doc.PlanID != c0.PlanID || len(doc.Verdicts) != 2 || doc.Verdicts[0].Offset != 4 || doc.Verdicts[1].Offset != 5 {
			t.Errorf("--plan %s: planId %s, verdicts %+v; want C0's two records at offsets 4 and 5", c0.PlanID[:8], doc.PlanID, doc.Verdicts)
		}
	})

	t.Run("unknown plan", func(t *testing.T) {
		unknown := strings.Repeat("0", 64)
		if strings.HasPrefix(e.plan.PlanID, "0") || strings.HasPrefix(c0.PlanID, "0") {
			unknown = strings.Repeat("f", 64)
		}
		code, stdout, stderr := e.run(t, "history", "--topic", e.topic, "--plan", unknown[:10])
		wantExit(t, code, exitError, stdout, stderr)
		if !strings.Contains(stderr, "names a plan "+unknown[:10]) || !strings.Contains(stderr, "Hint: `kcleanup status") {
			t.Errorf("stderr: %s", stderr)
		}
	})
}

func TestHistoryOfAnEmptyControlTopic(t *testing.T) {
	e := newReadEnv(t, false)
	e.createControlTopic(t)
	code, stdout, stderr := e.run(t, "history", "--topic", e.topic)
	wantExit(t, code, exitOK, stdout, stderr)
	if !strings.Contains(stdout, "none: the control topic is empty") {
		t.Errorf("stdout: %s", stdout)
	}
	code, stdout, stderr = e.run(t, "history", "--topic", e.topic, "-o", "json")
	wantExit(t, code, exitOK, stdout, stderr)
	if got := string(jsonKeys(t, stdout)["verdicts"]); got != "[]" {
		t.Errorf("verdicts %s, want []", got)
	}
}

func TestHistoryPlanFlagIsAHexPrefix(t *testing.T) {
	clearEnv(t)
	for _, bad := range []string{"XYZ", "3F2A", "plan-1", strings.Repeat("a", 65)} {
		code, stdout, stderr := runCLI(t, "-b", "127.0.0.1:1", "history", "--topic", "t", "--plan", bad)
		wantExit(t, code, exitUsage, stdout, stderr)
		if !strings.Contains(stderr, "is not a plan ID") {
			t.Errorf("--plan %s: %s", bad, stderr)
		}
	}
}

func TestResolvePlanID(t *testing.T) {
	a, b := "abc1"+strings.Repeat("0", 60), "abc2"+strings.Repeat("0", 60)
	audit := []projector.Verdict{{PlanID: a}, {PlanID: b}, {PlanID: a}, {}}
	for _, tc := range []struct {
		prefix, want string
		code         int
	}{
		{"abc1", a, exitOK},
		{a, a, exitOK},
		{"abc2", b, exitOK},
		{"abc", "", exitUsage}, // two plans: give more digits
		{"abd", "", exitError}, // none
	} {
		got, err := resolvePlanID(tc.prefix, audit, "ctl")
		if got != tc.want || exitCode(err) != tc.code {
			t.Errorf("resolvePlanID(%s) = %q, %v (exit %d); want %q, exit %d", tc.prefix, got, err, exitCode(err), tc.want, tc.code)
		}
	}
}
