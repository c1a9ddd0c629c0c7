package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
)

// docsEventsMarker precedes, in docs/events.md, the shell block this test runs verbatim.
const docsEventsMarker = "<!-- cmd/kcleanup/docs_events_test.go runs this block against a real broker -->"

// docBlock returns the fenced code block that follows marker in a Markdown file.
func docBlock(t *testing.T, path, marker string) string {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), marker+"\n")
	if !ok {
		t.Fatalf("%s has no line %q", path, marker)
	}
	_, body, ok := strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatalf("%s: no ```sh block after %q", path, marker)
	}
	block, _, ok := strings.Cut(body, "```")
	if !ok {
		t.Fatalf("%s: the block after %q does not end", path, marker)
	}
	return block
}

// TestEventsDocConsoleProducer runs the worked example of docs/events.md as written — jq to build
// the record, then `make kafka-cli TOOL=kafka-console-producer ...` — with only the control
// topic's name replaced, and checks that the log accepted the record: `kcleanup status` shows the
// operation PLANNED.
func TestEventsDocConsoleProducer(t *testing.T) {
	e := newReadEnv(t, false)
	e.createControlTopic(t)
	if _, err := exec.LookPath("jq"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the documented example uses jq: install it (apt-get install jq)")
		}
		t.Skip("the documented example uses jq, which is not installed here")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	block := docBlock(t, filepath.Join(root, "docs", "events.md"), docsEventsMarker)
	if !strings.Contains(block, "make kafka-cli TOOL=kafka-console-producer") || !strings.Contains(block, "action-state.kcleanup") {
		t.Fatalf("the documented block is not the console-producer example:\n%s", block)
	}
	block = strings.ReplaceAll(block, "action-state.kcleanup", e.control)

	plan, err := events.BuildPlan("chk-42", []events.Marker{{Topic: e.topic, TopicID: e.topicID, Offsets: events.Offsets{0: 150, 1: 120}}})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, e.dir, "plan.json", string(plan.Encode()))

	// The block runs in the folder of plan.json; make runs the repository's Makefile.
	script := "set -euo pipefail\nmake() { command make --no-print-directory -C \"$KCLEANUP_ROOT\" \"$@\"; }\n" + block
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // the JVM tool may start slowly
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "KCLEANUP_ROOT="+root, kafkatest.EnvBootstrap+"="+e.bootstrap)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the documented commands failed: %v\n%s\nscript:\n%s", err, out.String(), script)
	}

	code, stdout, stderr := e.run(t, "status", "--topic", e.topic, "-o", "json")
	wantExit(t, code, exitOK, stdout, stderr)
	var st struct {
		Operations []struct {
			PlanID    string `json:"planId"`
			State     string `json:"state"`
			UpdatedBy string `json:"updatedBy"`
		} `json:"operations"`
		Rejected []json.RawMessage `json:"rejected"`
	}
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Operations) != 1 || st.Operations[0].PlanID != plan.PlanID || st.Operations[0].State != "PLANNED" ||
		!strings.HasSuffix(st.Operations[0].UpdatedBy, "/console-producer") || len(st.Rejected) != 0 {
		t.Errorf("after the console producer, status is:\n%s\nproducer output:\n%s", stdout, out.String())
	}
}
