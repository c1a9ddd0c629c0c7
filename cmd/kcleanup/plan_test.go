package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
)

const opTestID = "oBnTyPS2TqmC9ctLrPFH6w" // a valid topic ID for plans that need no broker

// opRunWithStdin runs the real command line with stdin; nothing contacts a cluster unless the
// arguments ask for a preview.
func opRunWithStdin(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	if err := root.ExecuteContext(context.Background()); err != nil {
		printError(&errOut, err)
		return exitCode(err), out.String(), errOut.String()
	}
	return exitOK, out.String(), errOut.String()
}

func opParsePlan(t *testing.T, text string) events.Plan {
	t.Helper()
	p, err := events.ParsePlan([]byte(text))
	if err != nil {
		t.Fatalf("output is not a valid plan: %v\n%s", err, text)
	}
	return p
}

func opMarker(offsets events.Offsets) events.Marker {
	return events.Marker{Topic: "action-state", TopicID: opTestID, Offsets: offsets}
}

func TestPlanFromFiles(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	a := opTestMarkers(t, dir, "a.json", opMarker(events.Offsets{0: 100, 1: 230}))
	b := opTestMarkers(t, dir, "b.json", opMarker(events.Offsets{0: 150, 1: 200}), opMarker(events.Offsets{0: 120, 1: 260}))
	want := events.Offsets{0: 100, 1: 200}

	t.Run("stdout", func(t *testing.T) {
		code, stdout, stderr := opRunWithStdin(t, "", "plan", "--no-preview", "--markers", a, "--markers", b, "--recovery-point", "chk-42")
		if code != exitOK || stderr != unsourcedMarkersWarning {
			t.Fatalf("exit %d; want 0 and only the warning that completeness cannot be checked:\n%s", code, stderr)
		}
		p := opParsePlan(t, stdout)
		if !p.Offsets.Equal(want) || p.SourceRecoveryPoint != "chk-42" || p.Topic != "action-state" || p.TopicID != opTestID ||
			p.PlanID != events.ComputePlanID("chk-42", "action-state", opTestID, want) {
			t.Errorf("plan %+v", p)
		}
	})

	t.Run("json without --out is the plan", func(t *testing.T) {
		code, stdout, _ := opRunWithStdin(t, "", "-o", "json", "plan", "--no-preview", "--markers", a, "--markers", b, "--recovery-point", "chk-42")
		if code != exitOK {
			t.Fatalf("exit %d", code)
		}
		opParsePlan(t, stdout)
	})

	t.Run("standard input", func(t *testing.T) {
		data, _ := os.ReadFile(b)
		code, stdout, stderr := opRunWithStdin(t, string(data), "plan", "--no-preview", "--markers", "-", "--recovery-point", "sp-1")
		if code != exitOK {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		if p := opParsePlan(t, stdout); !p.Offsets.Equal(events.Offsets{0: 120, 1: 200}) {
			t.Errorf("offsets %v", p.Offsets)
		}
	})

	t.Run("--out writes a new file", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "chk-42.plan.json")
		code, stdout, stderr := opRunWithStdin(t, "", "-o", "json", "plan", "--no-preview", "--markers", a, "--markers", b,
			"--recovery-point", "chk-42", "--out", out)
		if code != exitOK {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		p := opParsePlan(t, string(data))
		var doc struct {
			SchemaVersion int             `json:"schemaVersion"`
			PlanID        string          `json:"planId"`
			Out           string          `json:"out"`
			Plan          json.RawMessage `json:"plan"`
			Preview       json.RawMessage `json:"preview"`
			PreviewError  string          `json:"previewError"`
		}
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		if doc.SchemaVersion != 1 || doc.PlanID != p.PlanID || doc.Out != out || string(doc.Preview) != "null" ||
			!strings.Contains(doc.PreviewError, "--no-preview") {
			t.Errorf("document %+v", doc)
		}
		if embedded := opParsePlan(t, string(doc.Plan)); embedded.PlanID != p.PlanID {
			t.Errorf("embedded plan %s, file %s", embedded.PlanID, p.PlanID)
		}
		if !strings.Contains(stderr, "wrote plan "+p.PlanID+" to "+out) {
			t.Errorf("stderr:\n%s", stderr)
		}
	})

	t.Run("--out never overwrites", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "existing.json")
		if err := os.WriteFile(out, []byte("keep me"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := opRunWithStdin(t, "", "plan", "--no-preview", "--markers", a, "--recovery-point", "chk-42", "--out", out)
		opWantFailure(t, code, stderr, exitError, "--out "+out+" already exists; kcleanup never overwrites a plan file",
			"Hint: choose another file name")
		if data, _ := os.ReadFile(out); string(data) != "keep me" || stdout != "" {
			t.Errorf("file now %q, stdout %q", data, stdout)
		}
	})
}

