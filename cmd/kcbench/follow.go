package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/checkpoint/store"
	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/flinkgentest"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/worker"
)

// B10's subjects, in the order a run measures them (rotated from run to run).
const (
	b10FloorStat = "floor: os.ReadDir + os.Stat of each _metadata"
	b10FloorRead = "floor: os.ReadDir + os.ReadFile of each _metadata"
	b10Cold      = "worker.Follower.Round, cold (every _metadata read)"
	b10Warm      = "worker.Follower.Round, warm (every _metadata skipped by path, size, mtime)"
)

var b10Subjects = []string{b10FloorStat, b10FloorRead, b10Cold, b10Warm}

// smallestEvery is the shortest --every a retention policy takes (issue 32: at least a second):
// a round that takes longer than it cannot keep that pace.
const smallestEvery = time.Second

// follow is B10: one round of a retention policy over a checkpoint base directory of
// followPoints completed checkpoints (issue 32 item 5), cold and warm, against the floor of the
// same walk with the standard library alone, in a child; no broker.
func (b *bencher) follow(ctx context.Context) error {
	dir := os.Getenv(flinkgentest.Env)
	if dir == "" {
		script := filepath.Join(b.cfg.root, "internal", "flinkgen", "generate.sh")
		b.logf("B10 follow: generate.sh (the Flink checkpoints of the tests; cached)")
		gen, err := run(ctx, nil, script)
		if err != nil {
			return errors.Wrap(err, "generate the Flink checkpoints (internal/flinkgen/generate.sh)")
		}
		lines := strings.Split(strings.TrimSpace(string(gen.Stdout)), "\n")
		dir = strings.TrimSpace(lines[len(lines)-1])
	}
	cases, err := flinkgentest.Load(dir)
	if err != nil {
		return errors.WithHint(err, "set "+flinkgentest.Env+" to the output of internal/flinkgen/generate.sh, or unset it to let kcbench run it")
	}
	meta, err := flinkgentest.FollowMetadata(cases)
	if err != nil {
		return err
	}
	n := b.cfg.followPoints
	base := filepath.Join(b.tmp, "follow")
	b.logf("B10 follow: laying out %d checkpoints of a %d-byte _metadata", n, len(meta))
	if err := flinkgentest.LayOutCheckpoints(base, n, meta); err != nil {
		return err
	}
	defer os.RemoveAll(base)
	b.logf("B10 follow: %d runs", b.cfg.runs)
	m, res, err := runChild(ctx, "follow", "-path", base, "-points", strconv.Itoa(n), "-runs", strconv.Itoa(b.cfg.runs))
	if err != nil {
		return err
	}
	b.add(followRows(res, n, len(meta), m.MaxRSSMB)...)
	b.note("B10: the files are in the page cache for every subject (the floor reads them first in the first run); cold and warm say whether the Follower's own cache of points read is empty or full. On S3 a listing page holds 1,000 keys and the warm round's stat is a HEAD per point")
	return nil
}

// followRows are B10's rows from the child's runs: each round's ratio to its floor and to the
// smallest --every.
func followRows(res childResult, n, metaBytes int, rssMB float64) []Row {
	c := fmt.Sprintf("%d checkpoints of one job, %d-byte _metadata each", n, metaBytes)
	runs := map[string][]float64{}
	for i, s := range b10Subjects {
		runs[s] = runsOf(res, fmt.Sprintf("s%d", i))
	}
	row := func(subject string, ratios ...Ratio) Row {
		r := Row{Bench: "B10 follow", Case: c, Subject: subject, RateUnit: "points/s", Ratios: ratios}
		r.setRuns(runs[subject])
		if r.Median > 0 {
			r.Rate = float64(n) / r.Median
		}
		return r
	}
	perEvery := func(subject string) Ratio {
		var xs []float64
		for _, s := range runs[subject] {
			xs = append(xs, s/smallestEvery.Seconds())
		}
		return Ratio{"--every 1s", median(xs)}
	}
	cold := row(b10Cold, Ratio{"read floor", pairedRatio(runs[b10Cold], runs[b10FloorRead])}, perEvery(b10Cold))
	cold.PeakRSSMB = rssMB
	cold.Extra = map[string]float64{"metadataReads": res["coldReads"]}
	cold.Note = fmt.Sprintf("%.0f _metadata read per round; ", res["coldReads"]) + withinEvery(cold.Median)
	warm := row(b10Warm, Ratio{"stat floor", pairedRatio(runs[b10Warm], runs[b10FloorStat])}, perEvery(b10Warm),
		Ratio{"cold round", pairedRatio(runs[b10Warm], runs[b10Cold])})
	warm.Extra = map[string]float64{"metadataReads": res["warmReads"], "skipped": res["warmHits"]}
	warm.Note = fmt.Sprintf("%.0f _metadata read, %.0f skipped per round; ", res["warmReads"], res["warmHits"]) + withinEvery(warm.Median)
	return []Row{row(b10FloorStat), row(b10FloorRead), cold, warm}
}

