package page

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/consoletest"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/report"
)

// compact is what the log cleaner leaves of a log: the latest record of
// every key, at its offset; tombstones too, or not once
// delete.retention.ms has passed (as the projector's property tests model
// it).
func compact(log []projector.Record, dropTombstones bool) []projector.Record {
	last := map[string]int{}
	for i, r := range log {
		last[string(r.Key)] = i
	}
	var out []projector.Record
	for i, r := range log {
		if last[string(r.Key)] == i && !(dropTombstones && r.Value == nil) {
			out = append(out, r)
		}
	}
	return out
}

func auditReport(t *testing.T, recs []projector.Record, readTo int64) []byte {
	t.Helper()
	proj := consoletest.Projection(recs)
	proj.ReadTo = readTo // Kafka's end offset does not move when the cleaner runs
	b, err := HTML(FromLog(report.StatusOf(proj), proj.View.State.Audit()), false)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decisions is the part of a report that states what the log decided.
func decisions(t *testing.T, report []byte) []byte {
	t.Helper()
	from := bytes.Index(report, []byte(`data-part="decisions"`))
	to := bytes.Index(report, []byte(`data-part="records"`))
	if from < 0 || to < from {
		t.Fatal("the report has no decisions part")
	}
	return report[from:to]
}

// I5, seen by an auditor: the report of the log after compaction states
// the same decisions as the report of the full log, byte for byte. The
// story has an overwritten accepted record (repaired), a rejected record
// and a conflicting commit (both retracted), and a plan still pending.
func TestReportIsTheSameAfterCompaction(t *testing.T) {
	full, _, _ := consoletest.Story(t)
	readTo := full[len(full)-1].Offset + 1
	want := auditReport(t, full, readTo)
	if !bytes.Equal(want, auditReport(t, full, readTo)) {
		t.Fatal("two reports of the same log differ")
	}
	for _, drop := range []bool{false, true} {
		c := compact(full, drop)
		if len(c) >= len(full) {
			t.Fatalf("compaction removed nothing (tombstones dropped %t)", drop)
		}
		got := auditReport(t, c, readTo)
		if w, g := decisions(t, want), decisions(t, got); !bytes.Equal(w, g) {
			t.Errorf("tombstones dropped %t: the decisions differ after compaction; first difference at byte %d:\nfull:      %s\ncompacted: %s",
				drop, firstDiff(w, g), excerpt(w, firstDiff(w, g)), excerpt(g, firstDiff(w, g)))
		}
	}
	// The records part is the log as read: the full one lists the rejected
	// records the compacted one no longer holds.
	c := auditReport(t, compact(full, true), readTo)
	for _, s := range []string{"boundary-regression", "malformed"} {
		if !strings.Contains(string(want), s) {
			t.Errorf("the full report does not list the %s record", s)
		}
		if strings.Contains(string(c), "<span class=\"reason\">"+s) {
			t.Errorf("the compacted log's report lists a %s record the cleaner removed", s)
		}
	}
}

// A report reads no live offsets, so the log has no high watermark: past
// what the log knows (the boundary, the log start APPLIED verified) a bar
// says "not known", never "deleted" or "kept". One plan applied on every
// partition made every bar hatched "deleted" from end to end.
func TestReportBarsSayNotKnownWithoutAHighWatermark(t *testing.T) {
	b := &consoletest.LogBuilder{T: t}
	c1 := consoletest.Plan(t, "chk-1", events.Offsets{0: 150, 1: 120})
	b.Env(c1, events.Planned, 0, "ops", nil, nil)
	b.Env(c1, events.Committed, time.Second, "ops", c1.Offsets, nil)
	b.Env(c1, events.Deleting, 2*time.Second, "ops", nil, nil)
	b.Env(c1, events.Applied, 3*time.Second, "ops", nil, c1.Offsets)
	proj := consoletest.Projection(b.Recs)
	v := FromLog(report.StatusOf(proj), proj.View.State.Audit())
	bars := v.Topics[0].Partitions
	if len(bars) != 2 {
		t.Fatalf("%d bars, want one per partition", len(bars))
	}
	for _, bar := range bars {
		pct := func(s string) float64 {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("partition %d: width %q", bar.Partition, s)
			}
			return f
		}
		if pct(bar.GonePct) >= 100 || pct(bar.KeptPct) != 0 || pct(bar.UnknownPct) <= 0 ||
			pct(bar.GonePct)+pct(bar.BelowPct)+pct(bar.KeptPct)+pct(bar.UnknownPct) < 99.9 {
			t.Errorf("partition %d: deleted %s%%, below %s%%, kept %s%%, not known %s%%; want deleted up to the verified log start and the rest not known",
				bar.Partition, bar.GonePct, bar.BelowPct, bar.KeptPct, bar.UnknownPct)
		}
		if bar.HighWatermark != "not in the log" || bar.LogStart != strconv.FormatInt(c1.Offsets[bar.Partition], 10) {
			t.Errorf("partition %d: log start %q, high watermark %q", bar.Partition, bar.LogStart, bar.HighWatermark)
		}
	}
	page, err := HTML(v, false)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte(`<span class="key unknown"></span> not known (no high watermark)`)) ||
		!bytes.Contains(page, []byte(`<span class="seg unknown" style="width: 20.00%">`)) {
		t.Errorf("the report's bars and legend do not show the part that is not known")
	}
}

// TestPagesListPinnedRecoveryPoints: a pinned recovery point is on the console and in the audit
// report, with what it protects and until when (issue 22: pins are listed by every view).
func TestPagesListPinnedRecoveryPoints(t *testing.T) {
	recs, _, _ := consoletest.Story(t)
	at := consoletest.T0.Add(30 * time.Minute)
	pin := events.NewPin("savepoint-7", consoletest.Topic, consoletest.TopicID, events.Offsets{0: 190, 1: 170}, at.Add(14*24*time.Hour), "rollback point for release 42", at, "ops-laptop/4242")
	k, v := pin.Encode()
	recs = append(recs, projector.Record{Offset: recs[len(recs)-1].Offset + 1, Key: k, Value: v, Timestamp: at})
	b := auditReport(t, recs, recs[len(recs)-1].Offset+1)
	page := string(b)
	for _, want := range []string{"Pinned recovery points", "savepoint-7", "0=190 1=170", "rollback point for release 42", "ops-laptop/4242", "2026-12-15T09:30:00Z"} {
		if !strings.Contains(page, want) {
			t.Errorf("the report does not show %q", want)
		}
	}
	// Without a pin, no empty section.
	if b := auditReport(t, recs[:len(recs)-1], recs[len(recs)-1].Offset); strings.Contains(string(b), "Pinned recovery points") {
		t.Error("a log without pins shows the pins section")
	}
}
