package console

import (
	"bytes"
	"strings"
	"testing"

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
	proj := projection(recs)
	proj.ReadTo = readTo // Kafka's end offset does not move when the cleaner runs
	b, err := render(FromLog(report.StatusOf(proj), proj.View.State.Audit()), false)
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
	full, _, _ := story(t)
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
