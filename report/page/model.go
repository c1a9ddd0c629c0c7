package page

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/report"
)

// View is what one page shows: the live console of a worker, or the audit
// report of one control topic. Both are rendered by the same templates.
type View struct {
	Title string
	// Live pages poll for updates; the report is a file and never does.
	Live bool
	// Worker is the replica serving the console (nil in a report).
	Worker *Replica
	// Report says what the report was read from (nil on the console).
	Report *ReportInfo
	Topics []Topic
}

// Replica is the worker that serves the console, and its fleet.
type Replica struct {
	Group, Actor string
	Ready        bool
	// Members is the consumer group as the replica last described it;
	// FleetNote says when, or why it could not.
	Members   []Member
	FleetNote string
}

// Member is one replica of the fleet.
type Member struct {
	// Name is the replica's --replica-name; ID its member ID in the group.
	Name, ID, Host, Started string
	Owns                    string
	Self                    bool
}

// ReportInfo is the provenance of a report: nothing but the log.
type ReportInfo struct {
	ControlTopic string
	ReadTo       int64
	Records      int
}

// Topic is everything shown for one control topic.
// AnyUnknown says whether a bar has a "not known" part (the legend names it then).
func (t Topic) AnyUnknown() bool {
	return slices.ContainsFunc(t.Partitions, func(b Bar) bool { return b.UnknownPct != "0.00" })
}

type Topic struct {
	// Anchor is the HTML id of its section.
	Anchor       string
	ControlTopic string
	DataTopic    string
	TopicID      string
	ReadTo       int64
	Alerts       []Alert
	Fleet        *Fleet // console only
	Partitions   []Bar
	// BarsNote says where the bars' log starts come from.
	BarsNote   string
	Operations []Lane
	// OperationsNote and RejectedNote say what a default view left out.
	OperationsNote, RejectedNote string
	Rejected                     []RejectedRow
	Maintenance                  []MaintenanceRow
	// Pins are the pinned recovery points (issue 22), in log order.
	Pins []PinRow
	// Records is every record in log order (report only).
	Records []RecordRow
}

// Alert is one thing an operator should know, worded as the CLI words it,
// with what to do next.
type Alert struct {
	Level string // "bad", "warn" or "info"
	Title string
	Text  string
	Hint  string
}

// Fleet is this replica's part in the fleet for one control topic.
type Fleet struct {
	// Owner names the replica that owns the control topic.
	Owner      string
	Owned      bool
	CaughtUp   bool
	CaughtUpAt string
	LagRecords int64
	ReadError  string
	// Mirror is the attached mirror's state, when the status document has
	// one (a field added by the Flink Agents mirror).
	Mirror string
}

// Bar is one partition of the data topic.
type Bar struct {
	Partition int32
	// LogStart and HighWatermark are "" when unknown.
	LogStart, HighWatermark string
	Boundary                string
	SetBy, SetByShort       string
	// Widths of the segments, in percent of the scale: deleted (below the
	// log start), below the boundary but still there, kept, and not known:
	// without a high watermark (the audit report, or before the first
	// listing) nothing past the boundary and the log start is known, and
	// the bar says so instead of stretching "deleted" or "kept" over it.
	GonePct, BelowPct, KeptPct, UnknownPct string
	BoundaryPct                            string
	Scale                                  int64
	Marks                                  []Mark
	Note                                   string
	NoteLevel                              string
}

// Mark is a plan's offset on a partition's bar.
type Mark struct {
	Plan, PlanShort string
	Offset          int64
	Pct             string
	State           fsm.State
}

// Lane is one operation on the timeline.
type Lane struct {
	PlanID, PlanShort string
	State             fsm.State
	RecoveryPoint     string
	Offsets           string
	Boundary          string
	LogStart          string
	Steps             []StepMark
	// Total is the time from the first step to the last, "" with one step.
	Total string
	// Flag is "blocked", "stuck" or "pending" (COMMITTED or DELETING), or
	// "" when nothing needs attention; FlagText says why, Hint what to do.
	Flag, FlagText, Hint string
	Attempts             int
}

// StepMark is one transition: an accepted record (or one a later record
// implied), or a rejected record that named this plan.
type StepMark struct {
	Event   events.Event
	At      string
	Actor   string
	Verdict string
	// Took is the time since the previous step, "" for the first.
	Took    string
	Implied bool
	Bad     bool
	Offset  string
	// TakenOverFrom names the COMMITTED's actor on a DELETING or APPLIED another actor wrote
	// (a worker that took over an operation someone else committed): the audit says who
	// deleted, not only who committed.
	TakenOverFrom string
	// Why is the operator's reason on a PLANNED or COMMITTED ("why: …", or "why: (no reason
	// given)"): the audit says who committed each plan and why.
	Why string
}

