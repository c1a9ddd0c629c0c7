package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/worker"
)

// mirrorKillWorkers is how many `kcleanup worker` replicas B8 runs.
const mirrorKillWorkers = 2

// randomMoment is a B8 kill point that is no failpoint: SIGKILL from
// outside after a uniformly random delay.
const randomMoment = "random moment"

// mirrorKillPoints are where B8 kills `kcleanup apply`: every failpoint of
// an apply (with a mirror, inside each of its two mirror transactions too),
// and a random moment, one drawn at random per trial.
func mirrorKillPoints(mirror bool) []string {
	if !mirror {
		return []string{worker.AfterCommitted, worker.AfterDeleting, worker.AfterDeleteRecords, randomMoment}
	}
	return []string{worker.AfterCommitted, worker.InMirrorTransaction, worker.AfterMirrorCommitted, worker.AfterDeleting,
		worker.AfterDeleteRecords, worker.InMirrorAppliedTransaction, worker.AfterMirrorApplied, randomMoment}
}

// mirrorKill is B8 (issue 21): two worker processes, `kcleanup apply`
// SIGKILLed at a random point of its run (a failpoint drawn at random, or
// a random moment), and how long from the kill until a worker appends
// APPLIED; with a Flink Agents mirror attached and without one. A writer
// killed inside its mirror transaction holds the mirror until the next
// kcleanup writer fences it (docs/design.md §11): the gap between the two
// cases is what the mirror costs a failure.
func (b *bencher) mirrorKill(ctx context.Context) error {
	if !b.hasCommand(ctx, "worker") || !b.hasCommand(ctx, "mirror") {
		b.note("B8: %s lacks the worker or mirror command; not measured", b.cfg.kcleanup)
		return nil
	}
	rows := make([]Row, 0, 2)
	for _, mirror := range []bool{true, false} {
		r, err := b.mirrorKillCase(ctx, mirror)
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	if len(rows[0].Runs) > 0 && len(rows[1].Runs) > 0 {
		rows[0].Ratios = []Ratio{{"no mirror (medians)", rows[0].Median / rows[1].Median}}
	}
	b.add(rows...)
	return nil
}

// mirrorKillCase runs the trials of one case; the row has one run per kill
// a worker recovered from.
func (b *bencher) mirrorKillCase(ctx context.Context, mirror bool) (Row, error) {
	name := "no-mirror"
	if mirror {
		name = "mirror"
	}
	data := b.topic("kill-" + name)
	control := b.topic("kill-" + name + ".kcleanup")
	const partitions = 3
	trials := b.cfg.mirrorKillTrials
	topicID, err := createTopic(ctx, b.cl, data, partitions, b.dataTopicConfigs())
	if err != nil {
		return Row{}, err
	}
	if _, err := createTopic(ctx, b.cl, control, 1, worker.ControlTopicConfigs(b.replication())); err != nil {
		return Row{}, err
	}
	// Enough records for every attempt to delete one more on each partition.
	if err := produceData(ctx, b.cfg.bootstrap, data, partitions, 4*trials+1); err != nil {
		return Row{}, err
	}
	var mirrorTopic string
	if mirror {
		mirrorTopic = b.topic("kill-" + name + ".flink")
		if _, err := createTopic(ctx, b.cl, mirrorTopic, 1, worker.MirrorTopicConfigs(b.replication())); err != nil {
			return Row{}, err
		}
		// No restore grace: B8 measures the recovery after a kill, not the grace's wait.
		if _, err := run(ctx, nil, b.cfg.kcleanup, "mirror", "attach", mirrorTopic, "--topic", data, "--reason", "kcbench B8",
			"--restore-grace", "0", "-b", b.cfg.bootstrap, "--control-topic", control); err != nil {
			return Row{}, err
		}
	}
	ws := make([]*workerProc, mirrorKillWorkers)
	for i := range ws {
		if ws[i], err = b.startWorker(control, i); err != nil {
			return Row{}, err
		}
	}
	defer func() {
		for _, w := range ws {
			w.stop()
		}
	}()
	if _, err := settled(ctx, ws, 60*time.Second); err != nil {
		return Row{}, err
	}
	points := mirrorKillPoints(mirror)
	// A random moment is drawn within the time the last apply that was not
	// killed took (it follows the machine's load).
	span := time.Second
	var took []float64
	byPoint := map[string][]float64{}
	skipped := map[string]int{}
	k := int64(0)
	for attempt := 0; len(took) < trials && attempt < 3*trials; attempt++ {
		k++
		point := points[rand.IntN(len(points))]
		d, how, err := b.killApply(ctx, control, data, topicID, partitions, k, point, &span)
		if err != nil {
			return Row{}, errors.Wrapf(err, "B8 %s, trial %d (%s)", name, attempt+1, point)
		}
		if how != "" {
			skipped[how]++
			b.logf("B8 %s: trial %d at %s: %s; not counted", name, attempt+1, point, how)
			continue
		}
		took = append(took, d.Seconds())
		byPoint[point] = append(byPoint[point], d.Seconds())
		b.logf("B8 %s: trial %d at %s: APPLIED %s after the kill", name, attempt+1, point, d.Round(time.Millisecond))
	}
	c := fmt.Sprintf("%d workers, no mirror", mirrorKillWorkers)
	if mirror {
		c = fmt.Sprintf("%d workers, a Flink Agents mirror attached", mirrorKillWorkers)
	}
	r := Row{Bench: "B8 apply killed", Case: c, Subject: "kcleanup apply SIGKILLed at a random point: kill → APPLIED by a worker"}
	r.setRuns(took)
	var parts []string
	for _, p := range points {
		if xs := byPoint[p]; len(xs) > 0 {
			parts = append(parts, fmt.Sprintf("%s %d× max %s", p, len(xs), formatSeconds(maxOf(xs))))
		}
	}
	for how, n := range skipped {
		parts = append(parts, fmt.Sprintf("%d not counted (%s)", n, how))
	}
	r.Note = fmt.Sprintf("p50 %s, max %s; %s", formatSeconds(r.Median), formatSeconds(r.Worst), strings.Join(parts, "; "))
	return r, b.drop(ctx, data, control)
}

// killApply runs `kcleanup apply` of the plan moving every partition to k,
// killed at point, and waits for a worker to append APPLIED. It returns the
// time from the kill to APPLIED, or why the trial measured nothing (the
// apply finished before the kill, or died before COMMITTED).
func (b *bencher) killApply(ctx context.Context, control, data, topicID string, partitions int, k int64, point string, span *time.Duration) (time.Duration, string, error) {
	path, err := b.writePlan(data, topicID, partitions, k)
	if err != nil {
		return 0, "", err
	}
	plan, err := readPlan(path)
	if err != nil {
		return 0, "", err
	}
	seen, stop, err := b.tail(ctx, control, plan.PlanID)
	if err != nil {
		return 0, "", err
	}
	defer stop()
	cmd := exec.CommandContext(ctx, b.cfg.kcleanup, "apply", path, "-b", b.cfg.bootstrap, "--control-topic", control, "--timeout", "1m")
	if point != randomMoment {
		cmd.Env = append(cmd.Environ(), worker.FailpointEnv+"="+point)
	}
	if err := cmd.Start(); err != nil {
		return 0, "", errors.Wrap(err, "start kcleanup apply")
	}
	began := time.Now()
	exited := make(chan time.Time, 1)
	go func() { _ = cmd.Wait(); exited <- time.Now() }()
	var killedAt, diedAt time.Time
	if point == randomMoment {
		select {
		case <-time.After(time.Duration(rand.Int64N(int64(*span)))):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			killedAt = time.Now()
		case diedAt = <-exited:
		}
	}
	if diedAt.IsZero() {
		select {
		case diedAt = <-exited:
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			return 0, "", errors.Newf("kcleanup apply did not end within 2 minutes (failpoint %s)", point)
		}
	}
	if killedAt.IsZero() {
		killedAt = diedAt // it killed itself at the failpoint
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		*span = max(diedAt.Sub(began)*9/10, 50*time.Millisecond)
		return 0, "apply ended without being killed", nil
	}
	deadline := time.After(3 * time.Minute)
	// What the apply appended before it died is read within a second or so.
	uncommitted := time.After(10 * time.Second)
	committed := false
	for {
		select {
		case ev := <-seen:
			switch ev.event {
			case events.Committed:
				committed = true
			case events.Applied:
				if strings.HasSuffix(ev.actor, "/"+strconv.Itoa(cmd.Process.Pid)) {
					return 0, "APPLIED by the apply before the kill", nil
				}
				return ev.at.Sub(killedAt), "", nil
			}
		case <-uncommitted:
			if !committed {
				return 0, "killed before COMMITTED: nothing to finish", nil
			}
		case <-deadline:
			return 0, "", errors.Newf("plan %s: no APPLIED within 3 minutes of the kill at %s", plan.PlanID, point)
		case <-ctx.Done():
			return 0, "", ctx.Err()
		}
	}
}
