package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/kcleanup/kcleanup/gate"
	"github.com/kcleanup/kcleanup/internal/repo"
)

// TestVerdictExitCodeIsTheGatesClass: the CLI has no class→exit-code map of its own. validate
// exits with gate.Class.ExitCode for every class, and that code is the one the exit-code table
// (exitCodes, which TestExitCodesAgreeEverywhere ties to --help, README and the operator guide)
// names for the class. Before, verdictError sent Invalid to 4 ("cannot tell") while the gate
// said 2 ("usage").
func TestVerdictExitCodeIsTheGatesClass(t *testing.T) {
	word := map[int]string{}
	for _, c := range exitCodes {
		word[c.code] = c.word
	}
	for class, want := range map[gate.Class]string{
		gate.Allowed: "success", gate.Refused: "refused", gate.CannotTell: "cannot tell",
		gate.Invalid: "usage", "from-a-newer-build": "cannot tell",
	} {
		v := gate.Verdict{Class: class, Allowed: class == gate.Allowed, Message: "m"}
		got := exitCode(verdictError(v))
		if got != class.ExitCode() {
			t.Errorf("class %q: validate exits %d, the gate's map says %d", class, got, class.ExitCode())
		}
		if word[got] != want {
			t.Errorf("class %q: exit %d is %q in the exit-code table, want %q", class, got, word[got], want)
		}
	}
}

// TestGuideStatesTheGatesCodes: the operator guide's sentence on the gate's answers gives each
// class the exit code and HTTP status of gate's map.
func TestGuideStatesTheGatesCodes(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile(filepath.Join(root, "docs", "operator-guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	for class, name := range map[gate.Class]string{gate.Refused: "refused", gate.CannotTell: "cannot tell"} {
		m := regexp.MustCompile(`\*\*` + name + `\*\* \(exit (\d+), HTTP (\d+)`).FindSubmatch(guide)
		if m == nil {
			t.Errorf("docs/operator-guide.md: no \"**%s** (exit N, HTTP M\"", name)
			continue
		}
		exit, _ := strconv.Atoi(string(m[1]))
		status, _ := strconv.Atoi(string(m[2]))
		if exit != class.ExitCode() || status != class.HTTPStatus() {
			t.Errorf("docs/operator-guide.md says %s is exit %d, HTTP %d; gate says %d, %d", name, exit, status, class.ExitCode(), class.HTTPStatus())
		}
	}
}