// opSourced is opMarker as kcleanup markers writes it: from checkpoint ckpt, subtask st of
// parallelism p.
func opSourced(offsets events.Offsets, ckpt int64, st, p int32) events.Marker {
	m := opMarker(offsets)
	m.Source = &events.MarkerSource{CheckpointID: ckpt, OperatorUID: "action-state-op", Parallelism: p, Subtask: st}
	return m
}

// TestMarkersCompleteness: plan, pin and validate --markers take markers that say where they
// were read only when they are every subtask's of one checkpoint (refused before any cluster
// is asked), and warn about markers that do not say.
func TestMarkersCompleteness(t *testing.T) {
	clearEnv(t)
	t.Setenv("KCLEANUP_BOOTSTRAP_SERVER", opSilentListener(t)) // a cluster would hang: none must be asked
	dir := t.TempDir()
	o0, o1 := events.Offsets{0: 100, 1: 230}, events.Offsets{0: 150, 1: 200}
	whole := opTestMarkers(t, dir, "whole.json", opSourced(o0, 42, 0, 2), opSourced(o1, 42, 1, 2))
	sub0 := opTestMarkers(t, dir, "sub0.json", opSourced(o0, 42, 0, 2))
	sub1 := opTestMarkers(t, dir, "sub1.json", opSourced(o1, 42, 1, 2))
	other := opTestMarkers(t, dir, "other.json", opSourced(o1, 43, 1, 2))
	bare := opTestMarkers(t, dir, "bare.json", opMarker(o0), opMarker(o1))

	code, stdout, stderr := opRunWithStdin(t, "", "plan", "--no-preview", "--markers", whole, "--recovery-point", "s3://b/savepoint-1")
	if code != exitOK || stderr != "" {
		t.Fatalf("every subtask's markers: exit %d, stderr %q; want a plan and no warning", code, stderr)
	}
	p := opParsePlan(t, stdout)
	_, bareOut, _ := opRunWithStdin(t, "", "plan", "--no-preview", "--markers", bare, "--recovery-point", "s3://b/savepoint-1")
	if q := opParsePlan(t, bareOut); q.PlanID != p.PlanID {
		t.Errorf("plan ID %s with sources, %s without: the sources must not enter the plan", p.PlanID, q.PlanID)
	}
	code, _, stderr = opRunWithStdin(t, "", "plan", "--no-preview", "--markers", sub1, "--markers", sub0, "--recovery-point", "s3://b/savepoint-1")
	if code != exitOK || stderr != "" {
		t.Errorf("the two subtasks in two files: exit %d\n%s", code, stderr)
	}

	for _, cmd := range [][]string{
		{"plan", "--no-preview", "--recovery-point", "s3://b/savepoint-1"},
		{"pin", "--recovery-point", "s3://b/savepoint-1", "--for", "1h", "--reason", "restore"},
		{"validate"},
	} {
		t.Run(cmd[0], func(t *testing.T) {
			run := func(files ...string) (int, string) {
				args := append([]string{}, cmd...)
				for _, f := range files {
					args = append(args, "--markers", f)
				}
				code, _, stderr := opRunWithStdin(t, "", args...)
				return code, stderr
			}
			code, stderr := run(sub0)
			opWantFailure(t, code, stderr, exitError, "the markers of checkpoint 42, operator uid \"action-state-op\", lack subtask 1 of its 2",
				"kcleanup markers --checkpoint")
			code, stderr = run(sub0, other)
			opWantFailure(t, code, stderr, exitError, "marker 1 is from checkpoint 43 but marker 0 from checkpoint 42: expected the markers of one checkpoint",
				"0 from "+sub0+", 1 from "+other)
			code, stderr = run(sub0, sub0)
			opWantFailure(t, code, stderr, exitError, "marker 1 is subtask 0, as marker 0 is")
			code, stderr = run(sub0, bare)
			opWantFailure(t, code, stderr, exitError, "marker 1 does not say which checkpoint and subtask it is from, but marker 0 does")
			if cmd[0] != "plan" {
				// Old-style markers pass the check with the warning, then ask the cluster
				// (a silent one here: the command fails later, warned first).
				ctx := []string{"--timeout", "1s"}
				args := append(append([]string{}, ctx...), cmd...)
				args = append(args, "--markers", bare)
				_, _, stderr := opRunWithStdin(t, "", args...)
				if !strings.HasPrefix(stderr, unsourcedMarkersWarning) {
					t.Errorf("old-style markers: stderr does not start with the warning:\n%s", stderr)
				}
			}
		})
	}
}