// withinEvery says how a round's median compares with the smallest --every.
func withinEvery(median float64) string {
	if median <= smallestEvery.Seconds() {
		return "within one round at the smallest --every (1s)"
	}
	return fmt.Sprintf("longer than the smallest --every (1s): at --every 1s the next round starts %.1fs late", median-smallestEvery.Seconds())
}

// childFollow measures B10's subjects over the checkpoints under base, runs times each, in an
// order that rotates from run to run. The warm Follower is filled once before the runs.
func childFollow(ctx context.Context, base string, points, runs int) (childResult, error) {
	if base == "" || points <= 0 || runs <= 0 {
		return nil, errors.New("follow: -path, -points and -runs must be given")
	}
	opts := store.Options{Confined: true, Roots: store.Roots{{Scheme: "file", Path: base}}}
	p := projector.Policy{Retention: events.Retention{Watch: []string{base}, Every: smallestEvery}}
	round := func(f *worker.Follower) error {
		got := f.Round(ctx, p)
		if len(got) != 1 || got[0].Err != "" || got[0].Outside || len(got[0].Points) != points {
			return errors.Newf("follow: a round found %d locations, want one of %d points: %+v", len(got), points, got)
		}
		for _, pt := range got[0].Points {
			if pt.Err != "" || len(pt.Markers) == 0 {
				return errors.Newf("follow: point %s: no markers read (%s)", pt.Path, pt.Err)
			}
		}
		return nil
	}
	job := filepath.Join(base, flinkgentest.JobID)
	floor := func(each func(string) error) error {
		entries, err := os.ReadDir(job)
		if err != nil {
			return err
		}
		if len(entries) != points {
			return errors.Newf("follow: %d directories under %s, want %d", len(entries), job, points)
		}
		for _, e := range entries {
			if err := each(filepath.Join(job, e.Name(), store.MetadataName)); err != nil {
				return err
			}
		}
		return nil
	}
	warm := &worker.Follower{Store: opts}
	if err := round(warm); err != nil {
		return nil, err
	}
	res := childResult{}
	subjects := []func() error{
		func() error { return floor(func(p string) error { _, err := os.Stat(p); return err }) },
		func() error { return floor(func(p string) error { _, err := os.ReadFile(p); return err }) },
		func() error {
			f := &worker.Follower{Store: opts}
			err := round(f)
			res["coldReads"] = float64(f.Reads)
			return err
		},
		func() error {
			reads, hits := warm.Reads, warm.Hits
			err := round(warm)
			res["warmReads"], res["warmHits"] = float64(warm.Reads-reads), float64(warm.Hits-hits)
			return err
		},
	}
	for r := 0; r < runs; r++ {
		for k := range subjects {
			i := (k + r) % len(subjects)
			began := time.Now()
			if err := subjects[i](); err != nil {
				return nil, err
			}
			res[fmt.Sprintf("s%d.%d", i, r)] = time.Since(began).Seconds()
		}
	}
	return res, nil
}
