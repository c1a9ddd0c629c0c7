package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kcleanup/kcleanup/internal/kafkatest"
)

// demoVerdicts are what every demo run must narrate: the embedded or real broker, the walk
// through the real commands, C0 refused with the seed's offsets, and C1 allowed.
func checkDemoVerdicts(t *testing.T, stdout, topic string) {
	t.Helper()
	for _, want := range []string{
		"$ kcleanup init --topic " + topic,
		"$ kcleanup plan --markers c1-subtask-0.json --markers c1-subtask-1.json --recovery-point C1 --out plan-c1.json",
		"$ kcleanup apply plan-c1.json",
		"writes PLANNED and COMMITTED to the control\n  topic before deleting anything",
		"Kafka now starts partition 0 at offset 150 and partition 1 at 120",
		"$ kcleanup status --topic " + topic,
		"Operations: 1 APPLIED",
		"$ kcleanup history --topic " + topic,
		"$ kcleanup validate --markers c0-subtask-0.json --markers c0-subtask-1.json",
		"Error: Cannot restore Kafka action state for " + topic + "-0 from offset 100 because the committed cleanup boundary is 150",
		"$ kcleanup validate --markers c1-subtask-0.json --markers c1-subtask-1.json",
		"ALLOWED: the recovery point may be restored",
		"\nDone.",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the demo does not say %q", want)
		}
	}
	// Every command's exit status, in order: init, plan, apply, status, history, validate C0, validate C1.
	var exits []string
	for _, m := range regexp.MustCompile(`(?m)^    \(exit (\d+)\)$`).FindAllStringSubmatch(stdout, -1) {
		exits = append(exits, m[1])
	}
	if got := strings.Join(exits, " "); got != "0 0 0 0 0 3 0" {
		t.Errorf("exit statuses %s, want 0 0 0 0 0 3 0", got)
	}
	if t.Failed() {
		t.Logf("demo output:\n%s", stdout)
	}
}

// TestDemoEmbedded runs `kcleanup demo` as `make demo` does: no broker, no cluster flags. It
// needs nothing but Go, so it runs under -short too. KCLEANUP_* variables must not leak into the
// commands it runs.
func TestDemoEmbedded(t *testing.T) {
	clearEnv(t)
	t.Setenv(envBootstrap, "127.0.0.1:1")
	t.Setenv(envControlTopic, "elsewhere")
	t.Setenv(envOutput, "json")
	t.Setenv(envCommandConfig, "/nonexistent/client.properties")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the demo makes its folder
	code, stdout, stderr := runCLI(t, "demo")
	wantExit(t, code, exitOK, stdout, stderr)
	// The output names the demo's files; they are still there, and it says how to remove them
	// (issue 14 row 11).
	dirs, _ := filepath.Glob(filepath.Join(tmp, "kcleanup-demo-*"))
	if len(dirs) != 1 {
		t.Fatalf("demo folders %q, want one", dirs)
	}
	if plan, err := os.ReadFile(filepath.Join(dirs[0], "plan-c1.json")); err != nil || !strings.Contains(stdout, dirs[0]) ||
		!strings.Contains(stdout, "remove them with: rm -r "+dirs[0]) || !strings.Contains(string(plan), `"planId"`) {
		t.Errorf("plan file: %v; the output names the folder and says how to remove it:\n%s", err, stdout)
	}
	// The story as a picture: the audit report, in the folder, named in the output.
	report := filepath.Join(dirs[0], "report.html")
	if html, err := os.ReadFile(report); err != nil || !strings.Contains(stdout, "file://"+report) ||
		!strings.Contains(string(html), "kcleanup audit report: action-state.kcleanup") || !strings.Contains(string(html), `data-state="APPLIED"`) {
		t.Errorf("report %s: %v; the output must name it:\n%s", report, err, stdout)
	}
	if !strings.Contains(stdout, "C0 needs 100: below the boundary, refused") {
		t.Errorf("the demo does not draw the C0/C1 story:\n%s", stdout)
	}
	if !strings.Contains(stdout, "This demo runs on an EMBEDDED broker: franz-go's in-process fake (kfake)") ||
		!strings.Contains(stdout, "It is not Apache Kafka") ||
		!strings.Contains(stdout, "Reminder: that broker was embedded (kfake), not Apache Kafka. `make test`") {
		t.Errorf("the demo does not say plainly that its broker is embedded:\n%s", stdout)
	}
	checkDemoVerdicts(t, stdout, demoTopic)
}

