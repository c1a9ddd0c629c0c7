package deploy

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/internal/repo"
)

// requireTool returns the path of a tool the Makefile installs (make buildah, make promtool).
// Outside CI a missing tool skips the test with the command that installs it; under CI (CI=true,
// where make test installs it first) a missing tool fails it: a check CI cannot run must not
// pass unseen.
func requireTool(t *testing.T, name, target string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed: make test installs it (make %s); CI must run this test", name, target)
	}
	t.Skipf("%s is not installed: run make %s (make test does)", name, target)
	return ""
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// cleanEnv is the environment without the variables of an enclosing make (its jobserver), so
// that a make run by a test under `make test` is a make of its own.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" {
			env = append(env, kv)
		}
	}
	return env
}
