package main

// Tests of issue 14: the command line is one consistent tool. Every command's bad input gets the
// same treatment (exit code, Error:, Hint:), help text fits the command it is on, and README
// agrees with the binary.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/repo"
	"github.com/kcleanup/kcleanup/protocol"
)

// TestWorkerHelpFitsTheWorker: the worker serves control topics; the global --control-topic
// text ("default: <data topic>.kcleanup") means nothing there (issue 14 row 12).
func TestWorkerHelpFitsTheWorker(t *testing.T) {
	clearWorkerEnv(t)
	code, stdout, stderr := runCLI(t, "worker", "--help")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if strings.Contains(stdout, "<data topic>") || !strings.Contains(stdout, "control topic to serve (env KCLEANUP_CONTROL_TOPIC)") {
		t.Errorf("worker --help:\n%s", stdout)
	}
	// The other commands keep the global words.
	_, stdout, _ = runCLI(t, "status", "--help")
	if !strings.Contains(stdout, "default: <data topic>.kcleanup") {
		t.Errorf("status --help lost the global --control-topic text:\n%s", stdout)
	}
	// The environment still reaches the worker's --control-topic.
	t.Setenv(envControlTopic, "from-env")
	o, code, stderr := parseWorker(t)
	if code != exitOK || len(o.topics) != 1 || o.topics[0] != "from-env" {
		t.Errorf("exit %d, topics %q: %s", code, o.topics, stderr)
	}
}

// TestREADMEAgreesWithTheBinary: README's table of commands lists exactly the commands of
// `kcleanup --help` (version, completion and help too), and every flag it shows on a command
// line is a flag of that command (issue 14 row 10).
func TestREADMEAgreesWithTheBinary(t *testing.T) {
	clearEnv(t)
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	start := strings.Index(section, "## The commands")
	if start < 0 {
		t.Fatal("README has no section \"## The commands\"")
	}
	section = section[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}

	_, help, _ := runCLI(t, "--help")
	listed := map[string]bool{}
	inCommands := false
	for _, line := range strings.Split(help, "\n") {
		switch {
		case strings.HasPrefix(line, "Available Commands:"):
			inCommands = true
		case inCommands && strings.HasPrefix(line, "  "):
			listed[strings.Fields(line)[0]] = true
		case inCommands:
			inCommands = false
		}
	}
	if len(listed) < 10 {
		t.Fatalf("--help lists %d commands:\n%s", len(listed), help)
	}

	inREADME := map[string]bool{}
	span := regexp.MustCompile("`([^`]+)`")
	flag := regexp.MustCompile(`--[a-z][a-z-]*`)
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `") || len(cells) < 2 {
			continue
		}
		for _, m := range span.FindAllStringSubmatch(cells[0], -1) {
			name := strings.Fields(m[1])[0]
			inREADME[name] = true
			if !listed[name] {
				t.Errorf("README lists %q, which kcleanup --help does not", name)
				continue
			}
			_, cmdHelp, _ := runCLI(t, name, "--help")
			for _, f := range flag.FindAllString(m[1], -1) {
				if !strings.Contains(cmdHelp, "  "+f+" ") && !strings.Contains(cmdHelp, ", "+f+" ") {
					t.Errorf("README shows `%s`, but %s has no flag %s", m[1], name, f)
				}
			}
		}
	}
	for name := range listed {
		if !inREADME[name] {
			t.Errorf("kcleanup --help lists %q, which README's table of commands does not", name)
		}
	}
	// The operator guide's table at a glance: every command it shows exists, with its flags.
	guide, err := os.ReadFile(filepath.Join(root, "docs", "operator-guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(guide), "\n") {
		if !strings.HasPrefix(line, "| `kcleanup ") {
			continue
		}
		cell := strings.Split(line, " | ")[0]
		for _, m := range span.FindAllStringSubmatch(cell, -1) {
			fields := strings.Fields(strings.TrimPrefix(m[1], "kcleanup "))
			if len(fields) == 0 || !listed[fields[0]] {
				t.Errorf("docs/operator-guide.md shows `%s`, not a command of kcleanup --help", m[1])
				continue
			}
			_, cmdHelp, _ := runCLI(t, fields[0], "--help")
			if len(fields) > 1 && fields[1] == strings.ToLower(fields[1]) && !strings.HasPrefix(fields[1], "-") {
				_, sub, _ := runCLI(t, fields[0], fields[1], "--help") // a subcommand's flags (retention set)
				cmdHelp += sub
			}
			for _, f := range flag.FindAllString(m[1], -1) {
				if !strings.Contains(cmdHelp, "  "+f+" ") && !strings.Contains(cmdHelp, ", "+f+" ") {
					t.Errorf("docs/operator-guide.md shows `%s`, but %s has no flag %s", m[1], fields[0], f)
				}
			}
		}
	}
	if !strings.Contains(section, "`doctor --topic T`") || !strings.Contains(section, "kcleanup <command> --help") {
		t.Errorf("README does not show doctor --topic T or where command flags are documented")
	}
	if !strings.Contains(help, "kcleanup <command> --help") {
		t.Errorf("kcleanup --help does not say where each command's flags are documented:\n%s", help)
	}
}

