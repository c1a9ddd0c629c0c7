package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/checkpoint"
	"github.com/kcleanup/kcleanup/checkpoint/store"
)

// B9's subjects (goals.go reads them).
const (
	b9Process  = "kcleanup markers --checkpoint -o json (whole process)"
	b9Library  = "checkpoint/store.Open + checkpoint.Read (library, in process)"
	b9PeerRead = "Flink State Processor API readUnionState (read only, in its JVM)"
	b9PeerProc = "Flink State Processor API readUnionState (whole process, JVM start included)"
)

// b9Checkpoint is what internal/flinkgen/generate.sh b9 writes beside the checkpoint.
type b9Checkpoint struct {
	Path          string `json:"path"` // relative to the directory holding b9.json
	UID           string `json:"uid"`
	Parallelism   int    `json:"parallelism"`
	Operators     int    `json:"keyedOperators"`
	MetadataBytes int64  `json:"metadataBytes"`
}

// checkpointRead is B9: the markers out of a retained checkpoint of 100 RocksDB-incremental
// keyed operators at parallelism 128 (internal/flinkgen makes it, cached), read by kcleanup
// and by Flink's State Processor API, run after run, in this one run.
func (b *bencher) checkpointRead(ctx context.Context) error {
	script := filepath.Join(b.cfg.root, "internal", "flinkgen", "generate.sh")
	b.logf("B9 checkpoint: generate.sh b9 (about a minute the first time; cached)")
	gen, err := run(ctx, nil, script, "b9")
	if err != nil {
		return errors.Wrap(err, "generate B9's checkpoint")
	}
	lines := strings.Split(strings.TrimSpace(string(gen.Stdout)), "\n")
	dir := strings.TrimSpace(lines[len(lines)-1])
	data, err := os.ReadFile(filepath.Join(dir, "b9.json"))
	if err != nil {
		return errors.Wrap(err, "generate.sh b9 printed no directory holding b9.json")
	}
	var cp b9Checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return errors.Wrapf(err, "%s/b9.json", dir)
	}
	path := filepath.Join(dir, cp.Path)
	c := fmt.Sprintf("%d keyed operators × p%d, %.1f MB _metadata", cp.Operators, cp.Parallelism, float64(cp.MetadataBytes)/(1<<20))
	peer := func(ctx context.Context) (measured, float64, error) {
		m, err := run(ctx, nil, script, "peer-read", path, cp.UID, "1")
		if err != nil {
			return m, 0, err
		}
		var line struct {
			WallMs   float64 `json:"wallMs"`
			Elements int     `json:"elements"`
		}
		if err := json.Unmarshal(bytes.TrimSpace(m.Stdout), &line); err != nil || line.Elements == 0 {
			return m, 0, errors.Newf("peer-read printed %q: expected one JSON line with wallMs and elements > 0", tail(m.Stdout, 300))
		}
		return m, line.WallMs / 1000, nil
	}
	b.logf("B9 checkpoint: %s, %d runs", c, b.cfg.runs)
	rows, err := b9Rows(ctx, b.cfg.kcleanup, path, cp.UID, c, b.cfg.runs, peer)
	if err != nil {
		return err
	}
	b.add(rows...)
	b.note("B9: the checkpoint is made the cheaper honest way a 2-core machine allows (docs/benchmarks.md): 100 keyed operators run at 8 subtasks and are rescaled to 128 with Flink's key-group intersection, the metadata written by Flink's serializer; the marker operator runs at 128. The peer runs at nice 10 (generate.sh runs every JVM so); its first read includes its local cluster's start, as one run of the seed's tool does")
	return nil
}

// b9Rows measures kcleanup's read of the checkpoint at path, as a process (the binary
// kcleanup) and as the library in a child process, against peer (nil: no peer rows), one
// after the other in each run so that each ratio pairs neighbours.
func b9Rows(ctx context.Context, kcleanup, path, uid, c string, runs int,
	peer func(context.Context) (measured, float64, error)) ([]Row, error) {
	meta, err := os.Stat(filepath.Join(path, checkpoint.MetadataFile))
	if err != nil {
		return nil, errors.Wrap(err, "B9's checkpoint")
	}
	metaMB := float64(meta.Size()) / (1 << 20)
	var procRuns, libRuns, peerRuns, peerProcRuns []float64
	var procRSS, libRSS, peerRSS float64
	for r := 0; r < runs; r++ {
		m, err := run(ctx, nil, kcleanup, "markers", "--checkpoint", path, "--operator-uid", uid, "-o", "json")
		if err != nil {
			return nil, err
		}
		if !json.Valid(m.Stdout) || !bytes.Contains(m.Stdout, []byte(`"offsets"`)) {
			return nil, errors.Newf("kcleanup markers -o json printed no markers: %s", tail(m.Stdout, 300))
		}
		procRuns, procRSS = append(procRuns, m.Wall.Seconds()), max(procRSS, m.MaxRSSMB)
		lm, res, err := runChild(ctx, "checkpoint", "-path", path, "-uid", uid)
		if err != nil {
			return nil, err
		}
		libRuns, libRSS = append(libRuns, res["seconds"]), max(libRSS, lm.MaxRSSMB)
		if peer != nil {
			pm, read, err := peer(ctx)
			if err != nil {
				return nil, errors.Wrap(err, "the State Processor API's read (generate.sh peer-read)")
			}
			peerRuns, peerProcRuns, peerRSS = append(peerRuns, read), append(peerProcRuns, pm.Wall.Seconds()), max(peerRSS, pm.MaxRSSMB)
		}
	}
	row := func(subject string, runs []float64, rss float64) Row {
		r := Row{Bench: "B9 checkpoint", Case: c, Subject: subject, PeakRSSMB: rss, RateUnit: "MB/s of _metadata",
			Extra: map[string]float64{"metadataMB": metaMB, "rssPerMetadata": rss / metaMB}}
		r.setRuns(runs)
		if r.Median > 0 {
			r.Rate = metaMB / r.Median
		}
		if peerRuns != nil && !strings.HasPrefix(subject, "Flink") {
			r.Ratios = []Ratio{{"State Processor API read", pairedRatio(runs, peerRuns)}, {"State Processor API process", pairedRatio(runs, peerProcRuns)}}
		}
		r.Note = fmt.Sprintf("peak RSS %.2f× the %.1f MB _metadata", rss/metaMB, metaMB)
		return r
	}
	rows := []Row{row(b9Process, procRuns, procRSS), row(b9Library, libRuns, libRSS)}
	if peer != nil {
		rows = append(rows, row(b9PeerRead, peerRuns, peerRSS), row(b9PeerProc, peerProcRuns, peerRSS))
	}
	return rows, nil
}

// childCheckpoint is B9's library subject: what kcleanup markers does before it prints.
func childCheckpoint(ctx context.Context, path, uid string) (childResult, error) {
	began := time.Now()
	st, _, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		return nil, err
	}
	cp, err := checkpoint.Read(ctx, st, checkpoint.Selector{OperatorUID: uid})
	if err != nil {
		return nil, err
	}
	secs := time.Since(began).Seconds()
	return childResult{"seconds": secs, "subtasks": float64(len(cp.Selected.Subtasks)), "operators": float64(cp.Operators)}, nil
}