// RejectedRow is one rejected record.
type RejectedRow struct {
	Offset int64
	At     string
	Actor  string
	Reason projector.Reason
	Key    string
	Detail string
	// Fate says what the fleet did or will do about it.
	Fate string
}

// MaintenanceRow is one thing the fleet did or will do to keep the
// compacted log equal to the full one: a repair or a retraction.
type MaintenanceRow struct {
	Kind   string // "repair" or "retraction"
	Done   bool
	Offset string // where it was written, "" while pending
	Of     string // the offset of the record it repairs or retracts
	Key    string
	Why    string
}

// RecordRow is one record of the log with its verdict, as `kcleanup
// history` prints it.
type RecordRow struct {
	Offset  int64
	At      string
	Event   string
	Plan    string
	Verdict string
	Bad     bool
	Actor   string
	Detail  string
}

// StuckAfter is how long an operation may stay COMMITTED or DELETING on a
// live console before it is shown as stuck.
const StuckAfter = 5 * time.Minute

// shortPlanID is how many hex digits of a plan ID the CLI's tables show.
const shortPlanID = 12

func short(id string) string {
	if len(id) <= shortPlanID {
		return id
	}
	return id[:shortPlanID]
}

// formatDuration rounds a step's duration for people: milliseconds below
// a second, then seconds.
func formatDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + formatDuration(-d)
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// maxKey is how much of a key a view shows: any producer may write a key
// of any length.
const maxKey = 200

func clip(s string) string { return report.Clip(s, maxKey) }

// shortKey shows a control key as the CLI shows plan IDs in tables: a key
// "<planId>/<EVENT>" with the plan ID's first 12 digits; any other key as
// it is, clipped.
func shortKey(key string) string {
	if id, e, err := events.ParseKey([]byte(key)); err == nil {
		return short(id) + "…/" + string(e)
	}
	return clip(key)
}

