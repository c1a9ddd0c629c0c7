package main

import (
	"regexp"
	"strings"
	"testing"
)

// history -o html writes the audit report: one self-contained file, the
// same bytes from the same log (real broker).
func TestHistoryHTMLIsTheSameReportFromTheSameLog(t *testing.T) {
	e := newReadEnv(t, true)
	code, first, stderr := e.run(t, "history", "--topic", e.topic, "-o", "html")
	wantExit(t, code, exitOK, first, stderr)
	code, second, stderr := e.run(t, "--output", "html", "history", "--control-topic", e.control)
	wantExit(t, code, exitOK, second, stderr)
	if first != second {
		t.Fatal("two reports of the same log differ")
	}
	for _, want := range []string{"<!DOCTYPE html>", "kcleanup audit report: " + e.control, e.plan.PlanID[:12],
		"offsets 0=150 1=120", "APPLIED", "Every record"} {
		if !strings.Contains(first, want) {
			t.Errorf("the report has no %q", want)
		}
	}
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*"?(https?:)?//`).FindString(first); m != "" {
		t.Errorf("the report refers to something outside the file: %q", m)
	}
	if strings.Contains(first, "<script") {
		t.Error("the report has a script: it must read the same with scripts off")
	}
}

func TestHTMLOutputIsOnlyForHistory(t *testing.T) {
	clearEnv(t)
	code, stdout, stderr := runCLI(t, "-b", "127.0.0.1:1", "status", "--topic", "t", "-o", "html")
	wantExit(t, code, exitUsage, stdout, stderr)
	if !strings.Contains(stderr, "only history writes html") || !strings.Contains(stderr, "Hint:") {
		t.Errorf("status -o html: %s", stderr)
	}
	code, stdout, stderr = runCLI(t, "-b", "127.0.0.1:1", "history", "--topic", "t", "--plan", "ab", "-o", "html")
	wantExit(t, code, exitUsage, stdout, stderr)
	if !strings.Contains(stderr, "covers the whole history") {
		t.Errorf("history --plan -o html: %s", stderr)
	}
}