func TestDemoOnARealBroker(t *testing.T) {
	clearEnv(t)
	t.Setenv("TMPDIR", t.TempDir()) // the demo keeps its files
	b := kafkatest.Bootstrap(t)
	adm := kadm.NewClient(kafkatest.Client(t, b))
	topicRE := regexp.MustCompile(`kcleanup-demo-\d{8}-\d{6}-[0-9a-f]{6}`)
	topicsOf := func(t *testing.T, stdout string) (string, string) {
		t.Helper()
		topic := topicRE.FindString(stdout)
		if topic == "" {
			t.Fatalf("no demo topic named in the output:\n%s", stdout)
		}
		return topic, topic + ".kcleanup"
	}
	exists := func(t *testing.T, topics ...string) map[string]bool {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), readTestTimeout)
		defer cancel()
		listed, err := adm.ListTopics(ctx, topics...)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, tp := range topics {
			out[tp] = listed.Has(tp) && listed[tp].Err == nil
		}
		return out
	}

	t.Run("deletes its topics", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "-b", b, "demo")
		wantExit(t, code, exitOK, stdout, stderr)
		topic, control := topicsOf(t, stdout)
		if !strings.Contains(stdout, "use the Kafka cluster at "+b+" (given with -b)") || strings.Contains(stdout, "EMBEDDED") {
			t.Errorf("the demo does not say it runs on the cluster at %s:\n%s", b, stdout)
		}
		checkDemoVerdicts(t, stdout, topic)
		if !strings.Contains(stdout, "Deleted the demo's topics "+topic+" and "+control) {
			t.Errorf("no word of deleting the topics:\n%s", stdout)
		}
		// DeleteTopics is acknowledged by the controller; a broker's metadata follows a moment
		// later (more under load), so the test waits for it, within a bound.
		gone := func() map[string]bool { return exists(t, topic, control) }
		left := gone()
		for deadline := time.Now().Add(30 * time.Second); (left[topic] || left[control]) && time.Now().Before(deadline); left = gone() {
			time.Sleep(200 * time.Millisecond)
		}
		for tp, ok := range left {
			if ok {
				t.Errorf("topic %s still exists 30 s after the demo", tp)
			}
		}
	})

	t.Run("keeps its topics", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "-b", b, "demo", "--keep-topics")
		wantExit(t, code, exitOK, stdout, stderr)
		topic, control := topicsOf(t, stdout)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), readTestTimeout)
			defer cancel()
			_, _ = adm.DeleteTopics(ctx, topic, control)
		})
		checkDemoVerdicts(t, stdout, topic)
		for tp, ok := range exists(t, topic, control) {
			if !ok {
				t.Errorf("topic %s is gone despite --keep-topics", tp)
			}
		}
		// What the demo left is a real control topic that the commands read like any other.
		code, stdout, stderr = runCLI(t, "-b", b, "status", "--topic", topic, "-o", "json")
		wantExit(t, code, exitOK, stdout, stderr)
		if !strings.Contains(stdout, `"state": "APPLIED"`) {
			t.Errorf("status of the kept demo topic:\n%s", stdout)
		}
	})
}

func TestDemoOnAnUnreachableClusterFails(t *testing.T) {
	clearEnv(t)
	t.Setenv("TMPDIR", t.TempDir()) // the demo keeps its files
	code, stdout, stderr := runCLI(t, "-b", "127.0.0.1:1", "--timeout", "2s", "demo")
	wantExit(t, code, exitError, stdout, stderr)
	if !strings.Contains(stdout, "use the Kafka cluster at 127.0.0.1:1 (given with -b)") || !strings.HasPrefix(stderr, "Error: ") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
}

func TestPrefixWriter(t *testing.T) {
	var out strings.Builder
	pw := &prefixWriter{w: &out, prefix: "> "}
	for _, chunk := range []string{"a", "b\nc\n", "\nd"} {
		if n, err := pw.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", chunk, n, err)
		}
	}
	if got, want := out.String(), "> ab\n> c\n> \n> d"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestDemoVerdict: a walk in which any step misbehaves ends in an error (exit 1) that names the
// step, after the narration flagged it.
func TestDemoVerdict(t *testing.T) {
	var out strings.Builder
	d := &demo{w: &out}
	if err := d.verdict(); err != nil {
		t.Fatalf("a walk without problems: %v", err)
	}
	d.stepf("validate C0")
	d.expect(true, "never shown")
	d.expect(false, "validate C0 exited %d, want 3 (refused)", 0)
	err := d.verdict()
	if exitCode(err) != exitError || !strings.Contains(err.Error(), "step 1: validate C0 exited 0, want 3 (refused)") {
		t.Errorf("verdict: %v (exit %d)", err, exitCode(err))
	}
	if !strings.Contains(out.String(), "!! unexpected: validate C0 exited 0") || strings.Contains(out.String(), "never shown") {
		t.Errorf("narration:\n%s", out.String())
	}
}
