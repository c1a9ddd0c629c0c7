package worker

import (
	"bufio"
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/worker/kafkatest"
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
		l(`kcleanup_boundary{control_topic="CTL",topic="action-state",partition="0"}`): 150,
		l(`kcleanup_boundary{control_topic="CTL",topic="action-state",partition="1"}`): 120,
		l(`kcleanup_projection_lag_records{control_topic="CTL"}`):                      0,
		l(`kcleanup_projection_caught_up{control_topic="CTL"}`):                        1,
		l(`kcleanup_projection_degraded{control_topic="CTL"}`):                         0,
		l(`kcleanup_rejected_records_total{control_topic="CTL",reason="malformed"}`):   0,
		l(`kcleanup_blocked_operations{control_topic="CTL"}`):                          0,
		l(`kcleanup_owner{control_topic="CTL"}`):                                       1,
		`kcleanup_owned_partitions`:                                                    1,
		`kcleanup_takeovers_total`:                                                     1,
		l(`kcleanup_finish_attempts_total{control_topic="CTL",result="applied"}`):      1,
		l(`kcleanup_delete_records_seconds_count{control_topic="CTL"}`):                1,
		l(`kcleanup_delete_records_seconds_bucket{control_topic="CTL",le="+Inf"}`):     1,
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
			les = formatValue(le)
		}
		v := samples[l(`kcleanup_delete_records_seconds_bucket{control_topic="CTL",le="`+les+`"}`)]
		if v < prev {
			t.Fatalf("bucket le=%s is %v, below the previous %v", les, v, prev)
		}
		prev = v
	}
}

func TestHistogramBucketsAndLabelEscaping(t *testing.T) {
	m := newMetrics()
	for _, d := range []time.Duration{time.Millisecond, 5 * time.Millisecond, 70 * time.Millisecond, 2 * time.Minute} {
		m.observeDelete("t", d)
	}
	h := m.deletes["t"]
	// 1ms and 5ms fall in le=0.005 (bounds are inclusive), 70ms in 0.1, 2m in +Inf.
	if h.counts[0] != 2 || h.counts[4] != 1 || h.counts[len(deleteBuckets)] != 1 || h.count != 4 {
		t.Fatalf("bucket counts %v, count %d", h.counts, h.count)
	}
	var buf bytes.Buffer
	e := expo{w: bufioWriter(&buf)}
	e.sample("x", 1, "control_topic", "a\"b\\c\nd")
	e.w.Flush()
	if got, want := buf.String(), `x{control_topic="a\"b\\c\nd"} 1`+"\n"; got != want {
		t.Fatalf("escaped sample %q, want %q", got, want)
	}
	samples, _ := parseExposition(t, "# TYPE x gauge\n"+buf.String())
	if len(samples) != 1 {
		t.Fatal("the escaped sample does not parse")
	}
}

func bufioWriter(b *bytes.Buffer) *bufio.Writer { return bufio.NewWriter(b) }
