package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Goal is one figure issue #12 (or, where it says #23, #31 or #32, that issue) asks of kcleanup, next to what the run
// measured. Met is false too when nothing was measured (Measured says so).
type Goal struct {
	Bench    string `json:"bench"`
	Goal     string `json:"goal"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

// goals compares the run with the goals of issues #12 and #23, on the largest case
// each benchmark ran.
func (rep *Report) goals() []Goal {
	var out []Goal
	add := func(bench, goal string, met bool, format string, args ...any) {
		out = append(out, Goal{Bench: bench, Goal: goal, Measured: fmt.Sprintf(format, args...), Met: met})
	}
	missing := func(bench, goal string) {
		out = append(out, Goal{Bench: bench, Goal: goal, Measured: "not measured in this run"})
	}
	if r, ok := rep.largest("B1 replay", "worker.Cluster.Project (library, in process)"); ok && len(r.Ratios) > 0 {
		add("B1 replay", "library ≤ 3.0× the floor (#23)", r.Ratios[0].Value <= 3.0, "%.2f× (%s)", r.Ratios[0].Value, r.Case)
	} else {
		missing("B1 replay", "library ≤ 3.0× the floor (#23)")
	}
	if r, ok := rep.largest("B1 replay", "kcleanup status -o json (whole process)"); ok && len(r.Ratios) > 0 {
		add("B1 replay", "status by default ≤ 3.5× the floor, RSS ≤ 250 MB (#23)", r.Ratios[0].Value <= 3.5 && r.PeakRSSMB <= 250,
			"%.2f×, %.0f MB RSS, %.2f MB of JSON (%s)", r.Ratios[0].Value, r.PeakRSSMB, r.Extra["stdoutMB"], r.Case)
	} else {
		missing("B1 replay", "status by default ≤ 3.5× the floor, RSS ≤ 250 MB (#23)")
	}
	if r, ok := rep.largest("B5 growth", "projector fold (in process)"); ok {
		b := r.Extra["retainedBytesPerRecord"]
		add("B5 growth", "worker's projection ≤ 64 B per record (#23)", b <= 64, "%.0f B/record (%s)", b, r.Case)
	} else {
		missing("B5 growth", "worker's projection ≤ 64 B per record (#23)")
	}
	if r, ok := rep.largest("B5 growth", "projector fold with the audit, as history (in process)"); ok {
		add("B5 growth", "history's projection (reported, no goal)", true, "%.0f B/record (%s)", r.Extra["retainedBytesPerRecord"], r.Case)
	}
	// kcleanup plan reads a markers file into a PlanBuilder; ParseMarkers,
	// which returns every marker, is reported beside it.
	const b4Goal = "markers file to plan (kcleanup plan) ≤ 1.0 s, heap peak ≤ 2× the input"
	if r, ok := rep.largest("B4 plan", "events.PlanBuilder.AddMarkers, as kcleanup plan (in process)"); ok {
		in, above := r.Extra["parseInputMB"], r.Extra["stream peakAboveInputMB"]
		total := 0.0
		if in > 0 {
			total = (in + above) / in
		}
		add("B4 plan", b4Goal, r.Median <= 1.0 && total <= 2.0,
			"%s, heap peak %.0f MB above the %.0f MB input (%.2f× the input in all) (%s)", formatSeconds(r.Median), above, in, total, r.Case)
	} else {
		missing("B4 plan", b4Goal)
	}
	if r, ok := rep.largest("B4 plan", "events.ParseMarkers, one JSON array (in process)"); ok {
		in, above := r.Extra["parseInputMB"], r.Extra["parse peakAboveInputMB"]
		add("B4 plan", "ParseMarkers, every marker returned (reported, no goal)", true,
			"%s, heap peak %.0f MB above the %.0f MB input (%s)", formatSeconds(r.Median), above, in, r.Case)
	}
	if r, ok := rep.find("B2 apply", "100 partitions", libraryRow); ok && len(r.Ratios) > 0 {
		add("B2 apply", "100 partitions ≤ 1.5× the floor", r.Ratios[0].Value <= 1.5, "%.2f× (%s)", r.Ratios[0].Value, r.Note)
	} else {
		missing("B2 apply", "100 partitions ≤ 1.5× the floor")
	}
	const mirrorGoal = "100 partitions, a Flink Agents mirror attached ≤ +50 ms per apply (#23)"
	lib, okLib := rep.find("B2 apply", "100 partitions", libraryRow)
	mir, okMir := rep.find("B2 apply", "100 partitions", mirroredRow)
	if okLib && okMir {
		more := mir.Median - lib.Median
		add("B2 apply", mirrorGoal, more <= 0.050, "+%s (medians %s and %s)", formatSeconds(more), formatSeconds(mir.Median), formatSeconds(lib.Median))
	} else {
		missing("B2 apply", mirrorGoal)
	}
	const b6Goal = "3 workers, 1,000 control topics by regex: time to ready, heap per control topic, failover of one replica's share (reported, no bound)"
	start, okStart := rep.largest("B6 fleet", "start to ready: every control topic read and owned (3 processes)")
	fail, okFail := rep.largest("B6 fleet", "failover: one replica SIGKILLed until its share is owned again")
	if okStart && okFail {
		add("B6 fleet", b6Goal, true, "ready in %s, %.0f KB heap per control topic, failover %s (%.0f control topics moved) (%s)",
			formatSeconds(start.Median), start.Extra["heapPerControlTopicKB"], formatSeconds(fail.Median), fail.Extra["ownedByVictim"], start.Case)
	} else {
		missing("B6 fleet", b6Goal)
	}
	const b6FailGoal = "failover of one replica's share (1,000 control topics) ≤ 1.0× the session timeout (#23)"
	if okFail && len(fail.Ratios) > 0 {
		add("B6 fleet", b6FailGoal, fail.Ratios[0].Value <= 1.0, "%.2f× (%s, %s)", fail.Ratios[0].Value, formatSeconds(fail.Median), fail.Case)
	} else {
		missing("B6 fleet", b6FailGoal)
	}
	const b7Goal = "kcleanup validate in process ≤ 3× the control-topic read (#23)"
	if r, ok := rep.largest("B7 validate", validateRow); ok && len(r.Ratios) > 0 {
		add("B7 validate", b7Goal, r.Ratios[0].Value <= 3.0, "%.2f× (%s)", r.Ratios[0].Value, r.Note)
	} else {
		missing("B7 validate", b7Goal)
	}
	// Issue 21: an apply killed inside its mirror transaction must not
	// stall the mirror for the broker's transaction timeout.
	b8Goal := fmt.Sprintf("apply killed at a random point, a mirror attached: max kill → APPLIED ≤ 15 s + the session timeout (%s)", formatSeconds(failoverSession.Seconds()))
	var with Row
	okWith := false
	for _, r := range rep.Rows {
		if r.Bench == "B8 apply killed" && strings.Contains(r.Case, "mirror attached") {
			with, okWith = r, true
		}
	}
	if okWith && len(with.Runs) > 0 {
		add("B8 apply killed", b8Goal, with.Worst <= 15+failoverSession.Seconds(), "p50 %s, max %s over %d kills (%s)",
			formatSeconds(with.Median), formatSeconds(with.Worst), len(with.Runs), with.Case)
	} else {
		missing("B8 apply killed", b8Goal)
	}
	// Issue 31: the markers out of a checkpoint, natively, against Flink's own reader.
	const b9Ratio, b9Rate, b9Mem = "kcleanup markers --checkpoint ≤ 0.05× the State Processor API's read (#31)",
		"≥ 100 MB/s of _metadata (#31)", "peak RSS ≤ 2× the _metadata (#31)"
	if r, ok := rep.largest("B9 checkpoint", b9Process); ok {
		if len(r.Ratios) > 0 {
			add("B9 checkpoint", b9Ratio, r.Ratios[0].Value <= 0.05, "%.3f× its read, %.3f× its whole process (%s)", r.Ratios[0].Value, r.Ratios[1].Value, r.Case)
		} else {
			missing("B9 checkpoint", b9Ratio)
		}
		add("B9 checkpoint", b9Rate, r.Rate >= 100, "%.0f MB/s as a process (%s)", r.Rate, formatSeconds(r.Median))
		add("B9 checkpoint", b9Mem, r.Extra["rssPerMetadata"] <= 2, "%.0f MB, %.2f× the file", r.PeakRSSMB, r.Extra["rssPerMetadata"])
	} else {
		missing("B9 checkpoint", b9Ratio)
		missing("B9 checkpoint", b9Rate)
		missing("B9 checkpoint", b9Mem)
	}
	// Issue 32 item 5: a round over 10,000 checkpoints stays within one round at the smallest --every.
	for _, s := range []struct{ subject, goal string }{
		{b10Cold, "a round over 10,000 checkpoints, every _metadata read, ≤ the smallest --every, 1 s (#32)"},
		{b10Warm, "a round over 10,000 checkpoints, every _metadata skipped, ≤ the smallest --every, 1 s (#32)"},
	} {
		if r, ok := rep.largest("B10 follow", s.subject); ok && len(r.Runs) > 0 {
			add("B10 follow", s.goal, r.Median <= smallestEvery.Seconds(), "%s median, %s worst (%s)", formatSeconds(r.Median), formatSeconds(r.Worst), r.Case)
		} else {
			missing("B10 follow", s.goal)
		}
	}
	return out
}

// largest is the row of a bench and subject with the largest case (the
// number its case starts with).
func (rep *Report) largest(bench, subject string) (Row, bool) {
	var best Row
	found, size := false, -1.0
	for _, r := range rep.Rows {
		if r.Bench != bench || r.Subject != subject {
			continue
		}
		n, _ := strconv.ParseFloat(strings.Fields(r.Case + " 0")[0], 64)
		if n > size {
			best, found, size = r, true, n
		}
	}
	return best, found
}

func (rep *Report) find(bench, c, subject string) (Row, bool) {
	for _, r := range rep.Rows {
		if r.Bench == bench && r.Case == c && r.Subject == subject {
			return r, true
		}
	}
	return Row{}, false
}

// loadAverage is /proc/loadavg's first three fields ("" when unknown): the
// machine may be shared, and every time above depends on it.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
