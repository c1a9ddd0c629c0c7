package page

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/kcleanup/kcleanup/internal/consoletest"
	"github.com/kcleanup/kcleanup/report"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ (review them as a diff)")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./worker/console/ -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the page renders now; if the change is intended, run\n"+
			"  go test ./worker/console/ -run %s -update\nand review the diff. First difference at byte %d:\n%s",
			path, t.Name(), firstDiff(got, want), excerpt(got, firstDiff(got, want)))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func excerpt(b []byte, at int) string {
	from, to := max(at-200, 0), min(at+200, len(b))
	return string(b[from:to])
}

func TestConsolePageGolden(t *testing.T) {
	ws, now := consoletest.FleetStatus(t)
	page, err := HTML(FromWorker(ws, now), false)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "console.html", page)
	main, err := HTML(FromWorker(ws, now), true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, main) {
		t.Error("the content the page polls is not the content of the page")
	}
}

func TestReportGolden(t *testing.T) {
	recs, _, _ := consoletest.Story(t)
	proj := consoletest.Projection(recs)
	page, err := HTML(FromLog(report.StatusOf(proj), proj.View.State.Audit()), false)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report.html", page)
}