// TestEveryCommandsBadInput runs every command with input an operator gets wrong (a flag, a
// file, a cluster that does not answer) through the real command line, and checks the one
// contract they all share: the exit code of the one map (exitcode.go), nothing on stdout but
// results, and an "Error:" line followed by at least one "Hint:" line that says what to do. A
// new command, or a new error path, belongs in this table.
func TestEveryCommandsBadInput(t *testing.T) {
	clearWorkerEnv(t)
	t.Setenv("TMPDIR", t.TempDir()) // demo's folder
	dir := t.TempDir()
	good := opTestMarkers(t, dir, "good.json", opMarker(events.Offsets{0: 40, 1: 30}))
	other := opTestMarkers(t, dir, "other.json", events.Marker{Topic: "other-topic", TopicID: opTestID, Offsets: events.Offsets{0: 1}})
	plan, planFile := opTestPlan(t, dir, "chk-1", "action-state", opTestID, events.Offsets{0: 40, 1: 30})
	whole := string(plan.Encode())
	truncated := writeFile(t, dir, "truncated.plan.json", whole[:len(whole)/2])
	edited := writeFile(t, dir, "edited.plan.json", strings.Replace(whole, `"chk-1"`, `"chk-2"`, 1))
	brokenMarkers := writeFile(t, dir, "broken.json", `{"schemaVersion":1,"topic":"action-state",}`)
	emptyFile := writeFile(t, dir, "empty.json", "")
	notJSON := writeFile(t, dir, "notjson.json", "topic=action-state")
	missing := filepath.Join(dir, "missing.json")
	existing := writeFile(t, dir, "existing.json", "keep")
	badProps := writeFile(t, dir, "bad.properties", "no.such.key=1\n")
	// Nothing listens on port 1: a refused connection, at once.
	down := []string{"-b", "127.0.0.1:1", "--timeout", "2s"}

	cases := []struct {
		name string
		args []string
		code int
		want string // a fragment of the Error: line
	}{
		// The command line itself.
		{"unknown command", []string{"plna"}, exitUsage, `unknown command "plna"`},
		{"no command", nil, exitUsage, "missing command"},
		{"unknown flag", []string{"status", "--topik", "t"}, exitUsage, "unknown flag --topik: did you mean --topic?"},
		{"flag typo: a local flag", []string{"plan", "--outt", "p.json"}, exitUsage, "unknown flag --outt: did you mean --out or --output?"},
		{"flag typo: a global flag before the command", []string{"--timout", "3s", "status", "--topic", "t"}, exitUsage, "unknown flag --timout: did you mean --timeout?"},
		{"flag typo: a global flag after it", []string{"status", "--topic", "t", "--bootstrap-sever", "b:9092"}, exitUsage, "unknown flag --bootstrap-sever: did you mean --bootstrap-server?"},
		{"flag typo: a prefix", []string{"apply", "--no", planFile}, exitUsage, "unknown flag --no: did you mean --no-wait?"},
		{"unknown flag, nothing near it", []string{"status", "--xyzzy"}, exitUsage, "unknown flag: --xyzzy"},
		{"bad --output", []string{"status", "--topic", "t", "-o", "yaml"}, exitUsage, `invalid --output "yaml"`},
		{"bad --timeout", []string{"status", "--topic", "t", "--timeout", "soon"}, exitUsage, `invalid --timeout "soon"`},
		{"empty --bootstrap-server", []string{"status", "--topic", "t", "-b", ","}, exitUsage, "is empty"},
		{"missing --command-config", append(down, "status", "--topic", "t", "--command-config", missing), exitError, missing},
		{"bad --command-config", append(down, "status", "--topic", "t", "--command-config", badProps), exitError, "no.such.key"},
		{"unknown completion shell", []string{"completion", "tcsh"}, exitUsage, "tcsh"},
		{"help of an unknown command", []string{"help", "plna"}, exitUsage, "plna"},

		{"init: no --topic", []string{"init"}, exitUsage, `"topic" not set`},
		{"init: blank --topic", []string{"init", "--topic", ""}, exitUsage, "--topic is given but blank"},
		{"init: extra argument", []string{"init", "--topic", "t", "extra"}, exitUsage, "extra"},
		{"init: unreachable cluster", append(down, "init", "--topic", "t"), exitError, "127.0.0.1:1"},

		{"doctor: nothing to check", []string{"doctor"}, exitUsage, "doctor needs"},
		{"doctor: blank --topic", []string{"doctor", "--topic", " "}, exitUsage, "--topic is given but blank"},
		{"doctor: bad --stuck-after", []string{"doctor", "--topic", "t", "--stuck-after", "later"}, exitUsage, "later"},
		{"doctor: unreachable cluster", append(down, "doctor", "--topic", "t"), exitError, "127.0.0.1:1"},

		{"plan: no --markers", []string{"plan", "--recovery-point", "c"}, exitUsage, "no recovery point: give --checkpoint PATH or --markers FILE"},
		{"plan: --markers without --recovery-point", []string{"plan", "--markers", good}, exitUsage, "--recovery-point is required with --markers"},
		{"plan: --markers and --checkpoint", []string{"plan", "--markers", good, "--checkpoint", missing}, exitUsage, "--markers and --checkpoint both name the recovery point"},
		{"plan: missing checkpoint", []string{"plan", "--no-preview", "--checkpoint", missing}, exitError, missing},
		{"markers: no --checkpoint", []string{"markers"}, exitUsage, "--checkpoint is required"},
		{"markers: missing checkpoint", []string{"markers", "--checkpoint", missing}, exitError, missing},
		{"markers: two operator flags", []string{"markers", "--checkpoint", missing, "--operator-uid", "a", "--operator-uid-hash", "b"}, exitUsage, "both name the operator"},
		{"plan: blank --recovery-point", []string{"plan", "--markers", good, "--recovery-point", ""}, exitUsage, "--recovery-point is given but blank"},
		{"plan: missing markers file", []string{"plan", "--no-preview", "--markers", missing, "--recovery-point", "c"}, exitError, missing},
		{"plan: broken markers file", []string{"plan", "--no-preview", "--markers", brokenMarkers, "--recovery-point", "c"}, exitError, brokenMarkers},
		{"plan: empty markers file", []string{"plan", "--no-preview", "--markers", emptyFile, "--recovery-point", "c"}, exitError, "the file is empty"},
		{"plan: not JSON", []string{"plan", "--no-preview", "--markers", notJSON, "--recovery-point", "c"}, exitError, notJSON},
		{"plan: two topics", []string{"plan", "--no-preview", "--markers", good, "--markers", other, "--recovery-point", "c"}, exitError, "other-topic"},
		{"plan: stdin twice", []string{"plan", "--markers", "-", "--markers", "-", "--recovery-point", "c"}, exitUsage, "standard input can be read only once"},
		{"plan: --out exists", []string{"plan", "--no-preview", "--markers", good, "--recovery-point", "c", "--out", existing}, exitError, "already exists"},
		{"plan: --out in no folder", []string{"plan", "--no-preview", "--markers", good, "--recovery-point", "c", "--out", filepath.Join(dir, "nope", "p.json")}, exitError, "no such file"},

		{"submit: no plan", []string{"submit"}, exitUsage, "accepts 1 arg"},
		{"submit: missing plan file", append(down, "submit", missing), exitError, missing},
		{"submit: truncated plan", append(down, "submit", truncated), exitError, "the file ends early (truncated?)"},
		{"submit: edited plan", append(down, "submit", edited), exitError, "planId"},
		{"submit: unreachable cluster", append(down, "submit", planFile), exitError, "127.0.0.1:1"},

		{"apply: two plans", []string{"apply", planFile, planFile}, exitUsage, "accepts 1 arg"},
		{"apply: missing plan file", append(down, "apply", missing), exitError, missing},
		{"apply: truncated plan", append(down, "apply", truncated), exitError, "the file ends early (truncated?)"},
		{"apply: edited plan", append(down, "apply", edited), exitError, "planId"},
		{"apply: --no-wait with --restore-grace", append(down, "apply", planFile, "--no-wait", "--restore-grace", "10m"), exitUsage, "--restore-grace 10m0s with --no-wait"},
		{"mirror grace: not whole seconds", []string{"mirror", "grace", "1.5s", "--topic", "t", "--reason", "r"}, exitUsage, "not whole seconds"},
		{"mirror grace: above a day", []string{"mirror", "grace", "25h", "--topic", "t", "--reason", "r"}, exitUsage, "above the longest grace"},
		{"mirror grace: no --reason", []string{"mirror", "grace", "10m", "--topic", "t"}, exitUsage, `"reason" not set`},
		{"mirror attach: bad --restore-grace", []string{"mirror", "attach", "m", "--topic", "t", "--restore-grace", "soon"}, exitUsage, "not a duration"},
		{"apply: unreachable cluster", append(down, "apply", planFile), exitError, "127.0.0.1:1"},

		{"status: which control topic", []string{"status"}, exitUsage, "which control topic"},
		{"status: blank --topic", []string{"status", "--topic", ""}, exitUsage, "--topic is given but blank"},
		{"status: control topic is the data topic", []string{"status", "--topic", "t", "--control-topic", "t"}, exitUsage, "is the data topic itself"},
		{"status: unreachable cluster", append(down, "status", "--topic", "t"), exitError, "127.0.0.1:1"},

		{"history: blank --plan", []string{"history", "--topic", "t", "--plan", ""}, exitUsage, "--plan is given but blank"},
		{"history: --plan not an ID", []string{"history", "--topic", "t", "--plan", "XYZ"}, exitUsage, "is not a plan ID"},
		{"history: unreachable cluster", append(down, "history", "--topic", "t"), exitError, "127.0.0.1:1"},

		{"validate: no --markers", []string{"validate"}, exitUsage, "no recovery point: give --checkpoint PATH or --markers FILE"},
		{"validate: missing checkpoint", append(down, "validate", "--checkpoint", missing), exitCannotTell, missing},
		{"validate: missing markers file", append(down, "validate", "--markers", missing), exitError, missing},
		{"validate: broken markers file", append(down, "validate", "--markers", brokenMarkers), exitError, brokenMarkers},
		{"validate: stdin twice", append(down, "validate", "--markers", "-", "--markers", "-"), exitUsage, "standard input can be read only once"},
		{"validate: bad --pin-for", append(down, "validate", "--markers", good, "--pin-for", "a-while"), exitUsage, "is not a positive duration"},
		{"validate: bad --command-config", append(down, "validate", "--markers", good, "--command-config", badProps), exitError, "no.such.key"},
		{"validate: two topics", append(down, "validate", "--markers", good, "--markers", other), exitError, "more than one topic"},

		{"worker: no control topic", []string{"worker"}, exitUsage, "no control topic to serve"},
		{"worker: bad --log-format", []string{"worker", "--control-topic", "c", "--log-format", "xml"}, exitUsage, `"xml"`},
		{"worker: bad --log-level", []string{"worker", "--control-topic", "c", "--log-level", "loud"}, exitUsage, `"loud"`},
		{"worker: blank --control-topics", []string{"worker", "--control-topics", ""}, exitUsage, "--control-topics is given but blank"},
		{"worker: --replica-name with a space", []string{"worker", "--control-topic", "c", "--replica-name", "kc 1"}, exitUsage, "has spaces or control characters"},

		{"demo: extra argument", []string{"demo", "now"}, exitUsage, "now"},
		{"demo: unreachable cluster", append(down, "demo"), exitError, "127.0.0.1:1"},
		{"version: extra argument", []string{"version", "1"}, exitUsage, `"1"`},

		{"adopt: no --from", []string{"adopt"}, exitUsage, `"from" not set`},
		{"adopt: blank --from", []string{"adopt", "--from", ""}, exitUsage, "--from is given but blank"},
		{"adopt: unreachable cluster", append(down, "adopt", "--from", "x"), exitError, "127.0.0.1:1"},

		{"mirror attach: no mirror topic", []string{"mirror", "attach", "--topic", "t"}, exitUsage, "accepts 1 arg"},
		{"mirror attach: which control topic", []string{"mirror", "attach", "m"}, exitUsage, "which control topic"},
		{"mirror attach: blank --reason", []string{"mirror", "attach", "m", "--topic", "t", "--reason", ""}, exitUsage, "--reason is given but blank"},
		{"mirror detach: unreachable cluster", append(down, "mirror", "detach", "--topic", "t", "--reason", "r"), exitError, "127.0.0.1:1"},
		{"mirror sync: extra argument", []string{"mirror", "sync", "--topic", "t", "now"}, exitUsage, `"now"`},

		{"pin: no --reason", []string{"pin", "--markers", good, "--recovery-point", "sp"}, exitUsage, `"reason" not set`},
		{"pin: --for and --until", []string{"pin", "--markers", good, "--recovery-point", "sp", "--reason", "r", "--for", "1d", "--until", "2099-01-01T00:00:00Z"}, exitUsage, "none of the others can be"},
		{"pin: bad --for", []string{"pin", "--markers", good, "--recovery-point", "sp", "--reason", "r", "--for", "soon"}, exitUsage, "is not a positive duration"},
		{"pin: --until past", []string{"pin", "--markers", good, "--recovery-point", "sp", "--reason", "r", "--until", "2001-01-01T00:00:00Z"}, exitUsage, "is not in the future"},
		{"pin: unreachable cluster", append(down, "pin", "--markers", good, "--recovery-point", "sp", "--reason", "r", "--for", "7d"), exitError, "127.0.0.1:1"},
		{"unpin: no pin ID", []string{"unpin", "--topic", "t", "--reason", "r"}, exitUsage, "accepts 1 arg"},
		{"unpin: which control topic", []string{"unpin", "0123456789abcdef", "--reason", "r"}, exitUsage, "which control topic"},
		{"unpin: unreachable cluster", append(down, "unpin", "0123456789abcdef", "--topic", "t", "--reason", "r"), exitError, "127.0.0.1:1"},

		{"tombstones declare-none: no --topic", []string{"tombstones", "declare-none", "--reason", "r"}, exitUsage, "declare-none needs --topic"},
		{"tombstones declare-none: no --reason", []string{"tombstones", "declare-none", "--topic", "t"}, exitUsage, `"reason" not set`},
		{"tombstones declare-none: bad --since", []string{"tombstones", "declare-none", "--topic", "t", "--reason", "r", "--since", "0=x"}, exitUsage, `is not PARTITION=OFFSET`},
		{"tombstones declare-none: --since twice", []string{"tombstones", "declare-none", "--topic", "t", "--reason", "r", "--since", "0=1,0=2"}, exitUsage, `partition 0 is given twice`},
		{"tombstones declare-none: unreachable cluster", append(down, "tombstones", "declare-none", "--topic", "t", "--reason", "r"), exitError, "127.0.0.1:1"},
		{"tombstones withdraw: which control topic", []string{"tombstones", "withdraw", "--reason", "r"}, exitUsage, "which control topic"},
		{"tombstones withdraw: unreachable cluster", append(down, "tombstones", "withdraw", "--topic", "t", "--reason", "r"), exitError, "127.0.0.1:1"},
		{"retention set: no --watch", []string{"retention", "set", "--topic", "t", "--reason", "r"}, exitUsage, `"watch" not set`},
		{"retention set: no --topic", []string{"retention", "set", "--watch", "/c", "--reason", "r"}, exitUsage, "--topic is required"},
		{"retention set: --every below a second", []string{"retention", "set", "--topic", "t", "--watch", "/c", "--every", "500ms", "--reason", "r"}, exitUsage, "at least 1s"},
		{"retention set: negative --min-advance", []string{"retention", "set", "--topic", "t", "--watch", "/c", "--min-advance", "-1", "--reason", "r"}, exitUsage, "minAdvance is -1"},
		{"retention set: bad --operator-uid-hash", []string{"retention", "set", "--topic", "t", "--watch", "/c", "--operator-uid-hash", "xyz", "--reason", "r"}, exitUsage, "32 lowercase hex"},
		{"retention set: --watch twice", []string{"retention", "set", "--topic", "t", "--watch", "/c", "--watch", "/c", "--reason", "r"}, exitUsage, "given twice"},
		{"retention set: unreachable cluster", append(down, "retention", "set", "--topic", "t", "--watch", "/c", "--reason", "r"), exitError, "127.0.0.1:1"},
		{"retention clear: blank --reason", []string{"retention", "clear", "--topic", "t", "--reason", " "}, exitUsage, "--reason is given but blank"},
		{"retention show: which control topic", []string{"retention", "show"}, exitUsage, "which control topic"},
		{"retention show: relative --checkpoint-root", append(down, "retention", "show", "--topic", "t", "--checkpoint-root", "rel/dir"), exitUsage, "checkpoint-root"},
	}
	// Every command has a row.
	tested := map[string]bool{}
	for _, tc := range cases {
		for _, a := range tc.args {
			tested[a] = true
		}
	}
	for _, c := range newRootCmd().Commands() {
		if !tested[c.Name()] {
			t.Errorf("command %s has no row in this table: add its bad input", c.Name())
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := opRunWithStdin(t, "", tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			errLine := ""
			for _, line := range strings.Split(stderr, "\n") {
				if strings.HasPrefix(line, "Error: ") {
					errLine = line
					break
				}
			}
			if errLine == "" || !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr has no Error: line naming %q", tc.want)
			}
			if i := strings.Index(stderr, "Error: "); i < 0 || !strings.Contains(stderr[i:], "\nHint: ") {
				t.Errorf("no Hint: after the Error: line")
			}
			if strings.Contains(stdout, "Error:") {
				t.Errorf("an error on stdout")
			}
			if t.Failed() {
				t.Logf("kcleanup %s\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), stdout, stderr)
			}
		})
	}
}

