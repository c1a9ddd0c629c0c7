package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/internal/repo"
)

func TestVersionFrom(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/kcleanup/kcleanup", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"},
			{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	for _, tc := range []struct {
		name   string
		linked string
		bi     *debug.BuildInfo
		ok     bool
		want   versionInfo
	}{
		{"build info", "", bi, true, versionInfo{"v0.3.0", "go1.26.0", "abc123", "2026-01-02T03:04:05Z", true}},
		{"link-time version wins", "v9.9.9", bi, true, versionInfo{"v9.9.9", "go1.26.0", "abc123", "2026-01-02T03:04:05Z", true}},
		{"development build", "", &debug.BuildInfo{GoVersion: "go1.26.0"}, true, versionInfo{Version: "(devel)", GoVersion: "go1.26.0"}},
		{"no build info", "", nil, false, versionInfo{Version: "unknown"}},
	} {
		if got := versionFrom(tc.linked, tc.bi, tc.ok); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestPrintVersion(t *testing.T) {
	v := versionInfo{"v0.3.0", "go1.26.0", "abc123", "2026-01-02T03:04:05Z", true}
	var table, js bytes.Buffer
	if err := printVersion(&table, outputTable, v); err != nil {
		t.Fatal(err)
	}
	wantTable := "version      v0.3.0\ngo           go1.26.0\ncommit       abc123 (modified)\ncommit time  2026-01-02T03:04:05Z\n"
	if table.String() != wantTable {
		t.Errorf("table:\n%q\nwant\n%q", table.String(), wantTable)
	}
	if err := printVersion(&js, outputJSON, v); err != nil {
		t.Fatal(err)
	}
	wantJSON := `{
  "schemaVersion": 1,
  "version": "v0.3.0",
  "goVersion": "go1.26.0",
  "commit": "abc123",
  "commitTime": "2026-01-02T03:04:05Z",
  "modified": true
}
`
	if js.String() != wantJSON {
		t.Errorf("json:\n%s\nwant\n%s", js.String(), wantJSON)
	}
}

// TestMakeBuildNamesTheCommit builds the binary the way a developer does (make build) and checks
// that both `kcleanup --version` and `kcleanup version` name the commit it was built from, even
// with -buildvcs=false (issue 14 row 8).
func TestMakeBuildNamesTheCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary with make (-short skips it)")
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	commit := strings.TrimSpace(string(head))
	bin := filepath.Join(t.TempDir(), "kcleanup")
	mk := exec.Command("make", "-s", "-C", root, "build", "BIN="+bin)
	mk.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil || !strings.Contains(string(out), commit) || strings.Contains(string(out), "(devel)") {
			t.Errorf("kcleanup %s: %v\n%s\nwant the commit %s", args[0], err, out, commit)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	clearEnv(t)
	code, stdout, stderr := runCLI(t, "--version")
	if code != exitOK || stderr != "" || !strings.HasPrefix(stdout, "kcleanup ") || strings.Count(stdout, "\n") != 1 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if want := currentVersion().oneLine() + "\n"; stdout != want {
		t.Errorf("--version printed %q, want %q", stdout, want)
	}
}

func TestVersionOneLine(t *testing.T) {
	v := versionInfo{"v0.3.0", "go1.26.0", "abc123", "2026-01-02T03:04:05Z", true}
	if got, want := v.oneLine(), "kcleanup v0.3.0 (commit abc123 (modified), go1.26.0)"; got != want {
		t.Errorf("oneLine() = %q, want %q", got, want)
	}
	if got, want := (versionInfo{Version: "unknown"}).oneLine(), "kcleanup unknown"; got != want {
		t.Errorf("oneLine() = %q, want %q", got, want)
	}
}
