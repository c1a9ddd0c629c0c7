package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/flinkgentest"
	"github.com/kcleanup/kcleanup/projector"
)

// The generator must write what the projector accepts, record by record:
// otherwise B1 and B5 would measure the rejection path.
func TestControlLogIsAcceptedByTheProjector(t *testing.T) {
	const n = 4*50 + 2 // ends inside an operation
	recs := newControlLog("action-state", benchTopicID, 3).Records(n)
	s := projector.New()
	for _, r := range recs {
		if v := s.Step(r); v.Outcome != projector.Accepted {
			t.Fatalf("record %d (%s): %s %s: %s", r.Offset, r.Key, v.Outcome, v.Reason, v.Detail)
		}
	}
	ops := s.Operations()
	if len(ops) != 51 {
		t.Fatalf("%d operations, want 51", len(ops))
	}
	for _, op := range ops[:50] {
		if op.State != fsm.Applied {
			t.Fatalf("operation %s is %s, want APPLIED", op.PlanID, op.State)
		}
	}
	if got := ops[50].State; got != fsm.Committed {
		t.Fatalf("last operation is %s, want COMMITTED", got)
	}
	if s.Next() != n {
		t.Fatalf("Next = %d, want %d", s.Next(), n)
	}
	// The boundary is the last committed plan on every partition.
	want := ops[50].Plan.Offsets
	if got := s.Boundary(); !got.Equal(want) {
		t.Fatalf("boundary %v, want %v", got, want)
	}
	if topic, id, ok := s.Binding(); !ok || topic != "action-state" || id != benchTopicID {
		t.Fatalf("binding %q %q %v", topic, id, ok)
	}
}

// Records and Next produce the same stream: B5 folds Records, B1 produces
// Next, and both claim to be the same log.
func TestControlLogRecordsMatchNext(t *testing.T) {
	recs := newControlLog("t", benchTopicID, 2).Records(9)
	g := newControlLog("t", benchTopicID, 2)
	for i, r := range recs {
		k, v := g.Next()
		if r.Offset != int64(i) || !bytes.Equal(r.Key, k) || !bytes.Equal(r.Value, v) {
			t.Fatalf("record %d differs: %s vs %s", i, r.Key, k)
		}
	}
}

func TestBenchMarkersBuildAPlan(t *testing.T) {
	ms := benchMarkers(7, 5)
	plan, err := events.BuildPlan("chk", ms)
	if err != nil {
		t.Fatal(err)
	}
	for p, off := range plan.Offsets {
		lowest := ms[0].Offsets[p]
		for _, m := range ms {
			lowest = min(lowest, m.Offsets[p])
		}
		if off != lowest {
			t.Fatalf("partition %d: plan %d, minimum %d", p, off, lowest)
		}
	}
}

func TestMedianWorstAndPairedRatio(t *testing.T) {
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Fatalf("median odd = %v", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Fatalf("median even = %v", got)
	}
	if median(nil) != 0 || worst(nil) != 0 {
		t.Fatal("empty series must give 0")
	}
	if got := worst([]float64{1, 5, 2}); got != 5 {
		t.Fatalf("worst = %v", got)
	}
	// Paired: run 2 was slow for both, which the ratio cancels out.
	if got := pairedRatio([]float64{2, 20, 4}, []float64{1, 10, 2}); got != 2 {
		t.Fatalf("paired ratio = %v", got)
	}
	if got := pairedRatio([]float64{1, 2}, []float64{0, 1}); got != 2 {
		t.Fatalf("paired ratio skipping a zero = %v", got)
	}
}

func TestFitLine(t *testing.T) {
	l, ok := fitLine([]float64{100, 1000, 10000}, []float64{0.5 + 100e-5, 0.5 + 1000e-5, 0.5 + 10000e-5})
	if !ok || math.Abs(l.Fixed-0.5) > 1e-9 || math.Abs(l.Slope-1e-5) > 1e-12 || l.R2 < 0.999999 {
		t.Fatalf("fit %+v ok %v", l, ok)
	}
	if _, ok := fitLine([]float64{1, 1}, []float64{2, 3}); ok {
		t.Fatal("a fit needs two distinct xs")
	}
	if _, ok := fitLine([]float64{1}, []float64{2}); ok {
		t.Fatal("a fit needs two points")
	}
}

