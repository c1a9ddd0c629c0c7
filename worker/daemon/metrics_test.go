package daemon

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/report"
)

var (
	helpLine   = regexp.MustCompile(`^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) \S.*$`)
	typeLine   = regexp.MustCompile(`^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$`)
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:\\\\|\\"|\\n|[^"\\\n])*"(?:,|\}))+|) (\S+)$`)
)

// parseExposition checks the text format line by line, and returns the
// samples by their full series text (name and labels) and the type of each
// family.
func parseExposition(t *testing.T, text string) (samples map[string]float64, types map[string]string) {
	t.Helper()
	samples, types = map[string]float64{}, map[string]string{}
	if !strings.HasSuffix(text, "\n") {
		t.Fatal("exposition does not end with a newline")
	}
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		switch {
		case helpLine.MatchString(line):
		case typeLine.MatchString(line):
			m := typeLine.FindStringSubmatch(line)
			if _, dup := types[m[1]]; dup {
				t.Fatalf("line %d: family %s typed twice", i+1, m[1])
			}
			types[m[1]] = m[2]
		case sampleLine.MatchString(line):
			m := sampleLine.FindStringSubmatch(line)
			family := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m[1], "_bucket"), "_sum"), "_count")
			if types[m[1]] == "" && types[family] == "" {
				t.Fatalf("line %d: sample of %s before its TYPE line", i+1, m[1])
			}
			v, err := strconv.ParseFloat(m[3], 64)
			if err != nil {
				t.Fatalf("line %d: value %q: %v", i+1, m[3], err)
			}
			series := m[1] + m[2]
			if _, dup := samples[series]; dup {
				t.Fatalf("line %d: series %s twice", i+1, series)
			}
			samples[series] = v
		default:
			t.Fatalf("line %d is not in the Prometheus text format: %q", i+1, line)
		}
	}
	return samples, types
}

func TestMetricsAfterAnOperation(t *testing.T) {
	f := newAppliedFixture(t)
	l := func(s string) string { return strings.ReplaceAll(s, "CTL", f.ctl) }
	var samples map[string]float64
	var types map[string]string
	kafkatest.Eventually(t, 20*time.Second, "metrics show the operation APPLIED", func() bool {
		samples, types = parseExposition(t, get(t, f.url+"/metrics"))
		return samples[l(`kcleanup_operations{control_topic="CTL",state="APPLIED"}`)] == 1
	})
	want := map[string]float64{
		l(`kcleanup_operations{control_topic="CTL",state="COMMITTED"}`):                0,
		l(`kcleanup_boundary{control_topic="CTL",partition="0",topic="action-state"}`): 150,
		l(`kcleanup_boundary{control_topic="CTL",partition="1",topic="action-state"}`): 120,
		l(`kcleanup_projection_lag_records{control_topic="CTL"}`):                      0,
		l(`kcleanup_projection_caught_up{control_topic="CTL"}`):                        1,
		l(`kcleanup_projection_degraded{control_topic="CTL"}`):                         0,
		l(`kcleanup_rejected_records_total{control_topic="CTL",reason="malformed"}`):   0,
		l(`kcleanup_blocked_operations{control_topic="CTL"}`):                          0,
		l(`kcleanup_restore_grace_operations{control_topic="CTL"}`):                    0,
		l(`kcleanup_pins_active{control_topic="CTL"}`):                                 0,
		l(`kcleanup_owner{control_topic="CTL"}`):                                       1,
		`kcleanup_owned_partitions`:                                                    1,
		`kcleanup_takeovers_total`:                                                     1,
		l(`kcleanup_finish_attempts_total{control_topic="CTL",result="applied"}`):      1,
		l(`kcleanup_delete_records_seconds_count{control_topic="CTL"}`):                1,
		l(`kcleanup_delete_records_seconds_bucket{control_topic="CTL",le="+Inf"}`):     1,
		l(`kcleanup_protocol_step_seconds_count{control_topic="CTL",step="delete"}`):   1,
		l(`kcleanup_protocol_step_seconds_count{control_topic="CTL",step="verify"}`):   1,
	}
	for series, v := range want {
		got, ok := samples[series]
		if !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, v)
		}
	}
	for family, typ := range map[string]string{
		"kcleanup_operations": "gauge", "kcleanup_rejected_records_total": "counter",
		"kcleanup_takeovers_total": "counter", "kcleanup_delete_records_seconds": "histogram",
		"kcleanup_protocol_step_seconds": "histogram",
		// client_golang's runtime and process collectors.
		"go_goroutines": "gauge", "process_cpu_seconds_total": "counter",
	} {
		if types[family] != typ {
			t.Errorf("family %s has type %q, want %s", family, types[family], typ)
		}
	}
	// Buckets are cumulative.
	prev := -1.0
	for _, le := range append(deleteBuckets, 0) {
		les := "+Inf"
		if le != 0 {
			les = strconv.FormatFloat(le, 'g', -1, 64)
		}
		v := samples[l(`kcleanup_delete_records_seconds_bucket{control_topic="CTL",le="`+les+`"}`)]
		if v < prev {
			t.Fatalf("bucket le=%s is %v, below the previous %v", les, v, prev)
		}
		prev = v
	}
}

// TestMetricsLint: the registry's families pass client_golang's linter
// (names, units, help text), and a label value with quotes, backslashes and
// a newline is escaped so that the exposition still parses.
func TestMetricsLint(t *testing.T) {
	m := newMetrics()
	m.observeDelete("a\"b\\c\nd", 70*time.Millisecond)
	m.attempt("t", "applied")
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.takeovers, m.attempts, m.deletes, m.steps)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %+v", err, problems)
	}
	var buf bytes.Buffer
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	samples, _ := parseExposition(t, buf.String())
	if got := samples[`kcleanup_delete_records_seconds_bucket{control_topic="a\"b\\c\nd",le="0.1"}`]; got != 1 {
		t.Fatalf("escaped bucket le=0.1 = %v, want 1:\n%s", got, buf.String())
	}
}

// TestPinGauges: the active pins are those not unpinned, not void and not
// expired by the replica's clock; the soonest expiry is theirs.
func TestPinGauges(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(h int) *time.Time { x := now.Add(time.Duration(h) * time.Hour); return &x }
	pins := []report.PinStatus{
		{PinID: "a", State: projector.PinActive},                   // no expiry
		{PinID: "b", State: projector.PinActive, Expires: at(48)},  // counts
		{PinID: "c", State: projector.PinPartial, Expires: at(24)}, // counts: the soonest
		{PinID: "d", State: projector.PinActive, Expires: at(-1)},  // expired
		{PinID: "e", State: projector.PinVoid, Expires: at(2)},     // protects nothing
		{PinID: "f", State: projector.PinUnpinned, Expires: at(1), Unpinned: &report.PinEnd{}},
	}
	active, soonest := pinGauges(pins, now)
	if active != 3 || !soonest.Equal(*at(24)) {
		t.Fatalf("pinGauges = %d, %v; want 3, %v", active, soonest, *at(24))
	}
	if active, soonest := pinGauges(nil, now); active != 0 || !soonest.IsZero() {
		t.Fatalf("no pins: %d, %v", active, soonest)
	}
}