func TestPlanErrorsNameTheFile(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	good := opTestMarkers(t, dir, "good.json", opMarker(events.Offsets{0: 100}))
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	broken := write("broken.json", `{"schemaVersion":1,"topic":"action-state"`)
	negative := write("negative.json", `{"schemaVersion":1,"topic":"action-state","topicId":"`+opTestID+`","offsets":{"0":-1}}`)
	empty := write("empty.json", `[]`)
	other := opTestMarkers(t, dir, "other.json", opMarker(events.Offsets{0: 100}),
		events.Marker{Topic: "other-topic", TopicID: opTestID, Offsets: events.Offsets{0: 1}})
	missing := filepath.Join(dir, "missing.json")

	for _, tc := range []struct {
		name      string
		args      []string
		code      int
		fragments []string
	}{
		{"broken JSON", []string{"--markers", good, "--markers", broken}, exitError,
			[]string{"markers file " + broken + ": the file ends early (truncated?) at byte 41\n",
				"Hint: the file was cut short", "Hint: a markers file holds one marker object or a JSON array"}},
		{"negative offset", []string{"--markers", negative}, exitError, []string{"markers file " + negative, "offsets"}},
		{"empty array", []string{"--markers", empty}, exitError, []string{"markers file " + empty, "the array is empty"}},
		{"missing file", []string{"--markers", good, "--markers", missing}, exitError, []string{"read " + missing, "no such file"}},
		{"two topics in one file", []string{"--markers", other}, exitError,
			[]string{"markers file " + other + ": cannot build a plan: marker 1 names topic \"other-topic\""}},
		{"two topics across files", []string{"--markers", good, "--markers", other}, exitError,
			[]string{"marker 2 names topic \"other-topic\"", "Hint: markers are numbered from 0 across all files: 0 from " + good + ", 1-2 from " + other}},
		// A blank flag is a mistake in the command line (an unset shell variable, say): exit 2.
		{"blank recovery point", []string{"--markers", good, "--recovery-point", " "}, exitUsage,
			[]string{"Error: --recovery-point is given but blank", "Hint: --recovery-point NAME: name of the recovery point, e.g. the checkpoint ID (required with --markers; default with --checkpoint: PATH as given); give it a value or leave it out ("}},
		{"empty --recovery-point", []string{"--markers", good, "--recovery-point="}, exitUsage,
			[]string{"Error: --recovery-point is given but blank", "Hint:"}},
		{"blank --markers", []string{"--markers", ""}, exitUsage, []string{"Error: --markers is given but blank", "Hint:"}},
		{"blank --out", []string{"--markers", good, "--out", ""}, exitUsage, []string{"Error: --out is given but blank", "Hint:"}},
		{"stdin twice", []string{"--markers", "-", "--markers", "-"}, exitUsage,
			[]string{"Error: --markers - is given 2 times: standard input can be read only once", "Hint: give --markers - once"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"plan", "--no-preview"}, tc.args...)
			if !strings.Contains(strings.Join(tc.args, " "), "--recovery-point") {
				args = append(args, "--recovery-point", "chk-1")
			}
			code, stdout, stderr := opRunWithStdin(t, "", args...)
			opWantFailure(t, code, stderr, tc.code, tc.fragments...)
			if stdout != "" {
				t.Errorf("stdout not empty:\n%s", stdout)
			}
		})
	}

	for _, args := range [][]string{
		{"plan", "--markers", good},
		{"plan", "--recovery-point", "chk-1"},
		{"plan", "--markers", good, "--recovery-point", "chk-1", "extra"},
	} {
		code, _, stderr := opRunWithStdin(t, "", args...)
		opWantFailure(t, code, stderr, exitUsage, "Hint: run 'kcleanup plan --help' for usage")
	}
}

