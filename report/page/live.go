package page

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
)

// FromWorker builds the console of a replica from its status document,
// and nothing else: the page shows no more than /v1/status does. now is
// the only clock, used to tell a stuck operation from a pending one.
func FromWorker(ws report.WorkerStatus, now time.Time) View {
	v := View{Title: "kcleanup console", Live: true, Worker: &Replica{Group: ws.Group, Actor: ws.Actor, Ready: true}}
	owner := map[string]string{}
	if f := ws.Fleet; f != nil {
		v.Worker.FleetNote = "as the group coordinator described it at " + report.FormatTime(f.DescribedAt)
		if f.Error != "" {
			v.Worker.FleetNote = "the group could not be described at " + report.FormatTime(f.DescribedAt) + ": " + report.SingleLine(f.Error)
		}
		for _, m := range f.Members {
			// A member that is not a kcleanup worker of this version is
			// named by its client ID, as the coordinator gives it.
			row := Member{Name: m.Replica, ID: m.MemberID, Host: report.OrDash(m.Host), Started: "-", Self: m.Self, Owns: "-"}
			if row.Name == "" {
				row.Name = "client ID " + report.OrDash(m.ClientID)
			}
			if m.StartedAt != nil {
				row.Started = report.FormatTime(*m.StartedAt)
			}
			if len(m.ControlTopics) > 0 {
				row.Owns = strings.Join(m.ControlTopics, ", ")
			}
			for _, t := range m.ControlTopics {
				owner[t] = "replica " + row.Name + " at " + report.OrDash(m.Host)
			}
			v.Worker.Members = append(v.Worker.Members, row)
		}
	} else {
		v.Worker.FleetNote = "the group was not described yet"
	}
	for _, ts := range ws.ControlTopics {
		if !ts.CaughtUp {
			v.Worker.Ready = false
		}
		t := liveTopic(ts, now)
		switch o, ok := owner[ts.ControlTopic]; {
		case ts.Owned:
			t.Fleet.Owner = "this replica"
		case ok:
			t.Fleet.Owner = o
		case ws.Fleet != nil && ws.Fleet.Error == "":
			t.Fleet.Owner = "no replica: the group assigned it to none"
			t.Alerts = append(t.Alerts, Alert{Level: "bad", Title: "No owner",
				Text: "no replica of the group owns this control topic: nothing finishes its COMMITTED or DELETING operations",
				Hint: "check the workers' logs (authorization, unknown topic); every replica of a group must serve the same control topics"})
		default:
			t.Fleet.Owner = "unknown"
		}
		v.Topics = append(v.Topics, t)
	}
	return v
}

