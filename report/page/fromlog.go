package page

import (
	"fmt"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/report"
)

// FromLog builds the audit report of one control topic from what a replay
// of its log gave: the status document (report.StatusOf) and the verdict on
// every record (projector.State.Audit). It reads no clock and no live
// offsets, so the same log gives the same report, byte for byte.
//
// The report has two parts. What the log decided (binding, degraded,
// boundary, every operation's state and timeline) is the same for the full
// log and for the log after compaction (I5): each step's time and actor are
// those of the latest record under the step's key, the copy compaction
// keeps. The records part lists the records as read, with every verdict and
// reason, the rejected records and the fleet's maintenance; compaction
// removes superseded copies and retracted records from it.
func FromLog(st report.Status, audit []projector.Verdict) View {
	v := View{Title: "kcleanup audit report: " + st.ControlTopic,
		Report: &ReportInfo{ControlTopic: st.ControlTopic, ReadTo: st.ReadTo, Records: len(audit)}}
	t := header(st)
	t.Alerts = stateAlerts(st)

	// The latest copy of every accepted key: what compaction keeps.
	type copyOf struct {
		at            time.Time
		actor, reason string
	}
	latest := map[string]copyOf{}
	for _, r := range audit {
		if r.Outcome == projector.Accepted || r.Outcome == projector.Duplicate {
			latest[r.Key] = copyOf{r.At, r.Actor, r.OperatorReason}
		}
	}

	verified := events.Offsets{}
	first := map[string]time.Time{}
	for _, op := range st.Operations {
		l := lane(op)
		var steps []step
		for _, e := range fsm.Events() {
			if lifecycleOrder(e) > stateOrder(op.State) {
				break
			}
			c, ok := latest[events.Key(op.PlanID, e)]
			if !ok {
				steps = append(steps, step{event: e, verdict: "implied", implied: true, offset: -1})
				continue
			}
			steps = append(steps, step{event: e, at: c.at, actor: c.actor, reason: c.reason, verdict: "accepted", offset: -1})
			if _, seen := first[op.PlanID]; !seen {
				first[op.PlanID] = c.at
			}
		}
		l.Steps, l.Total = laneSteps(steps)
		l.Attempts = 0 // retries collapse under one key: not part of what compaction keeps
		if pending(op.State) {
			l.Flag = "pending"
			l.FlagText = fmt.Sprintf("%s when the log was read to offset %d: not finished", op.State, st.ReadTo)
			l.Hint = pendingHint
		}
		for p, off := range op.LogStart {
			verified[p] = max(verified[p], off)
		}
		t.Operations = append(t.Operations, l)
	}
	sortLanes(t.Operations, first)
	if n := countPending(st.Operations); n > 0 {
		t.Alerts = append(t.Alerts, Alert{Level: "warn", Title: "Unfinished operations",
			Text: fmt.Sprintf("%d operation(s) COMMITTED or DELETING when the log was read", n),
			Hint: "a running worker finishes them, or re-run `kcleanup apply PLAN.json`"})
	}
	t.Partitions = bars(st, verified, nil)
	for i := range t.Partitions {
		t.Partitions[i].HighWatermark = "not in the log"
	}
	t.BarsNote = "log starts are those the APPLIED records verified; a report reads no live offsets"

	repairing := map[string]bool{}
	for _, r := range st.Repairs {
		repairing[r.Key] = true
	}
	retracting := map[string]bool{}
	for _, r := range st.Retractions {
		retracting[r.Key] = true
	}
	done := doneMaintenance(st.Maintenance, nil)
	written := map[string]bool{}
	for _, m := range done {
		written[m.Offset] = true
	}
	var dups []MaintenanceRow
	for _, m := range copies(audit) {
		if !written[m.Offset] {
			dups = append(dups, m)
		}
	}
	t.Rejected, t.Maintenance = rejectedRows(st.Rejected, repairing, retracting, retractedBy(st.Maintenance), append(done, dups...))
	for _, r := range st.Repairs {
		t.Maintenance = append(t.Maintenance, MaintenanceRow{Kind: "repair", Of: fmt.Sprint(r.Offset), Key: shortKey(r.Key),
			Why: "pending when the log was read: accepted record listed for repair (key overwritten, or out of order)"})
	}
	for _, r := range st.Retractions {
		t.Maintenance = append(t.Maintenance, MaintenanceRow{Kind: "retraction", Of: fmt.Sprint(r.Offset), Key: shortKey(r.Key),
			Why: "pending when the log was read: every record under this key was rejected"})
	}
	for _, r := range audit {
		row := RecordRow{Offset: r.Offset, At: report.FormatTime(r.At), Event: report.OrDash(string(r.Event)), Plan: report.OrDash(short(r.PlanID)),
			Verdict: verdictText(r.Outcome, r.Reason), Bad: r.Outcome == projector.Rejected, Actor: report.OrDash(r.Actor),
			Detail: report.SingleLine(r.Detail)}
		if m := r.Maintenance; m != nil {
			// The fleet's own upkeep (its headers say who and why), not a bad write.
			row.Verdict, row.Bad, row.Actor, row.Detail = "maintenance ("+m.Kind+")", false, report.OrDash(m.Actor), report.SingleLine(m.Reason)
		} else if r.Event.CarriesReason() && r.Actor != "" {
			row.Detail += "; " + report.SingleLine(report.WhyText(r.OperatorReason)) // as history says it
		}
		t.Records = append(t.Records, row)
	}
	v.Topics = []Topic{t}
	return v
}

// copies lists every duplicate of an accepted record: a repair when the key
// was overwritten before it, else a retry (or a repair that keeps the
// commits in acceptance order).
func copies(audit []projector.Verdict) []MaintenanceRow {
	var out []MaintenanceRow
	acceptedAt := map[string]int64{}
	overwrittenAt := map[string]int64{}
	for _, r := range audit {
		switch {
		case r.Outcome == projector.Accepted:
			if _, ok := acceptedAt[r.Key]; !ok {
				acceptedAt[r.Key] = r.Offset
			}
		case r.Reason == projector.ReasonOverwritesAccepted:
			overwrittenAt[r.Key] = r.Offset
		case r.Outcome == projector.Duplicate:
			of, ok := acceptedAt[r.Key]
			if !ok {
				continue // a PLANNED after the COMMITTED that implied it
			}
			m := MaintenanceRow{Kind: "copy", Done: true, Offset: fmt.Sprint(r.Offset), Of: fmt.Sprint(of), Key: shortKey(r.Key),
				Why: "the same content again: a writer's retry, or a repair that keeps the commits in acceptance order"}
			if w, ok := overwrittenAt[r.Key]; ok {
				m.Kind = "repair"
				m.Why = fmt.Sprintf("re-appends the accepted record overwritten at offset %d, so that compaction keeps it", w)
				delete(overwrittenAt, r.Key)
			}
			out = append(out, m)
		}
	}
	return out
}

func stateOrder(s fsm.State) int { return s.Order() }

func countPending(ops []report.OperationStatus) int {
	n := 0
	for _, op := range ops {
		if pending(op.State) {
			n++
		}
	}
	return n
}