// TestPlanPreviewUnavailable: the plan needs no cluster. With nothing listening, the plan is
// still written and the preview says why it is missing.
func TestPlanPreviewUnavailable(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	m := opTestMarkers(t, dir, "m.json", opMarker(events.Offsets{0: 100}))
	out := filepath.Join(dir, "p.json")
	code, stdout, stderr := opRunWithStdin(t, "", "-b", "127.0.0.1:1", "--timeout", "2s", "plan", "--markers", m,
		"--recovery-point", "chk-1", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if _, err := os.ReadFile(out); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"preview unavailable:", "connection refused", "hint: could not connect to 127.0.0.1:1"} {
		if !strings.Contains(stdout, f) {
			t.Errorf("stdout lacks %q:\n%s", f, stdout)
		}
	}
}

// opPreviewDoc is the preview part of `plan --out -o json`.
type opPreviewDoc struct {
	Preview *struct {
		ControlTopic       string                    `json:"controlTopic"`
		ControlTopicExists bool                      `json:"controlTopicExists"`
		Partitions         []report.PartitionPreview `json:"partitions"`
		ApplyWouldRefuse   string                    `json:"applyWouldRefuse"`
		RefusalHints       []string                  `json:"refusalHints"`
	} `json:"preview"`
	PreviewError string `json:"previewError"`
}