// TestEveryCommandsBadInputOnTheRealBroker is the same contract for mistakes only a cluster can
// reveal: a topic or control topic that does not exist, a plan the cluster refuses, a plan ID
// that is not in the log.
func TestEveryCommandsBadInputOnTheRealBroker(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.dataTopic(t, 2, 20, opGoodDataConfigs())
	missing := "optest-missing-" + strings.ToLower(id[:8])
	fresh, _ := e.dataTopic(t, 1, 1, opGoodDataConfigs()) // never cleaned: no control topic
	dir := t.TempDir()
	_, future := opTestPlan(t, dir, "chk-future", topic, id, events.Offsets{0: 500, 1: 10})
	_, gone := opTestPlan(t, dir, "chk-gone", missing, id, events.Offsets{0: 1})
	markers := opTestMarkers(t, dir, "future.json", events.Marker{Topic: topic, TopicID: id, Offsets: events.Offsets{0: 500, 1: 10}})
	typo := opTestMarkers(t, dir, "typo.json", events.Marker{Topic: missing, TopicID: id, Offsets: events.Offsets{0: 1}})
	if code, _, stderr := e.run(t, "init", "--topic", topic); code != exitOK {
		t.Fatalf("init: exit %d\n%s", code, stderr)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"status: no data topic", []string{"status", "--topic", missing}, exitError, "no topic " + missing},
		{"history: no data topic", []string{"history", "--topic", missing}, exitError, "no topic " + missing},
		{"status: no control topic", []string{"status", "--control-topic", missing}, exitError, "no control topic " + missing},
		{"status: data topic, no control topic yet", []string{"status", "--topic", fresh}, exitError, "kcleanup init --topic " + fresh},
		{"history: no such plan", []string{"history", "--topic", topic, "--plan", "abc"}, exitError, "names a plan abc"},
		{"doctor: no data topic", []string{"doctor", "--topic", missing}, exitError, "block cleanup"},
		{"init: no data topic", []string{"init", "--topic", missing}, exitError, "block cleanup"},
		{"plan: apply would refuse", []string{"plan", "--markers", markers, "--recovery-point", "chk-future", "--out", filepath.Join(dir, "p.json")},
			exitError, "apply would refuse plan"},
		{"plan: no data topic (a typo)", []string{"plan", "--markers", typo, "--recovery-point", "chk-typo", "--out", filepath.Join(dir, "typo.plan.json")},
			exitError, "topic \"" + missing + "\" does not exist"},
		{"validate: no data topic, never known", []string{"validate", "--markers", typo, "--control-topic", protocol.ControlTopicFor(topic)},
			exitRefused, "the topic does not exist, so none of the records"},
		{"submit: above the high watermark", []string{"submit", future}, exitError, "outside the available range"},
		{"apply: above the high watermark", []string{"apply", future}, exitError, "outside the available range"},
		{"apply: no data topic", []string{"apply", gone}, exitError, missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := e.run(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			i := strings.Index(stderr, "Error: ")
			if i < 0 || !strings.Contains(stderr[i:], tc.want) || !strings.Contains(stderr[i:], "\nHint: ") {
				t.Errorf("want an Error: line naming %q and a Hint:", tc.want)
			}
			if t.Failed() {
				t.Logf("kcleanup %s\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), stdout, stderr)
			}
		})
	}
}