// mirrorOf renders the "mirror" member of a control topic's status, when
// the document has one (the Flink Agents mirror adds it), as "key value"
// pairs: the console shows what the document says without knowing its
// shape.
func mirrorOf(ts any) string {
	b, err := json.Marshal(ts)
	if err != nil {
		return ""
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(b, &doc) != nil || doc["mirror"] == nil || string(doc["mirror"]) == "null" {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(doc["mirror"], &m) != nil {
		return report.SingleLine(string(doc["mirror"]))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := string(m[k])
		var str string
		if json.Unmarshal(m[k], &str) == nil {
			v = str
		}
		parts = append(parts, k+": "+report.SingleLine(v))
	}
	return strings.Join(parts, " · ")
}

func liveTopic(ts report.TopicStatus, now time.Time) Topic {
	st := ts.Status
	t := header(st)
	t.Fleet = &Fleet{Owned: ts.Owned, CaughtUp: ts.CaughtUp, LagRecords: ts.LagRecords, ReadError: report.SingleLine(ts.ReadError),
		Mirror: mirrorOf(ts)}
	if ts.CaughtUpAt != nil {
		t.Fleet.CaughtUpAt = report.FormatTime(*ts.CaughtUpAt)
	}
	if !ts.CaughtUp {
		why := "this replica has not read the control topic to its end lately"
		if ts.ReadError != "" {
			why += ": " + report.SingleLine(ts.ReadError)
		}
		t.Alerts = append(t.Alerts, Alert{Level: "bad", Title: "Not caught up",
			Text: why + "; its /v1/validate answers \"cannot tell\" (503) and /readyz is 503",
			Hint: "check that the broker is reachable from this worker and that its principal may Read and Describe the control topic; the worker retries on its own"})
	}
	t.Alerts = append(t.Alerts, stateAlerts(st)...)

	var logStart, hwm events.Offsets
	if d := ts.DataTopic; d != nil {
		logStart, hwm = d.LogStart, d.HighWatermark
		t.BarsNote = "log start and high watermark as this replica listed them at " + report.FormatTime(d.ListedAt)
		if d.Error != "" {
			t.Alerts = append(t.Alerts, Alert{Level: "warn", Title: "Data topic offsets unknown",
				Text: "cannot list the data topic's offsets: " + report.SingleLine(d.Error),
				Hint: "the bars show the last offsets listed; check that the topic exists and that this worker may Describe it"})
		}
	} else if st.Topic != "" {
		t.BarsNote = "log start and high watermark not listed yet"
	}
	t.Partitions = bars(st, logStart, hwm)
	if d := ts.DataTopic; d != nil && d.Error != "" {
		for i := range t.Partitions { // stale offsets prove nothing
			if t.Partitions[i].NoteLevel == "warn" {
				t.Partitions[i].Note, t.Partitions[i].NoteLevel = "", ""
			}
		}
	}

	blocked := map[string]report.BlockedOperation{}
	for _, b := range st.Blocked {
		blocked[b.PlanID] = b
	}
	graced := map[string]report.GraceOperation{}
	for _, g := range st.RestoreGrace {
		graced[g.PlanID] = g
	}
	held := map[string]report.PinHoldStatus{}
	for _, h := range st.PinHolds {
		held[h.PlanID] = h
	}
	for _, a := range st.ClockAhead {
		t.Alerts = append(t.Alerts, Alert{Level: "warn", Title: "Clock ahead: " + report.SingleLine(a.Actor),
			Text: fmt.Sprintf("the COMMITTED of plan %s (offset %d) is stamped %s, %s ahead of the broker's time of the record (%s)",
				a.PlanID, a.Offset, report.FormatTime(a.At), time.Duration(a.AheadSeconds*float64(time.Second)).Round(time.Second), report.FormatTime(a.Appended)),
			Hint: "put that host on NTP: the log judged pins at its \"at\"; nothing above a pin is deleted until the broker's clock passes it"})
	}
	if r := ts.Retention; r != nil && r.Blocked {
		why := r.Why
		if r.Error != "" {
			why = r.Error
		}
		t.Alerts = append(t.Alerts, Alert{Level: "warn", Title: "Retention policy blocked: " + r.NoPlan,
			Text: fmt.Sprintf("the owner's round of %s at %s made no plan: %s", r.Policy, report.FormatTime(r.At), report.SingleLine(why)),
			Hint: "kcleanup retention show shows the same round as a dry run; docs/operator-guide.md, \"Follow the job\", says what each reason needs"})
	}
	// Rejected records show on their plan's lane, except the fleet's own
	// retraction tombstones (listed under maintenance).
	rejectedBy := map[string][]report.RejectedRecord{}
	seen := map[string]bool{}
	for _, r := range st.Rejected {
		retraction := r.Reason == projector.ReasonTombstone && seen[r.Key]
		seen[r.Key] = true
		if id := keyPlan(r.Key); id != "" && !retraction {
			rejectedBy[id] = append(rejectedBy[id], r)
		}
	}
	first := map[string]time.Time{}
	for _, op := range st.Operations {
		l := lane(op)
		var steps []step
		for _, h := range op.History {
			steps = append(steps, step{event: h.Event, at: h.At, actor: h.Actor, reason: h.Reason, verdict: "accepted", offset: h.Offset})
		}
		if len(op.History) > 0 {
			first[op.PlanID] = op.History[0].At
		}
		for _, r := range rejectedBy[op.PlanID] {
			steps = append(steps, step{event: keyEvent(r.Key), at: r.At, actor: r.Actor,
				verdict: verdictText(projector.Rejected, r.Reason), bad: true, offset: r.Offset})
		}
		slices.SortStableFunc(steps, func(a, b step) int { return cmp.Compare(a.offset, b.offset) })
		steps = withImplied(steps, op.Implied)
		l.Steps, l.Total = laneSteps(steps)
		switch b, isBlocked := blocked[op.PlanID]; {
		case held[op.PlanID].PlanID != "":
			h := held[op.PlanID]
			l.Flag = "pending"
			l.FlagText = fmt.Sprintf("%s: held by pin %s until the broker's clock passes its expiry: %s", op.State, h.PinID, report.SingleLine(h.Reason))
			l.Hint = "nothing to do: the owner deletes once the broker's clock passes the pin's expiry, or once it is unpinned"
		case isBlocked:
			l.Flag = "blocked"
			l.FlagText = fmt.Sprintf("blocked since %s: %s; the worker retries at %s", report.FormatTime(b.Since), report.SingleLine(b.Reason), report.FormatTime(b.RetryAt))
			l.Hint = "remove the cause above; the owner retries on its own at that time"
			if len(b.Hints) > 0 { // the fix itself, as the worker's log gives it
				// One command a line (the page keeps the line breaks), so that each can be copied.
				l.Hint = strings.Join(b.Hints, "\n") + "\nthe owner retries on its own at " + report.FormatTime(b.RetryAt)
			}
			t.Alerts = append(t.Alerts, Alert{Level: "bad", Title: "Blocked operation " + l.PlanShort, Text: l.FlagText, Hint: l.Hint})
		case graced[op.PlanID].PlanID != "":
			g := graced[op.PlanID]
			l.Flag = "pending"
			l.FlagText = fmt.Sprintf("%s: waiting out the restore grace until %s (mirror %s showed the plan at %s)", op.State, report.FormatTime(g.Until), g.Mirror, report.FormatTime(g.Since))
			l.Hint = "nothing to do: a Flink Agents restore that passed its check on the mirror just before has until then; the owner deletes after it"
		case pending(op.State) && !op.UpdatedAt.IsZero() && now.Sub(op.UpdatedAt) > StuckAfter:
			l.Flag = "stuck"
			l.FlagText = fmt.Sprintf("%s since %s (%s): no worker finished it", op.State, report.FormatTime(op.UpdatedAt), formatDuration(now.Sub(op.UpdatedAt)))
			l.Hint = "check that a worker owns this control topic (the fleet below, its /readyz and its log), or re-run `kcleanup apply PLAN.json`"
			t.Alerts = append(t.Alerts, Alert{Level: "bad", Title: "Stuck operation " + l.PlanShort, Text: l.FlagText, Hint: l.Hint})
		case pending(op.State):
			l.Flag = "pending"
			l.FlagText = fmt.Sprintf("%s since %s", op.State, report.FormatTime(op.UpdatedAt))
			l.Hint = pendingHint
		}
		t.Operations = append(t.Operations, l)
	}
	sortLanes(t.Operations, first)
	omitted(st, &t)

	repairing := map[string]bool{}
	for _, r := range st.Repairs {
		repairing[r.Key] = true
		t.Maintenance = append(t.Maintenance, MaintenanceRow{Kind: "repair", Of: fmt.Sprint(r.Offset), Key: shortKey(r.Key),
			Why: "accepted record listed for repair (key overwritten, or out of order): the owner re-appends it"})
	}
	retracting := map[string]bool{}
	for _, r := range st.Retractions {
		retracting[r.Key] = true
		t.Maintenance = append(t.Maintenance, MaintenanceRow{Kind: "retraction", Of: fmt.Sprint(r.Offset), Key: shortKey(r.Key),
			Why: fmt.Sprintf("every record under this key was rejected: the owner tombstones it %s after %s", protocol.RetractionGrace, report.FormatTime(r.At))})
	}
	t.Maintenance = append(t.Maintenance, doneMaintenance(st.Maintenance, nil)...)
	t.Rejected, t.Maintenance = rejectedRows(st.Rejected, repairing, retracting, retractedBy(st.Maintenance), t.Maintenance)
	return t
}

// doneMaintenance lists the records the fleet wrote (status "maintenance"),
// leaving out the offsets in skip.
func doneMaintenance(ms []report.MaintenanceRecord, skip map[string]bool) []MaintenanceRow {
	var out []MaintenanceRow
	for _, m := range ms {
		if skip[fmt.Sprint(m.Offset)] {
			continue
		}
		why := report.SingleLine(m.Reason)
		if m.Actor != "" {
			why += " (by " + m.Actor + ", " + report.FormatTime(m.At) + ", " + string(m.Verdict) + ")"
		}
		out = append(out, MaintenanceRow{Kind: m.Kind, Done: true, Offset: fmt.Sprint(m.Offset), Of: "-", Key: shortKey(m.Key), Why: why})
	}
	return out
}

// retractedBy maps each key a retraction tombstone was written for to its
// offset.
func retractedBy(ms []report.MaintenanceRecord) map[string]int64 {
	out := map[string]int64{}
	for _, m := range ms {
		if m.Kind == "retraction" {
			out[m.Key] = m.Offset
		}
	}
	return out
}

// rejectedRows lists the rejected records with what became of each, and
// adds to maint the maintenance they show was done: a tombstone on a key of
// rejected records is a retraction.
func rejectedRows(rs []report.RejectedRecord, repairing, retracting map[string]bool, retracted map[string]int64, maint []MaintenanceRow) ([]RejectedRow, []MaintenanceRow) {
	retractedAt := map[string]int64{}
	for k, o := range retracted {
		retractedAt[k] = o
	}
	rejectedUnder := map[string][]int64{}
	for _, r := range rs {
		if r.Reason == projector.ReasonTombstone && len(rejectedUnder[r.Key]) > 0 {
			retractedAt[r.Key] = r.Offset
			maint = append(maint, MaintenanceRow{Kind: "retraction", Done: true, Offset: fmt.Sprint(r.Offset),
				Of: offsetList(rejectedUnder[r.Key]), Key: shortKey(r.Key),
				Why: "tombstone for a key whose every record was rejected: compaction erases them"})
		}
		rejectedUnder[r.Key] = append(rejectedUnder[r.Key], r.Offset)
	}
	out := make([]RejectedRow, 0, len(rs))
	for _, r := range rs {
		row := RejectedRow{Offset: r.Offset, At: report.FormatTime(r.At), Actor: report.OrDash(r.Actor), Reason: r.Reason,
			Key: shortKey(r.Key), Detail: report.SingleLine(r.Detail)}
		switch {
		case r.Reason == projector.ReasonOverwritesAccepted && repairing[r.Key]:
			row.Fate = "repair pending"
		case r.Reason == projector.ReasonOverwritesAccepted:
			row.Fate = "repaired: the accepted record was appended again"
		case r.Reason == projector.ReasonTombstone && retractedAt[r.Key] == r.Offset:
			row.Fate = "is a retraction"
		case retractedAt[r.Key] > r.Offset:
			row.Fate = fmt.Sprintf("retracted at %d", retractedAt[r.Key])
		case retracting[r.Key]:
			row.Fate = "retraction pending"
		case r.Reason == projector.ReasonNewerSchema || r.Reason == projector.ReasonUnknownEvent:
			row.Fate = "kept for a newer kcleanup"
		default:
			row.Fate = "changed nothing"
		}
		out = append(out, row)
	}
	return out, maint
}

func offsetList(offs []int64) string {
	s := ""
	for i, o := range offs {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprint(o)
	}
	return s
}
