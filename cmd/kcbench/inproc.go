package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// plan is B4: a plan from many markers over many partitions, as `kcleanup
// plan` builds it, in process. No broker.
func (b *bencher) plan(ctx context.Context) error {
	m, p := b.cfg.planMarkers, b.cfg.planPartitions
	b.logf("B4 plan: events.BuildPlan over %d markers × %d partitions, %d runs", m, p, b.cfg.runs)
	meas, res, err := runChild(ctx, "plan", "-markers", strconv.Itoa(m), "-partitions", strconv.Itoa(p),
		"-runs", strconv.Itoa(b.cfg.runs))
	if err != nil {
		return err
	}
	c := fmt.Sprintf("%d markers × %d partitions", m, p)
	row := Row{Bench: "B4 plan", Case: c, Subject: "events.BuildPlan (in process)",
		RateUnit: "offsets/s", Extra: pick(res, "allocs", "allocMB", "peakAboveInputMB", "inputMB")}
	row.setRuns(runsOf(res, "seconds"))
	if row.Median > 0 {
		row.Rate = float64(m*p) / row.Median
	}
	row.Note = fmt.Sprintf("%.0f allocs, %.1f MB allocated per plan; heap peak %.0f MB above the %.0f MB of markers it reads",
		res["allocs"], res["allocMB"], res["peakAboveInputMB"], res["inputMB"])
	parse := Row{Bench: "B4 plan", Case: c, Subject: "events.ParseMarkers, one JSON array (in process)",
		PeakRSSMB: meas.MaxRSSMB, RateUnit: "offsets/s", Extra: pick(res, "parse allocs", "parse allocMB", "parse peakAboveInputMB", "parseInputMB")}
	parse.setRuns(runsOf(res, "parse seconds"))
	if parse.Median > 0 {
		parse.Rate = float64(m*p) / parse.Median
	}
	parse.Ratios = []Ratio{{"BuildPlan", pairedRatio(parse.Runs, row.Runs)}}
	parse.Note = fmt.Sprintf("%.0f MB of JSON; %.0f allocs, %.0f MB allocated; heap peak %.0f MB above the input",
		res["parseInputMB"], res["parse allocs"], res["parse allocMB"], res["parse peakAboveInputMB"])
	stream := Row{Bench: "B4 plan", Case: c, Subject: "events.PlanBuilder.AddMarkers, as kcleanup plan (in process)",
		RateUnit: "offsets/s", Extra: pick(res, "stream allocs", "stream allocMB", "stream peakAboveInputMB", "parseInputMB")}
	stream.setRuns(runsOf(res, "stream seconds"))
	if stream.Median > 0 {
		stream.Rate = float64(m*p) / stream.Median
	}
	stream.Ratios = []Ratio{{"BuildPlan", pairedRatio(stream.Runs, row.Runs)}}
	stream.Note = fmt.Sprintf("the same %.0f MB of JSON, one marker held at a time; %.0f allocs, %.0f MB allocated; heap peak %.0f MB above the input",
		res["parseInputMB"], res["stream allocs"], res["stream allocMB"], res["stream peakAboveInputMB"])
	b.add(row, parse, stream)
	return nil
}

// growth is B5: the projection's memory and fold rate as the control topic
// grows, folding pre-encoded records in process. The largest size also
// writes a heap profile and names what holds the memory, and is folded a
// second time into a projection with the per-record audit (history's).
func (b *bencher) growth(ctx context.Context) error {
	var xs, secs, bytes []float64
	sizes := slices.Clone(b.cfg.growthSizes)
	if len(sizes) > 0 {
		sizes = append(sizes, -sizes[len(sizes)-1]) // negative: with the audit
	}
	for i, n := range sizes {
		audit := n < 0
		n = max(n, -n)
		args := []string{"growth", "-records", strconv.Itoa(n), "-runs", strconv.Itoa(b.cfg.runs)}
		subject := "projector fold (in process)"
		if audit {
			args = append(args, "-audit")
			subject = "projector fold with the audit, as history (in process)"
		}
		var profile string
		if i >= len(b.cfg.growthSizes)-1 {
			profile = filepath.Join(b.cfg.out, b.rep.Started.Format("20060102T150405Z")+"-b5-heap"+map[bool]string{true: "-audit"}[audit]+".pprof")
			if abs, err := filepath.Abs(profile); err == nil {
				profile = abs
			}
			args = append(args, "-profile", profile)
		}
		b.logf("B5 growth: fold %d records, %d runs (audit %v)", n, b.cfg.runs, audit)
		meas, res, err := runChild(ctx, args...)
		if err != nil {
			return err
		}
		row := Row{Bench: "B5 growth", Case: fmt.Sprintf("%d records", n), Subject: subject,
			PeakRSSMB: meas.MaxRSSMB, RateUnit: "records/s",
			Extra: pick(res, "retainedMB", "retainedBytesPerRecord", "allocsPerRecord", "allocBytesPerRecord", "inputMB")}
		row.setRuns(runsOf(res, "seconds"))
		if row.Median > 0 {
			row.Rate = float64(n) / row.Median
		}
		row.Note = fmt.Sprintf("retains %.1f MB (%.0f B/record); %.0f allocs, %.1f KB allocated per record",
			res["retainedMB"], res["retainedBytesPerRecord"], res["allocsPerRecord"], res["allocBytesPerRecord"]/1024)
		if profile != "" {
			sites := heapShares(res)
			for site, share := range sites {
				row.Extra["heapShare "+site] = share
			}
			row.Note += "; heap: " + formatShares(sites) + " (profile " + filepath.Base(profile) + ")"
		}
		b.add(row)
		if audit {
			continue
		}
		xs = append(xs, float64(n))
		secs = append(secs, row.Median)
		bytes = append(bytes, res["retainedMB"]*(1<<20))
	}
	b.fit("B5 growth", "fold time", "record", "s", xs, secs)
	b.fit("B5 growth", "retained heap", "record", "B", xs, bytes)
	return nil
}

// fit adds a least-squares line through the points, when there are two.
func (b *bencher) fit(bench, subject, x, unit string, xs, ys []float64) {
	l, ok := fitLine(xs, ys)
	if !ok {
		return
	}
	f := Fit{Bench: b.cfg.benchName(bench), Subject: subject, X: x, Unit: unit, Line: l}
	for i := range xs {
		f.Points = append(f.Points, [2]float64{xs[i], ys[i]})
	}
	b.rep.Fits = append(b.rep.Fits, f)
}

// pick copies the named figures of a child result.
func pick(res childResult, keys ...string) map[string]float64 {
	out := map[string]float64{}
	for _, k := range keys {
		if v, ok := res[k]; ok {
			out[k] = v
		}
	}
	return out
}

// heapShares are the "heapShare <site>" figures of a growth child.
func heapShares(res childResult) map[string]float64 {
	out := map[string]float64{}
	for k, v := range res {
		if site, ok := strings.CutPrefix(k, "heapShare "); ok {
			out[site] = v
		}
	}
	return out
}

// formatShares lists sites by share, largest first: "a 40%, b 30%".
func formatShares(shares map[string]float64) string {
	sites := make([]string, 0, len(shares))
	for s := range shares {
		sites = append(sites, s)
	}
	slices.SortFunc(sites, func(a, b string) int {
		if shares[a] != shares[b] {
			if shares[a] > shares[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(sites))
	for i, s := range sites {
		parts[i] = fmt.Sprintf("%s %.0f%%", s, shares[s]*100)
	}
	return strings.Join(parts, ", ")
}