// TestLongKeysAreCutInViews: a control record's key is whatever its writer chose. A 600 kB
// key (rejected: it is no <planId>/<EVENT>) is cut in the status and history views, which say
// its length, and shown whole with --all (issue 14 row 13).
func TestLongKeysAreCutInViews(t *testing.T) {
	e := newReadEnv(t, true)
	const n = 600_000
	key := strings.Repeat("k", n)
	e.produceControl(t, []byte(key), []byte(`{"schemaVersion":1}`))
	clipped := "… (" + strconv.Itoa(n) + " bytes)"

	for _, tc := range []struct {
		args []string
		says string // "" for a view that does not show keys
	}{
		{[]string{"status"}, clipped}, {[]string{"status", "-o", "json"}, `"keyBytes": 600000`},
		{[]string{"history"}, ""}, {[]string{"history", "-o", "json"}, `"keyBytes": 600000`},
	} {
		code, stdout, stderr := e.run(t, append(tc.args, "--topic", e.topic)...)
		wantExit(t, code, exitOK, stdout, stderr)
		if len(stdout) > 20_000 || !strings.Contains(stdout, tc.says) {
			t.Errorf("%s: %d bytes of output; want the key cut and %q", strings.Join(tc.args, " "), len(stdout), tc.says)
		}
	}
	code, stdout, stderr := e.run(t, "history", "--topic", e.topic, "-o", "json")
	wantExit(t, code, exitOK, stdout, stderr)
	var doc struct {
		Verdicts []struct {
			Key      string `json:"key"`
			KeyBytes int    `json:"keyBytes"`
		} `json:"verdicts"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	last := doc.Verdicts[len(doc.Verdicts)-1]
	if last.KeyBytes != n || !strings.HasPrefix(last.Key, strings.Repeat("k", jsonTextLimit)) || !strings.HasSuffix(last.Key, clipped) {
		t.Errorf("history JSON: keyBytes %d, key of %d bytes", last.KeyBytes, len(last.Key))
	}
	for _, args := range [][]string{{"status"}, {"status", "-o", "json"}, {"history", "-o", "json"}} {
		code, stdout, stderr := e.run(t, append(args, "--topic", e.topic, "--all")...)
		wantExit(t, code, exitOK, stdout, stderr)
		if !strings.Contains(stdout, key) || strings.Contains(stdout, clipped) {
			t.Errorf("%s --all: the key is not whole (%d bytes of output)", strings.Join(args, " "), len(stdout))
		}
	}
}

func TestClip(t *testing.T) {
	// Text a document already cut says the length of the whole text.
	if got, want := clipCut("abcdef… (5000 bytes)", 5000, 3), "abc… (5000 bytes)"; got != want {
		t.Errorf("clipCut = %q, want %q", got, want)
	}
	if got, want := clipCut("ab… (5000 bytes)", 5000, 80), "ab… (5000 bytes)"; got != want {
		t.Errorf("clipCut = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		s     string
		limit int
		want  string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc… (4 bytes)"},
		{"ééé", 3, "é… (6 bytes)"}, // never half a character
		{"", 0, ""},
	} {
		if got := clipCut(tc.s, 0, tc.limit); got != tc.want {
			t.Errorf("clipCut(%q, 0, %d) = %q, want %q", tc.s, tc.limit, got, tc.want)
		}
		if got := clip(tc.s, tc.limit); got != tc.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tc.s, tc.limit, got, tc.want)
		}
	}
}

// schemas compiles every JSON Schema in docs/schema (by $id, so that one may $ref another).
func schemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "docs", "schema", "*.schema.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas: %v", err)
	}
	c := jsonschema.NewCompiler()
	ids := map[string]string{}
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(r)
		r.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if id == "" {
			t.Fatalf("%s has no $id", f)
		}
		if err := c.AddResource(id, doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		ids[filepath.Base(f)] = id
	}
	out := map[string]*jsonschema.Schema{}
	for name, id := range ids {
		s, err := c.Compile(id)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = s
	}
	return out
}

// TestJSONDocumentsMatchTheirSchemas runs the commands whose JSON documents have a schema in
// docs/schema, on the real broker, through each shape a document takes, and validates what they
// print: the schema is what a program can rely on.
func TestJSONDocumentsMatchTheirSchemas(t *testing.T) {
	s := schemas(t)
	e := newReadEnv(t, true)
	e.produceControl(t, []byte(strings.Repeat("k", 5000)), []byte(`{"schemaVersion":1}`)) // cut in JSON
	dir := t.TempDir()
	ok := e.markers(t, "ok.json", events.Offsets{0: 160, 1: 130})
	future := e.markers(t, "future.json", events.Offsets{0: 100_000, 1: 130})
	c1 := e.apply(t, "C1-again", events.Offsets{0: 150, 1: 120}).PlanID

	for _, tc := range []struct {
		schema string
		args   []string
		code   int
	}{
		{"plan-report.schema.json", []string{"plan", "--markers", ok, "--recovery-point", "a", "--out", filepath.Join(dir, "a.json")}, exitOK},
		{"plan-report.schema.json", []string{"plan", "--markers", future, "--recovery-point", "b", "--out", filepath.Join(dir, "b.json")}, exitError},
		{"plan-report.schema.json", []string{"plan", "--markers", ok, "--recovery-point", "c", "--no-preview", "--out", filepath.Join(dir, "c.json")}, exitOK},
		{"plan.schema.json", []string{"plan", "--markers", ok, "--recovery-point", "d", "--no-preview"}, exitOK},
		{"history.schema.json", []string{"history", "--topic", e.topic}, exitOK},
		{"history.schema.json", []string{"history", "--topic", e.topic, "--plan", c1[:12]}, exitOK},
		{"history.schema.json", []string{"history", "--topic", e.topic, "--all"}, exitOK},
		{"status.schema.json", []string{"status", "--topic", e.topic}, exitOK},
		{"status.schema.json", []string{"status", "--topic", e.topic, "--all"}, exitOK},
		{"findings.schema.json", []string{"doctor", "--topic", e.topic}, exitOK},
		{"findings.schema.json", []string{"doctor", "--topic", e.topic + "-missing"}, exitError},
		{"findings.schema.json", []string{"init", "--topic", e.topic}, exitOK},
	} {
		code, stdout, stderr := e.run(t, append([]string{"-o", "json"}, tc.args...)...)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d\n%s", strings.Join(tc.args, " "), code, tc.code, stderr)
			continue
		}
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(stdout))
		if err != nil {
			t.Errorf("%s: %v\n%s", strings.Join(tc.args, " "), err, stdout)
			continue
		}
		if err := s[tc.schema].Validate(inst); err != nil {
			detail := err.Error()
			var ve *jsonschema.ValidationError
			if errors.As(err, &ve) {
				detail = fmt.Sprintf("%v", ve.BasicOutput())
			}
			t.Errorf("%s does not match %s: %s\n%s", strings.Join(tc.args, " "), tc.schema, clip(detail, 3000), clip(stdout, 3000))
		}
	}
}

// TestExitCodesAgreeEverywhere: the one table of exit codes (exitCodes, exitcode.go) is the one
// --help, README and the operator guide document: each lists exactly the codes the binary can
// return, each with the table's word, and 3 and 4 as the recovery gate's alone (mirror attach
// once exited 3 while README said 3 and 4 belong to the gate; --help said 3 was also "the
// request does not fit").
func TestExitCodesAgreeEverywhere(t *testing.T) {
	clearEnv(t)
	codes := []int{exitOK, exitError, exitUsage, exitRefused, exitCannotTell, exitInterrupted}
	var table []int
	for _, c := range exitCodes {
		table = append(table, c.code)
	}
	if !slices.Equal(table, codes) {
		t.Fatalf("exitCodes lists %v; the constants are %v", table, codes)
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile(filepath.Join(root, "docs", "operator-guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, help, _ := runCLI(t, "--help")
	readmeText := regexp.MustCompile(`(?m)^Exit codes:.*(?:\n.+)*`).FindString(string(readme))
	guideSection := string(guide)
	if i := strings.Index(guideSection, "## Exit codes"); i >= 0 {
		guideSection = guideSection[i:]
		if j := strings.Index(guideSection[3:], "\n## "); j >= 0 {
			guideSection = guideSection[:j+3]
		}
	}
	helpText := help[strings.Index(help, "Exit codes:"):]
	helpText = helpText[:strings.Index(helpText, "\n\n")]
	// Each document: a pattern finding every code it lists with the text that describes it.
	docs := []struct {
		name, text string
		entry      *regexp.Regexp
	}{
		{"--help", helpText, regexp.MustCompile(`(?m)^ +(\d+)  ((?:.|\n {7})*)`)},
		{"README.md", readmeText, regexp.MustCompile(`\*\*(\d+)\*\* ([^*]*)`)},
		{"docs/operator-guide.md", guideSection, regexp.MustCompile(`(?m)^\| (\d+) \| (.*)`)},
	}
	for _, d := range docs {
		described := map[int]string{}
		var got []int
		for _, m := range d.entry.FindAllStringSubmatch(d.text, -1) {
			n, _ := strconv.Atoi(m[1])
			got = append(got, n)
			described[n] = strings.Join(strings.Fields(m[2]), " ")
		}
		if !slices.Equal(got, codes) {
			t.Errorf("%s documents exit codes %v; the binary has %v", d.name, got, codes)
			continue
		}
		for _, c := range exitCodes {
			text := described[c.code]
			if !strings.HasPrefix(text, c.word) {
				t.Errorf("%s calls exit %d %q; exitcode.go calls it %q", d.name, c.code, clip(text, 60), c.word)
			}
			gate := strings.Contains(text, "validate") && strings.Contains(text, "gate")
			if (c.code == exitRefused || c.code == exitCannotTell) != gate {
				t.Errorf("%s: exit %d is described as the recovery gate's (kcleanup validate) = %v, want %v: %q",
					d.name, c.code, gate, !gate, text)
			}
			if strings.Contains(text, "does not fit") && c.code != exitError {
				t.Errorf("%s: exit %d is described as a request that does not fit (that is exit 1): %q", d.name, c.code, text)
			}
		}
	}
}

// TestBlankControlTopicIsAUsageErrorEverywhere: a blank --control-topic or --command-config, or
// KCLEANUP_CONTROL_TOPIC / KCLEANUP_COMMAND_CONFIG set but blank, is a usage error (exit 2) in
// every command, before anything is read or written. An unset variable in a pipeline
// (--control-topic "$CT") once made validate fall back to the default control topic and say
// ALLOWED under a boundary committed elsewhere (issue 20, items 1-2).
func TestBlankControlTopicIsAUsageErrorEverywhere(t *testing.T) {
	clearWorkerEnv(t)
	dir := t.TempDir()
	good := opTestMarkers(t, dir, "good.json", opMarker(events.Offsets{0: 40, 1: 30}))
	_, planFile := opTestPlan(t, dir, "chk-1", "action-state", opTestID, events.Offsets{0: 40, 1: 30})
	// Nothing listens on port 1: a command that got past the check would fail with exit 1.
	down := []string{"-b", "127.0.0.1:1", "--timeout", "2s"}
	commands := map[string][]string{
		"init":                {"init", "--topic", "t"},
		"doctor":              {"doctor", "--topic", "t"},
		"plan":                {"plan", "--markers", good, "--recovery-point", "c", "--out", filepath.Join(dir, "p.json")},
		"submit":              {"submit", planFile},
		"apply":               {"apply", planFile},
		"status":              {"status", "--topic", "t"},
		"history":             {"history", "--topic", "t"},
		"validate":            {"validate", "--markers", good},
		"worker":              {"worker", "--control-topics", "c"},
		"adopt":               {"adopt", "--from", "x"},
		"mirror attach":       {"mirror", "attach", "m", "--topic", "t"},
		"mirror sync":         {"mirror", "sync", "--topic", "t"},
		"pin":                 {"pin", "--markers", good, "--recovery-point", "sp", "--reason", "r"},
		"unpin":               {"unpin", "0123456789abcdef", "--topic", "t", "--reason", "r"},
		"tombstones":          {"tombstones", "declare-none", "--topic", "t", "--reason", "r"},
		"tombstones withdraw": {"tombstones", "withdraw", "--topic", "t", "--reason", "r"},
		"retention set":       {"retention", "set", "--topic", "t", "--watch", "/c", "--reason", "r"},
		"retention clear":     {"retention", "clear", "--topic", "t", "--reason", "r"},
		"retention show":      {"retention", "show", "--topic", "t"},
	}
	for name, args := range commands {
		for _, blank := range []struct{ flag, env string }{{flagControlTopic, envControlTopic}, {flagCommandConfig, envCommandConfig}} {
			for _, value := range []string{"", "  "} {
				t.Run(fmt.Sprintf("%s --%s %q", name, blank.flag, value), func(t *testing.T) {
					code, stdout, stderr := opRunWithStdin(t, "", append(append(slices.Clone(down), args...), "--"+blank.flag, value)...)
					if code != exitUsage || !strings.Contains(stderr, "--"+blank.flag+" is given but blank") || !strings.Contains(stderr, "Hint: ") ||
						strings.Contains(stdout, "ALLOWED") {
						t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitUsage, stdout, stderr)
					}
				})
				t.Run(fmt.Sprintf("%s %s=%q", name, blank.env, value), func(t *testing.T) {
					t.Setenv(blank.env, value)
					code, stdout, stderr := opRunWithStdin(t, "", append(slices.Clone(down), args...)...)
					if code != exitUsage || !strings.Contains(stderr, blank.env+" is set but blank") ||
						!strings.Contains(stderr, "unset "+blank.env) || strings.Contains(stdout, "ALLOWED") {
						t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitUsage, stdout, stderr)
					}
				})
			}
		}
	}
	// Every command that talks to Kafka has a row.
	for _, c := range newRootCmd().Commands() {
		switch c.Name() {
		case "version", "completion", "help", "demo", "markers": // markers reads a checkpoint, not Kafka
			continue
		case "mirror", "retention":
			continue // their subcommands are rows
		}
		if _, ok := commands[c.Name()]; !ok {
			t.Errorf("command %s has no row: add it", c.Name())
		}
	}
}