// TestPlanPreviewOnTheRealBroker checks the preview's numbers against a topic whose log starts
// and boundary the test set, and that making a plan changes nothing on the cluster.
func TestPlanPreviewOnTheRealBroker(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 2, 100, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	dir := t.TempDir()
	m := func(name string, offs ...events.Offsets) string {
		var ms []events.Marker
		for _, o := range offs {
			ms = append(ms, events.Marker{Topic: topic, TopicID: id, Offsets: o})
		}
		return opTestMarkers(t, dir, name, ms...)
	}
	previewExit := func(t *testing.T, wantCode int, name string, markers ...string) opPreviewDoc {
		t.Helper()
		args := []string{"-o", "json", "plan", "--recovery-point", name, "--out", filepath.Join(dir, name+".json")}
		for _, f := range markers {
			args = append(args, "--markers", f)
		}
		code, stdout, stderr := e.run(t, args...)
		if code != wantCode {
			t.Fatalf("plan: exit %d, want %d\n%s", code, wantCode, stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, name+".json")); err != nil {
			t.Errorf("the plan was not written: %v", err)
		}
		var doc opPreviewDoc
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil || doc.Preview == nil {
			t.Fatalf("%v %s\n%s", err, doc.PreviewError, stdout)
		}
		return doc
	}
	preview := func(t *testing.T, name string, markers ...string) opPreviewDoc {
		t.Helper()
		return previewExit(t, exitOK, name, markers...)
	}

	// The empty control topic init made: no boundary, and plan writes nothing.
	before := e.snapshot(t, topic, control)
	doc := preview(t, "chk-0", m("m0.json", events.Offsets{0: 10, 1: 20}))
	e.assertUnchanged(t, topic, control, before)
	if !doc.Preview.ControlTopicExists || doc.Preview.ControlTopic != control || doc.Preview.ApplyWouldRefuse != "" ||
		len(doc.Preview.Partitions) != 2 || doc.Preview.Partitions[1].Boundary != nil || doc.Preview.Partitions[1].Deletable != 20 {
		t.Errorf("preview without a control topic: %+v", doc.Preview)
	}

	// Log start of partition 0 at 30 (moved by hand), boundary {0:30, 1:10} (applied).
	e.deleteRecordsTo(t, topic, events.Offsets{0: 30})
	_, applied := opTestPlan(t, dir, "chk-1", topic, id, events.Offsets{0: 30, 1: 10})
	if code, _, stderr := e.run(t, "apply", applied); code != exitOK {
		t.Fatalf("apply: exit %d\n%s", code, stderr)
	}
	before = e.snapshot(t, topic, control)
	doc = preview(t, "chk-2", m("m2.json", events.Offsets{0: 50, 1: 40}, events.Offsets{0: 60, 1: 35}))
	e.assertUnchanged(t, topic, control, before)
	b30, b10 := int64(30), int64(10)
	want := []report.PartitionPreview{
		{Partition: 0, PlanOffset: 50, LogStart: 30, HighWatermark: 100, NewLogStart: 50, Deletable: 20, Boundary: &b30},
		{Partition: 1, PlanOffset: 35, LogStart: 10, HighWatermark: 100, NewLogStart: 35, Deletable: 25, Boundary: &b10},
	}
	if !doc.Preview.ControlTopicExists || doc.Preview.ApplyWouldRefuse != "" || len(doc.Preview.Partitions) != 2 {
		t.Fatalf("preview: %+v", doc.Preview)
	}
	for i, got := range doc.Preview.Partitions {
		w := want[i]
		if got.Partition != w.Partition || got.PlanOffset != w.PlanOffset || got.LogStart != w.LogStart ||
			got.HighWatermark != w.HighWatermark || got.NewLogStart != w.NewLogStart || got.Deletable != w.Deletable ||
			got.Boundary == nil || *got.Boundary != *w.Boundary || got.BoundarySetBy == "" {
			t.Errorf("partition %d: %+v, want %+v", i, got, w)
		}
	}

	// Below the boundary: the plan is still written, the preview says apply would refuse it, and
	// plan exits 1 as apply would, so that a script can tell (issue 14 row 3).
	doc = previewExit(t, exitError, "chk-old", m("m3.json", events.Offsets{0: 40, 1: 5}))
	if !strings.Contains(doc.Preview.ApplyWouldRefuse, "partition 1: plan offset 5 is below the committed boundary 10") {
		t.Errorf("refusal %q", doc.Preview.ApplyWouldRefuse)
	}
	if p := doc.Preview.Partitions[1]; p.NewLogStart != 10 || p.Deletable != 0 ||
		!strings.Contains(p.Refused, "plan offset 5 is below the committed boundary 10") {
		t.Errorf("partition 1 below its log start: %+v", p)
	}
	// Partition 0 is fine on its own, but apply commits all of a plan or none: its row says the
	// plan is refused, and why, and deletes nothing (issue 20).
	if p := doc.Preview.Partitions[0]; p.Refused != "plan refused as a whole: "+strings.SplitN(doc.Preview.ApplyWouldRefuse, "\n", 2)[0] ||
		p.NewLogStart != p.LogStart || p.Deletable != 0 {
		t.Errorf("partition 0 fine on its own, in a refused plan: %+v", p)
	}

	// Above the high watermark: no impossible new log start or deletable count; the row says
	// why (issue 14 row 2).
	doc = previewExit(t, exitError, "chk-future", m("m5.json", events.Offsets{0: 500, 1: 70}))
	if p := doc.Preview.Partitions[0]; p.NewLogStart != 30 || p.Deletable != 0 ||
		!strings.Contains(p.Refused, "plan offset 500 is outside the available range [30, 100]") {
		t.Errorf("partition 0 above its high watermark: %+v", p)
	}
	code, _, stderr := e.run(t, "plan", "--recovery-point", "chk-future-2", "--markers", m("m6.json", events.Offsets{0: 500, 1: 70}),
		"--out", filepath.Join(dir, "future-2.json"))
	opWantFailure(t, code, stderr, exitError, "Error: apply would refuse plan", "Hint: plan from a recovery point whose offsets are still in the topic")
	code, stdout, stderr := e.run(t, "plan", "--recovery-point", "chk-future-3", "--markers", m("m7.json", events.Offsets{0: 500, 1: 70}))
	if code != exitError {
		t.Errorf("exit %d, want %d\n%s", code, exitError, stderr)
	}
	opParsePlan(t, stdout) // the plan is written all the same
	row := regexp.MustCompile(`(?m)^0 +500 +30 +- +- +100 +30 +refused: plan offset 500 is outside the available range \[30, 100\]`)
	if !row.MatchString(stderr) || strings.Contains(stderr, " 470 ") {
		t.Errorf("the row of partition 0 shows numbers apply would not produce, or not why:\n%s", stderr)
	}

	// Table form without --out: the plan on stdout, the preview on stderr.
	code, stdout, stderr = e.run(t, "plan", "--recovery-point", "chk-3", "--markers", m("m4.json", events.Offsets{0: 70, 1: 70}))
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	opParsePlan(t, stdout)
	for _, f := range []string{"PARTITION  PLAN OFFSET  LOG START  NEW LOG START  DELETABLE  HIGH WATERMARK  BOUNDARY  APPLY",
		"0          70           30         70             40         100             30",
		"apply would accept this plan now."} {
		if !strings.Contains(stderr, f) {
			t.Errorf("stderr lacks %q:\n%s", f, stderr)
		}
	}
}