func anchor(controlTopic string) string {
	var b strings.Builder
	b.WriteString("t-")
	for _, r := range controlTopic {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func verdictText(o projector.Outcome, r projector.Reason) string {
	if r != "" {
		return string(o) + " (" + string(r) + ")"
	}
	return string(o)
}

// pending is true for the states a worker finishes.
func pending(s fsm.State) bool { return s.Unfinished() }

// pendingHint is the CLI status's sentence for COMMITTED or DELETING.
const pendingHint = "a running worker finishes it, or re-run `kcleanup apply PLAN.json`"

// header fills what every topic shows from the status document.
func header(st report.Status) Topic {
	return Topic{
		Anchor:       anchor(st.ControlTopic),
		ControlTopic: st.ControlTopic,
		DataTopic:    st.Topic,
		TopicID:      st.TopicID,
		ReadTo:       st.ReadTo,
		Pins:         pinRows(st.Pins),
	}
}

// PinRow is one pinned recovery point as the pages show it.
type PinRow struct {
	ID, RecoveryPoint, Offsets, State, Expires, At, Actor, Reason string
	// Protects says what it protects nothing on (void partitions) and what it refused.
	Void, Rejected string
}

func pinRows(pins []report.PinStatus) []PinRow {
	var out []PinRow
	for _, p := range pins {
		r := PinRow{ID: short(p.PinID), RecoveryPoint: clip(p.RecoveryPoint), Offsets: p.Offsets.String(), State: p.State,
			Expires: "never", At: report.FormatTime(p.At), Actor: report.OrDash(clip(p.Actor)), Reason: report.OrDash(clip(report.SingleLine(p.Reason)))}
		if p.Expires != nil {
			r.Expires = report.FormatTime(*p.Expires)
		}
		var void []string
		for _, v := range p.Void {
			void = append(void, fmt.Sprintf("partition %d (boundary %d, set by plan %s)", v.Partition, v.Boundary, short(v.SetBy)))
		}
		r.Void = strings.Join(void, "; ")
		if n := len(p.RejectedCommits); n > 0 {
			r.Rejected = fmt.Sprintf("%d commit(s) refused", n)
		}
		out = append(out, r)
	}
	return out
}

// omitted says what a default view of the status document left out.
func omitted(st report.Status, t *Topic) {
	if st.Complete {
		return
	}
	var notes []string
	if n := st.OperationsOmitted - st.StalePlanned; n > 0 {
		notes = append(notes, fmt.Sprintf("%d older APPLIED operation(s) not shown", n))
	}
	if st.StalePlanned > 0 {
		notes = append(notes, fmt.Sprintf("%d PLANNED untouched for more than %d days not shown (nothing committed: an interrupted apply or a plan nobody applied)",
			st.StalePlanned, int(report.StalePlanned.Hours()/24)))
	}
	if len(notes) > 0 {
		t.OperationsNote = strings.Join(notes, "; ") + " (" + countsText(st.OperationCounts) + " in all)"
	}
	if st.RejectedOmitted > 0 {
		t.RejectedNote = fmt.Sprintf("%d older rejected record(s) not shown", st.RejectedOmitted)
	}
}

func countsText(counts map[fsm.State]int) string {
	var parts []string
	for _, s := range fsm.OperationStates() {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	return strings.Join(parts, ", ")
}

// stateAlerts are the alerts the status document alone supports.
func stateAlerts(st report.Status) []Alert {
	var out []Alert
	if st.Degraded {
		out = append(out, Alert{Level: "bad", Title: "Degraded",
			Text: st.DegradedReason + ": no recovery point is validated and no worker deletes until kcleanup is upgraded",
			Hint: "upgrade every kcleanup that reads this control topic (workers, CLI, pipelines) to the version that wrote the record; `kcleanup history` shows it"})
	}
	if st.AtRisk {
		out = append(out, Alert{Level: "bad", Title: "History at risk",
			Text: report.SingleLine(st.AtRiskReason) + "; until it is resolved the recovery gate answers \"cannot tell\"",
			Hint: "`kcleanup doctor` names the records; a worker repairs what it can, and `kcleanup history` shows each record"})
	}
	if st.Topic == "" {
		out = append(out, Alert{Level: "info", Title: "Not bound yet",
			Text: "no plan was accepted yet: the first accepted PLANNED binds this control topic to its data topic",
			Hint: "`kcleanup plan` then `kcleanup apply PLAN.json`"})
	}
	if st.Format == projector.FormatFlinkAgents || st.Format == projector.FormatMixed {
		out = append(out, Alert{Level: "warn", Title: "Flink Agents records",
			Text: fmt.Sprintf("this control topic holds records in Flink Agents' format (%s): kcleanup's fold shown here rejects them", st.Format),
			Hint: "`kcleanup status` shows the topic as the Flink Agents job folds it"})
	}
	if st.UnrepairedKeys > 0 {
		out = append(out, Alert{Level: "warn", Title: "Repairs pending",
			Text: fmt.Sprintf("%d accepted record(s) listed for repair (key overwritten, or out of order)", st.UnrepairedKeys),
			Hint: "a worker or the next apply re-appends them; if this stays, check that a worker owns this control topic"})
	}
	return out
}

// bars builds one bar per partition from the boundary, the plans and, where
// known, the log starts and high watermarks.
func bars(st report.Status, logStart, hwm events.Offsets) []Bar {
	parts := map[int32]bool{}
	for p := range st.Boundary {
		parts[p] = true
	}
	for p := range logStart {
		parts[p] = true
	}
	for p := range hwm {
		parts[p] = true
	}
	for _, op := range st.Operations {
		for p := range op.Offsets {
			parts[p] = true
		}
	}
	// raising: partitions an unfinished operation will delete on.
	raising := map[int32]bool{}
	for _, op := range st.Operations {
		if pending(op.State) {
			for p := range op.Offsets {
				raising[p] = true
			}
		}
	}
	ps := make([]int32, 0, len(parts))
	for p := range parts {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	out := make([]Bar, 0, len(ps))
	for _, p := range ps {
		b := Bar{Partition: p, Boundary: "-"}
		bound, hasBound := st.Boundary[p]
		ls, hasLS := logStart[p]
		hw, hasHW := hwm[p]
		scale := max(bound, ls, hw)
		for _, op := range st.Operations {
			if off, ok := op.Offsets[p]; ok {
				scale = max(scale, off)
				b.Marks = append(b.Marks, Mark{Plan: op.PlanID, PlanShort: short(op.PlanID), Offset: off, State: op.State})
			}
		}
		slices.SortFunc(b.Marks, func(x, y Mark) int {
			return cmp.Or(cmp.Compare(x.Offset, y.Offset), cmp.Compare(x.Plan, y.Plan))
		})
		scale = max(scale, 1)
		if !hasHW { // room for "not known" past the last offset the log knows
			scale += max(scale/4, 1)
		}
		b.Scale = scale
		pct := func(v int64) string { return fmt.Sprintf("%.2f", 100*float64(v)/float64(scale)) }
		for i := range b.Marks {
			b.Marks[i].Pct = pct(b.Marks[i].Offset)
		}
		if hasBound {
			b.Boundary = fmt.Sprint(bound)
			b.SetBy, b.SetByShort = st.BoundarySetBy[p], short(st.BoundarySetBy[p])
			b.BoundaryPct = pct(bound)
		}
		if hasLS {
			b.LogStart = fmt.Sprint(ls)
		}
		if hasHW {
			b.HighWatermark = fmt.Sprint(hw)
		}
		// end: the last offset whose fate is known. Without a high watermark
		// that is the boundary or the log start; past it, nothing is claimed.
		end := max(bound, ls)
		if hasHW {
			end = hw
		}
		gone := min(ls, end)
		below := max(min(bound, end)-gone, 0)
		b.GonePct, b.BelowPct, b.KeptPct = pct(gone), pct(below), pct(max(end-gone-below, 0))
		b.UnknownPct = pct(0)
		if !hasHW {
			b.UnknownPct = pct(scale - end)
		}
		switch {
		case hasBound && hasHW && hw < bound:
			b.NoteLevel = "bad"
			b.Note = fmt.Sprintf("high watermark %d is below the boundary %d: the data topic was recreated or truncated; recovery is refused; run `kcleanup doctor`", hw, bound)
		case hasBound && hasLS && ls < bound && raising[p]:
			b.NoteLevel = "info"
			b.Note = fmt.Sprintf("records %d to %d are below the boundary: an operation not APPLIED yet deletes them", ls, bound-1)
		case hasBound && hasLS && ls < bound:
			b.NoteLevel = "warn"
			b.Note = fmt.Sprintf("log start %d is below the boundary %d though no operation is pending on this partition: records below the boundary were not deleted (was the topic recreated?); run `kcleanup doctor`", ls, bound)
		}
		out = append(out, b)
	}
	return out
}

// sortLanes orders operations by the time of their first step, then plan
// ID: an order a compacted log keeps too.
func sortLanes(ls []Lane, first map[string]time.Time) {
	slices.SortStableFunc(ls, func(a, b Lane) int {
		if c := first[a.PlanID].Compare(first[b.PlanID]); c != 0 {
			return c
		}
		return cmp.Compare(a.PlanID, b.PlanID)
	})
}

// step is one transition of a lane, before rendering.
type step struct {
	event   events.Event
	at      time.Time
	actor   string
	reason  string // the operator's (apply --reason)
	verdict string
	implied bool
	bad     bool
	offset  int64 // -1: not shown
}

// laneSteps renders steps with the duration of each since the previous
// timed step; rejected steps do not start a duration.
func laneSteps(steps []step) ([]StepMark, string) {
	out := make([]StepMark, 0, len(steps))
	var prev, first, last time.Time
	committedBy := ""
	for _, s := range steps {
		m := StepMark{Event: s.event, At: report.FormatTime(s.at), Actor: report.OrDash(s.actor), Verdict: s.verdict, Implied: s.implied, Bad: s.bad}
		if !s.implied && !s.bad && s.actor != "" {
			if s.event.CarriesReason() {
				m.Why = report.Clip(report.WhyText(s.reason), 200) // the records table has it whole
			}
			switch s.event {
			case events.Committed:
				committedBy = s.actor
			case events.Deleting, events.Applied:
				if committedBy != "" && s.actor != committedBy {
					m.TakenOverFrom = committedBy
				}
			}
		}
		if s.offset >= 0 {
			m.Offset = fmt.Sprint(s.offset)
		}
		if s.implied {
			m.At, m.Actor = "", ""
		}
		if !s.implied && !s.bad && !s.at.IsZero() {
			if !prev.IsZero() {
				m.Took = "+" + formatDuration(s.at.Sub(prev))
			}
			prev = s.at
			if first.IsZero() {
				first = s.at
			}
			last = s.at
		}
		out = append(out, m)
	}
	total := ""
	if !first.IsZero() && last.After(first) {
		total = formatDuration(last.Sub(first))
	}
	return out, total
}

// lifecycleOrder places implied steps where the lifecycle has them.
func lifecycleOrder(e events.Event) int {
	if i := fsm.EventOrder(e); i >= 0 {
		return i
	}
	return len(fsm.Events())
}

func lane(op report.OperationStatus) Lane {
	l := Lane{PlanID: op.PlanID, PlanShort: short(op.PlanID), State: op.State,
		RecoveryPoint: op.SourceRecoveryPoint, Offsets: op.Offsets.String(), Attempts: op.DeleteAttempts}
	if op.Boundary != nil {
		l.Boundary = op.Boundary.String()
	}
	if op.LogStart != nil {
		l.LogStart = op.LogStart.String()
	}
	return l
}

// withImplied inserts the implied steps before the first step that comes
// later in the lifecycle.
func withImplied(steps []step, implied []events.Event) []step {
	for _, e := range implied {
		at := len(steps)
		for i, s := range steps {
			if !s.bad && lifecycleOrder(s.event) > lifecycleOrder(e) {
				at = i
				break
			}
		}
		steps = slices.Insert(steps, at, step{event: e, verdict: "implied", implied: true, offset: -1})
	}
	return steps
}

// keyPlan is the plan ID a record key names, "" when it names none.
func keyPlan(key string) string {
	id, _, err := events.ParseKey([]byte(key))
	if err != nil {
		return ""
	}
	return id
}

func keyEvent(key string) events.Event {
	_, e, err := events.ParseKey([]byte(key))
	if err != nil {
		return ""
	}
	return e
}
