package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the test binary serve as kcbench's child (runChild starts
// os.Executable with "child"), so B9's library row runs in its own process here too.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		if err := runChildMode(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "kcbench child: %+v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// B9's rows on a small real checkpoint (Flink 1.20, RocksDB, parallelism 2, from the generator's
// testdata): the kcleanup binary as a process and the library in a child, each with a
// median, a rate of _metadata and a peak RSS; no peer here (its JVM takes 20 s).
func TestCheckpointRowsOnASmallCheckpoint(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "kcleanup")
	build := exec.Command("go", "build", "-o", bin, "./cmd/kcleanup")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build kcleanup: %v\n%s", err, out)
	}
	path := filepath.Join(root, "checkpoint", "testdata", "flinkgen", "flink-1.20_rocksdb_savepoint-canonical_p2-compressed")
	rows, err := b9Rows(context.Background(), bin, path, "action-state-markers", "small", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Subject != b9Process || rows[1].Subject != b9Library {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		if len(r.Runs) != 2 || r.Median <= 0 || r.Rate <= 0 || r.PeakRSSMB <= 0 || r.Extra["metadataMB"] <= 0 || len(r.Ratios) != 0 {
			t.Errorf("row %+v", r)
		}
	}
	rep := &Report{Rows: rows}
	for _, g := range rep.goals() {
		if g.Bench == "B9 checkpoint" && strings.Contains(g.Goal, "MB/s") && !strings.Contains(g.Measured, "MB/s") {
			t.Errorf("goal %+v", g)
		}
	}
	// A checkpoint without the operator fails the row, naming kcleanup's error.
	if _, err := b9Rows(context.Background(), bin, path, "no-such-uid", "small", 1, nil); err == nil || !strings.Contains(err.Error(), "no-such-uid") {
		t.Errorf("unknown uid: %v", err)
	}
}
