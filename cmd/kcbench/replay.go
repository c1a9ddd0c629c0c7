package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/worker"
)

// replay is B1: how long kcleanup takes to project a long control topic from
// scratch and reach its end, as `kcleanup status` (a whole process) and as
// the library (worker.Cluster.Project), next to a bare franz-go consumer
// reading the same topic to its end in the same run.
func (b *bencher) replay(ctx context.Context) error {
	n := b.cfg.replayRecords
	data := b.topic("replay")
	control := b.topic("replay.kcleanup")
	// The data topic must exist only so that the plans carry a real topic
	// ID; status never reads it.
	topicID, err := createTopic(ctx, b.cl, data, int(b.cfg.replayPlanParts), b.dataTopicConfigs())
	if err != nil {
		return err
	}
	if _, err := createTopic(ctx, b.cl, control, 1, worker.ControlTopicConfigs(b.replication())); err != nil {
		return err
	}
	b.logf("B1 replay: producing %d control records (%d operations) to %s", n, n/4, control)
	took, err := produceControlLog(ctx, b.cfg.bootstrap, control, newControlLog(data, topicID, b.cfg.replayPlanParts), n)
	if err != nil {
		return err
	}
	b.note("B1 input: %d records (%d operations over %d partitions each) written in %s by a batching lz4 producer (%s records/s)",
		n, n/4, b.cfg.replayPlanParts, took.Round(time.Millisecond), formatCount(float64(n)/took.Seconds()))

	hasStatus := b.hasCommand(ctx, "status")
	if !hasStatus {
		b.note("B1: %s has no status command; only the library was measured", b.cfg.kcleanup)
	}
	var floorIn, floorProc, libIn, libProc, statusProc []float64
	var floorRSS, libRSS, statusRSS, libHeap, statusOut float64
	subjects := []func() error{
		func() error { // the floor
			m, res, err := runChild(ctx, "read", "-bootstrap", b.cfg.bootstrap, "-topic", control)
			if err != nil {
				return err
			}
			if int(res["records"]) != n {
				return errors.Newf("floor read %v records, want %d", res["records"], n)
			}
			floorIn, floorProc = append(floorIn, res["seconds"]), append(floorProc, m.Wall.Seconds())
			floorRSS = max(floorRSS, m.MaxRSSMB)
			return nil
		},
		func() error { // the library
			m, res, err := runChild(ctx, "project", "-bootstrap", b.cfg.bootstrap, "-topic", control)
			if err != nil {
				return err
			}
			if int(res["records"]) != n || int(res["operations"]) != n/4 || res["rejected"] != 0 {
				return errors.Newf("projection read %v records, %v operations, %v rejected; want %d, %d, 0",
					res["records"], res["operations"], res["rejected"], n, n/4)
			}
			libIn, libProc = append(libIn, res["seconds"]), append(libProc, m.Wall.Seconds())
			libRSS, libHeap = max(libRSS, m.MaxRSSMB), max(libHeap, res["heapMB"])
			return nil
		},
		func() error { // the command
			if !hasStatus {
				return nil
			}
			m, err := run(ctx, nil, b.cfg.kcleanup, "status", "-b", b.cfg.bootstrap, "--control-topic", control,
				"-o", "json", "--timeout", "10m")
			if err != nil {
				return err
			}
			if err := checkStatus(m.Stdout, n); err != nil {
				return err
			}
			statusProc = append(statusProc, m.Wall.Seconds())
			statusOut = float64(len(m.Stdout)) / (1 << 20)
			statusRSS = max(statusRSS, m.MaxRSSMB)
			return nil
		},
	}
	for r := range b.cfg.runs {
		b.logf("B1 replay: run %d of %d", r+1, b.cfg.runs)
		for i := range subjects {
			// Rotate the order so that no subject always runs first (cold
			// page cache) or last.
			if err := subjects[(i+r)%len(subjects)](); err != nil {
				return err
			}
		}
	}
	c := fmt.Sprintf("%d records", n)
	rate := func(row *Row) {
		if row.Median > 0 {
			row.Rate, row.RateUnit = float64(n)/row.Median, "records/s"
		}
	}
	floor := Row{Bench: "B1 replay", Case: c, Subject: "floor: franz-go read to end (in process)"}
	floor.setRuns(floorIn)
	rate(&floor)
	floorP := Row{Bench: "B1 replay", Case: c, Subject: "floor: franz-go read to end (whole process)", PeakRSSMB: floorRSS}
	floorP.setRuns(floorProc)
	rate(&floorP)
	lib := Row{Bench: "B1 replay", Case: c, Subject: "worker.Cluster.Project (library, in process)",
		Ratios: []Ratio{{"floor", pairedRatio(libIn, floorIn)}}, Extra: map[string]float64{"heapAfterGCMB": libHeap}}
	lib.setRuns(libIn)
	rate(&lib)
	lib.Note = fmt.Sprintf("projection holds %.0f MB of heap once read", libHeap)
	libP := Row{Bench: "B1 replay", Case: c, Subject: "worker.Cluster.Project (whole process)", PeakRSSMB: libRSS,
		Ratios: []Ratio{{"floor process", pairedRatio(libProc, floorProc)}}}
	libP.setRuns(libProc)
	rate(&libP)
	b.add(floor, floorP, lib, libP)
	if hasStatus {
		st := Row{Bench: "B1 replay", Case: c, Subject: "kcleanup status -o json (whole process)", PeakRSSMB: statusRSS,
			Ratios: []Ratio{{"floor process", pairedRatio(statusProc, floorProc)}}}
		st.setRuns(statusProc)
		rate(&st)
		st.Extra = map[string]float64{"stdoutMB": statusOut}
		st.Note = fmt.Sprintf("prints %.1f MB of JSON (the default view; --all prints every operation)", statusOut)
		b.add(st)
	}
	return b.drop(ctx, data, control)
}

// checkStatus checks that `kcleanup status -o json` (the default view)
// saw the whole topic: its counts cover every operation.
func checkStatus(out []byte, n int) error {
	var st struct {
		ReadTo            int64             `json:"readTo"`
		Degraded          bool              `json:"degraded"`
		Operations        []json.RawMessage `json:"operations"`
		OperationsOmitted int               `json:"operationsOmitted"`
		Rejected          []json.RawMessage `json:"rejected"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return errors.Wrapf(err, "kcleanup status -o json printed %q", tail(out, 200))
	}
	ops := len(st.Operations) + st.OperationsOmitted
	if st.ReadTo != int64(n) || ops != n/4 || len(st.Rejected) != 0 || st.Degraded {
		return errors.Newf("kcleanup status read to %d with %d operations, %d rejected, degraded %v; want %d, %d, 0, false",
			st.ReadTo, ops, len(st.Rejected), st.Degraded, n, n/4)
	}
	return nil
}

// hasCommand reports whether the kcleanup binary has a subcommand.
func (b *bencher) hasCommand(ctx context.Context, name string) bool {
	cmd := exec.CommandContext(ctx, b.cfg.kcleanup, name, "--help")
	return cmd.Run() == nil
}