func TestFormatters(t *testing.T) {
	for s, want := range map[float64]string{0: "", 123: "123s", 1.234: "1.23s", 0.0123: "12.3ms", 12.3e-6: "12.3µs", 5e-9: "5ns"} {
		if got := formatSeconds(s); got != want {
			t.Errorf("formatSeconds(%v) = %q, want %q", s, got, want)
		}
	}
	for x, want := range map[float64]string{12: "12", 1234: "1.2k", 123456: "123k", 2.5e6: "2.50M"} {
		if got := formatCount(x); got != want {
			t.Errorf("formatCount(%v) = %q, want %q", x, got, want)
		}
	}
	if got := formatBytes(1536); got != "1.5 KiB" {
		t.Errorf("formatBytes = %q", got)
	}
	if got := formatShares(map[string]float64{"a": 0.25, "b": 0.5, "c": 0.25}); got != "b 50%, a 25%, c 25%" {
		t.Errorf("formatShares = %q", got)
	}
}

func sampleReport() *Report {
	rep := &Report{Version: reportVersion, Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Mode: "quick",
		Machine: Machine{CPUs: 2, CPUModel: "AMD EPYC", MemoryMB: 24105, Go: "go1.26", Kafka: "4.1.1", Broker: "127.0.0.1:9092"}}
	floor := Row{Bench: "B1 replay", Case: "1000 records", Subject: "floor", PeakRSSMB: 20, Rate: 1e6, RateUnit: "records/s"}
	floor.setRuns([]float64{0.001, 0.003, 0.002})
	lib := Row{Bench: "B1 replay", Case: "1000 records", Subject: "library",
		Ratios: []Ratio{{"floor", 1.5}, {"tool", 0.25}}, Note: "holds 3 MB"}
	lib.setRuns([]float64{0.003, 0.0045, 0.003})
	rep.Rows = []Row{floor, lib}
	rep.Fits = []Fit{{Bench: "B2 apply", Subject: "floor", X: "partition", Unit: "s", Line: Line{Fixed: 0.1, Slope: 2e-6, R2: 0.99}},
		{Bench: "B5 growth", Subject: "heap", X: "record", Unit: "B", Line: Line{Fixed: 1 << 20, Slope: 270, R2: 1}}}
	rep.Notes = []string{"a note"}
	rep.Failures = []string{"B3: no workers"}
	return rep
}

