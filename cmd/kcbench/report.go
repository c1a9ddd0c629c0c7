package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// reportVersion is the version of the JSON document kcbench writes; bump it
// when a field changes meaning.
const reportVersion = 1

// Report is everything one kcbench run measured. The table and the JSON in
// bench-results/ are two views of it.
type Report struct {
	Version int       `json:"version"`
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	Mode    string    `json:"mode"` // "full" or "quick"
	// Commit is the kcleanup commit measured, "+dirty" when the working
	// tree had changes (the binaries are built from the working tree).
	Commit   string   `json:"commit"`
	Machine  Machine  `json:"machine"`
	Rows     []Row    `json:"rows"`
	Fits     []Fit    `json:"fits,omitempty"`
	Notes    []string `json:"notes,omitempty"`
	Failures []string `json:"failures,omitempty"`
	// Goals are issue #12's figures (#23's where named) next to the measured ones.
	Goals []Goal `json:"goals,omitempty"`
}

// Row is one subject measured in one case: its runs, their median and
// worst, and its ratio to the reference measured in the same runs.
type Row struct {
	Bench   string    `json:"bench"`   // "B1 replay"
	Case    string    `json:"case"`    // "1000000 records"
	Subject string    `json:"subject"` // "kcleanup status (process)"
	Runs    []float64 `json:"runsSeconds,omitempty"`
	Median  float64   `json:"medianSeconds,omitempty"`
	Worst   float64   `json:"worstSeconds,omitempty"`
	// Rate is work per second at the median (records/s), with its unit.
	Rate     float64 `json:"rate,omitempty"`
	RateUnit string  `json:"rateUnit,omitempty"`
	// PeakRSSMB is the largest peak resident set of the subject's process
	// over its runs (getrusage of the child).
	PeakRSSMB float64 `json:"peakRssMB,omitempty"`
	// Ratios compare this subject with others measured in the same runs:
	// the median over runs of this subject's time divided by the other's.
	Ratios []Ratio `json:"ratios,omitempty"`
	// Extra holds figures particular to the benchmark (allocations, heap).
	Extra map[string]float64 `json:"extra,omitempty"`
	Note  string             `json:"note,omitempty"`
}

// Ratio is a subject's time over another's ("To"), paired run by run.
type Ratio struct {
	To    string  `json:"to"`
	Value float64 `json:"value"`
}

// Fit is a straight line through a subject's medians: seconds = fixed +
// perPartition × partitions.
type Fit struct {
	Bench   string       `json:"bench"`
	Subject string       `json:"subject"`
	X       string       `json:"x"`    // what the slope is per: "partition", "record"
	Unit    string       `json:"unit"` // of y: "s" or "B"
	Line    Line         `json:"line"`
	Points  [][2]float64 `json:"points"`
}

// setRuns fills Runs, Median and Worst.
func (r *Row) setRuns(runs []float64) {
	r.Runs = runs
	r.Median = median(runs)
	r.Worst = worst(runs)
}

// WriteTable prints the report for people: one aligned table, then the
// line fits, notes and failures.
func (rep *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "bench\tcase\tsubject\tmedian\tworst\tn\trate\tpeak RSS\tratio\tnote")
	for _, r := range rep.Rows {
		var ratios []string
		for _, x := range r.Ratios {
			ratios = append(ratios, fmt.Sprintf("%.2f× %s", x.Value, x.To))
		}
		ratio := strings.Join(ratios, "; ")
		rate := ""
		if r.Rate > 0 {
			rate = formatCount(r.Rate) + " " + r.RateUnit
		}
		rss := ""
		if r.PeakRSSMB > 0 {
			rss = fmt.Sprintf("%.0f MB", r.PeakRSSMB)
		}
		n := ""
		if len(r.Runs) > 0 {
			n = fmt.Sprint(len(r.Runs))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Bench, r.Case, r.Subject,
			formatSeconds(r.Median), formatSeconds(r.Worst), n, rate, rss, ratio, r.Note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, f := range rep.Fits {
		format := formatSeconds
		if f.Unit == "B" {
			format = formatBytes
		}
		fmt.Fprintf(w, "fit %s %s: %s + %s per %s (R² %.3f)\n", f.Bench, f.Subject,
			format(f.Line.Fixed), format(f.Line.Slope), f.X, f.Line.R2)
	}
	if len(rep.Goals) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "goal (issue #12, #23 where named)\t\tmeasured\tmet")
		for _, g := range rep.Goals {
			met := "no"
			if g.Met {
				met = "yes"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", g.Bench, g.Goal, g.Measured, met)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, f := range rep.Failures {
		fmt.Fprintf(w, "FAILED: %s\n", f)
	}
	return nil
}

// formatSeconds prints a duration in seconds with a unit that keeps three
// significant digits; empty for zero.
func formatSeconds(s float64) string {
	a := math.Abs(s)
	switch {
	case s == 0:
		return ""
	case a >= 100:
		return fmt.Sprintf("%.0fs", s)
	case a >= 1:
		return fmt.Sprintf("%.2fs", s)
	case a >= 1e-3:
		return fmt.Sprintf("%.1fms", s*1e3)
	case a >= 1e-6:
		return fmt.Sprintf("%.1fµs", s*1e6)
	default:
		return fmt.Sprintf("%.0fns", s*1e9)
	}
}

// formatBytes prints a size with a binary unit.
func formatBytes(b float64) string {
	a := math.Abs(b)
	switch {
	case a >= 1<<30:
		return fmt.Sprintf("%.2f GiB", b/(1<<30))
	case a >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case a >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	default:
		return fmt.Sprintf("%.0f B", b)
	}
}

// formatCount prints a rate or count with a k or M suffix.
func formatCount(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.2fM", x/1e6)
	case x >= 1e4:
		return fmt.Sprintf("%.0fk", x/1e3)
	case x >= 1e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	default:
		return fmt.Sprintf("%.0f", x)
	}
}

// WriteJSON writes the report to dir/<started>.json and returns the path.
func (rep *Report) WriteJSON(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, rep.Started.UTC().Format("20060102T150405Z")+".json")
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, append(data, '\n'), 0o644)
}

// Machine is what the numbers were measured on.
type Machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpuModel"`
	MemoryMB int64  `json:"memoryMB"`
	Kernel   string `json:"kernel,omitempty"`
	Go       string `json:"go"`
	Kafka    string `json:"kafka"`
	Broker   string `json:"broker"`
	// LoadStart and LoadEnd are the load averages (1, 5, 15 min) when the
	// run began and ended: a shared machine slows every figure.
	LoadStart string `json:"loadStart,omitempty"`
	LoadEnd   string `json:"loadEnd,omitempty"`
}

// String is one line for the table's header.
func (m Machine) String() string {
	broker := "no broker"
	if m.Broker != "" {
		broker = "Apache Kafka " + m.Kafka + " at " + m.Broker
	}
	load := ""
	if m.LoadStart != "" {
		load = ", load average " + m.LoadStart + " at the start, " + m.LoadEnd + " at the end"
	}
	return fmt.Sprintf("%d CPUs (%s), %d MB RAM, %s, %s, kernel %s%s",
		m.CPUs, m.CPUModel, m.MemoryMB, m.Go, broker, m.Kernel, load)
}
