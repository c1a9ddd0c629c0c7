package main

// Tests of issue 14: the command line is one consistent tool. Every command's bad input gets the
// same treatment (exit code, Error:, Hint:), help text fits the command it is on, and README
// agrees with the binary.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/worker/kafkatest/repo"
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
	if !strings.Contains(section, "`doctor --topic T`") || !strings.Contains(section, "kcleanup <command> --help") {
		t.Errorf("README does not show doctor --topic T or where command flags are documented")
	}
	if !strings.Contains(help, "kcleanup <command> --help") {
		t.Errorf("kcleanup --help does not say where each command's flags are documented:\n%s", help)
	}
}