func TestWriteTable(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleReport().WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	header := lines[0]
	for _, col := range []string{"bench", "case", "subject", "median", "worst", "n", "rate", "peak RSS", "ratio", "note"} {
		if !strings.Contains(header, col) {
			t.Errorf("header lacks %q: %s", col, header)
		}
	}
	// Columns are aligned: every row's median starts where the header's does.
	col := strings.Index(header, "median")
	for _, l := range lines[1:3] {
		if len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("misaligned row %q (median column at %d)", l, col)
		}
	}
	for _, want := range []string{
		"2.0ms", "3.0ms", // floor median and worst
		"1.00M records/s", "20 MB",
		"1.50× floor; 0.25× tool", "holds 3 MB",
		"fit B2 apply floor: 100.0ms + 2.0µs per partition (R² 0.990)",
		"fit B5 growth heap: 1.0 MiB + 270 B per record (R² 1.000)",
		"note: a note", "FAILED: B3: no workers",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteJSONRoundTrips(t *testing.T) {
	dir := t.TempDir()
	rep := sampleReport()
	path, err := rep.WriteJSON(filepath.Join(dir, "bench-results"))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "20260102T030405Z.json" {
		t.Fatalf("path %s", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Version != reportVersion || len(back.Rows) != 2 || back.Rows[1].Median != 0.003 ||
		back.Rows[1].Ratios[0] != (Ratio{"floor", 1.5}) || back.Fits[0].Line.Slope != 2e-6 {
		t.Fatalf("round trip lost figures: %+v", back)
	}
}

func TestChildResultLines(t *testing.T) {
	res, err := lastJSONLine([]byte("starting\n{\"seconds\":1}\nnoise\n{\"seconds.0\":2,\"seconds.1\":3,\"x\":4}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := runsOf(res, "seconds"); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("runs %v", got)
	}
	if _, err := lastJSONLine([]byte("no result\n")); err == nil {
		t.Fatal("a child without a result line must be an error")
	}
}

func TestOwnedPartitions(t *testing.T) {
	metrics := "# HELP kcleanup_owned_partitions Control partitions this replica owns.\n" +
		"# TYPE kcleanup_owned_partitions gauge\nkcleanup_owned_partitions 1\nkcleanup_takeovers_total 3\n"
	if got := ownedPartitions(strings.NewReader(metrics)); got != 1 {
		t.Fatalf("owned = %d", got)
	}
	if got := ownedPartitions(strings.NewReader("kcleanup_takeovers_total 3\n")); got != -1 {
		t.Fatalf("absent gauge = %d", got)
	}
}

func TestCheckStatusAndApplied(t *testing.T) {
	ok := `{"readTo":8,"degraded":false,"operations":[{"state":"APPLIED"},{"state":"APPLIED"}],"rejected":[]}`
	if err := checkStatus([]byte(ok), 8); err != nil {
		t.Fatal(err)
	}
	if err := checkStatus([]byte(ok), 12); err == nil {
		t.Fatal("a status that read less than the topic must fail")
	}
	if err := checkApplied([]byte(`{"state":"APPLIED"}`)); err != nil {
		t.Fatal(err)
	}
	if err := checkApplied([]byte(`{"state":"COMMITTED"}`)); err == nil {
		t.Fatal("COMMITTED is not APPLIED")
	}
}

// The in-process children run without a broker; a tiny growth and plan run
// checks they produce every figure the report reads.
func TestInProcessChildren(t *testing.T) {
	// Sample every allocation, so that a tiny fold still shows in the profile.
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1
	res, err := childGrowth(400, 2, filepath.Join(t.TempDir(), "heap.pprof"), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(runsOf(res, "seconds")) != 2 || res["retainedMB"] <= 0 || len(heapShares(res)) == 0 {
		t.Fatalf("growth result %v", res)
	}
	res, err = childPlan(5, 50, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(runsOf(res, "seconds")) != 2 || res["allocs"] <= 0 {
		t.Fatalf("plan result %v", res)
	}
}

// TestFollowChildMeasuresEachRound: B10's child over a few real checkpoints measures every
// subject each run, the cold round reads every _metadata and the warm one none (else the rows
// would measure another round than they name), and the rows carry their floors' ratios.
func TestFollowChildMeasuresEachRound(t *testing.T) {
	meta, err := flinkgentest.FollowMetadata(flinkgentest.Cases(t))
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	const points, runs = 5, 3
	if err := flinkgentest.LayOutCheckpoints(base, points, meta); err != nil {
		t.Fatal(err)
	}
	res, err := childFollow(t.Context(), base, points, runs)
	if err != nil {
		t.Fatal(err)
	}
	if res["coldReads"] != points || res["warmReads"] != 0 || res["warmHits"] != points {
		t.Fatalf("cold read %v, warm read %v and skipped %v; want %d, 0, %d", res["coldReads"], res["warmReads"], res["warmHits"], points, points)
	}
	rows := followRows(res, points, len(meta), 1)
	if len(rows) != len(b10Subjects) {
		t.Fatalf("%d rows, want %d", len(rows), len(b10Subjects))
	}
	for _, r := range rows {
		if len(r.Runs) != runs || r.Median <= 0 {
			t.Errorf("%s: %d runs, median %v", r.Subject, len(r.Runs), r.Median)
		}
		if strings.HasPrefix(r.Subject, "worker.") && (len(r.Ratios) < 2 || r.Ratios[0].Value <= 0 || r.Ratios[1].To != "--every 1s") {
			t.Errorf("%s: ratios %+v, want its floor's and --every's", r.Subject, r.Ratios)
		}
	}
	// A layout the child was not told of is an error, not a row.
	if _, err := childFollow(t.Context(), base, points+1, 1); err == nil {
		t.Error("a round that found fewer points than laid out was measured")
	}
}
