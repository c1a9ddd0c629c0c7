package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/report/page"
	"github.com/kcleanup/kcleanup/worker"
)

// shortPlanID is how many hex digits of a plan ID tables show where space is short (JSON
// always has the full ID); history --plan takes any unique prefix, so what a table shows can be
// pasted back.
const shortPlanID = 12

func newHistoryCmd(g *globalOptions) *cobra.Command {
	var dataTopic, plan string
	var full bool
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List every control record in log order with the verdict the log gave it",
		Long: `history is the audit of every decision: each record of the control topic, in log order, with
its verdict (accepted, duplicate, or rejected and why), the time and the actor the record names.
A rejected record changed nothing; it is listed so that nobody has to wonder why.

--plan keeps the records of one plan (a unique prefix of its ID is enough). Name the control
topic with --control-topic, or the data topic with --topic.

A key or a detail longer than a view shows (80 and 300 bytes in the table, 1024 in JSON, where
keyBytes and detailBytes then give the full length) is cut and ends with "… (N bytes)"; --all
shows every one whole.

-o html writes the audit report instead: one self-contained HTML file (no external asset) with
the boundary per partition, every operation's timeline, the rejected records, the fleet's repairs
and retractions, and every record with its verdict. It holds no clock but the records' own times
and the offset read to, so the same log gives the same file, byte for byte.`,
		Example: `  kcleanup history --topic action-state
  kcleanup history --topic action-state --plan 3f2a9c81d0e4
  kcleanup history --control-topic action-state.kcleanup -o json
  kcleanup history --topic action-state -o html > report.html`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctl, err := g.readControlTopic(dataTopic)
			if err != nil {
				return err
			}
			if plan != "" && g.output == outputHTML {
				return usageError(errors.WithHint(errors.New("--plan and -o html: the audit report covers the whole history"),
					"leave out --plan; the report lists every operation, or use -o table with --plan"))
			}
			if plan != "" && !isHexPrefix(plan) {
				return usageError(errors.WithHintf(
					errors.Newf("--plan %q is not a plan ID: expected lowercase hex digits (a prefix of the 64-digit ID)", plan),
					"copy the plan ID from `kcleanup status` or from the plan file's \"planId\""))
			}
			return runHistory(cmd.Context(), cmd.OutOrStdout(), *g, ctl, plan, full)
		},
	}
	cmd.Flags().BoolVar(&full, flagAll, false, "show keys and details whole (views cut long ones, saying their length)")
	cmd.Flags().StringVar(&dataTopic, flagTopic, "", "data `topic` whose control topic (<topic>.kcleanup) to read")
	cmd.Flags().StringVar(&plan, "plan", "", "show only the records of this plan (`ID` or a unique prefix of it)")
	return cmd
}

// historySchemaVersion is the version of historyDoc (docs/schema/history.schema.json). Version
// 2: key and detail are cut at 1024 bytes unless --all, keyBytes and detailBytes say so.
// Version 3: maintenance (kind, actor, reason) on the fleet's own repairs and retractions.
// Version 4: event may be a mirror event (MIRROR_ATTACHED, MIRROR_DETACHED; no planId) or the
// event a newer build's key names.
// Version 5: operatorReason, why the operator wrote a PLANNED or COMMITTED (apply --reason).
const historySchemaVersion = 5

// historyDoc is `kcleanup history -o json`: the verdicts, wrapped in an object like every
// kcleanup document (output.go).
type historyDoc struct {
	SchemaVersion int    `json:"schemaVersion"`
	ControlTopic  string `json:"controlTopic"`
	// ReadTo is the offset after the last control record folded.
	ReadTo int64 `json:"readTo"`
	// PlanID is the full ID of the plan --plan selected.
	PlanID   string         `json:"planId,omitempty"`
	Verdicts []verdictEntry `json:"verdicts"`
	// FlinkAgents, for a control topic in Flink Agents' format, lists its
	// records as the job folds them (verdicts is then empty: kcleanup's fold
	// rejects every such record). docs/flink-agents.md.
	FlinkAgents []flinkHistoryEntry `json:"flinkAgents,omitempty"`
}

// flinkHistoryEntry is one record of a Flink Agents control topic and what
// the job's fold made of it.
type flinkHistoryEntry struct {
	Offset int64  `json:"offset"`
	Key    string `json:"key"`
	Status string `json:"status,omitempty"`
	PlanID string `json:"planId,omitempty"`
	// Verdict is "folded", "fails" (the job's fold stops here: Error says
	// why) or "unread" (after a failure the job reads no further).
	Verdict string             `json:"verdict"`
	Error   *report.FlinkError `json:"error,omitempty"`
}

// verdictEntry is one projector.Verdict in JSON.
type verdictEntry struct {
	Offset int64  `json:"offset"`
	Key    string `json:"key"`
	// KeyBytes is the length of a key cut to 1024 bytes (absent when whole).
	KeyBytes int               `json:"keyBytes,omitempty"`
	Event    events.Event      `json:"event,omitempty"`
	PlanID   string            `json:"planId,omitempty"`
	Verdict  projector.Outcome `json:"verdict"`
	Reason   projector.Reason  `json:"reason,omitempty"`
	Detail   string            `json:"detail"`
	// DetailBytes is the length of a detail cut to 1024 bytes (absent when whole).
	DetailBytes int `json:"detailBytes,omitempty"`
	// At is the record's "at" (or, for a value that could not be decoded, its Kafka
	// timestamp), RFC 3339; absent when neither is known.
	At    *time.Time `json:"at,omitempty"`
	Actor string     `json:"actor,omitempty"`
	// OperatorReason is why the operator wrote the record (apply --reason, submit --reason);
	// absent when it says none.
	OperatorReason string `json:"operatorReason,omitempty"`
	// Maintenance is set on a record the worker fleet wrote to keep the log
	// safe to compact (a repair, a retraction tombstone), from its headers:
	// Actor is then the worker.
	Maintenance *projector.Maintenance `json:"maintenance,omitempty"`
}

func runHistory(ctx context.Context, w io.Writer, g globalOptions, controlTopic, plan string, full bool) error {
	// history is the one reader that shows every record: it replays with the audit.
	_, proj, done, err := g.openProjection(ctx, controlTopic, projector.KeepAudit())
	if err != nil {
		return err
	}
	defer done()

	if fold := proj.Flink(); fold != nil && g.output != outputHTML {
		return flinkHistory(w, g, proj, fold, plan)
	}
	audit := proj.State.Audit()
	if g.output == outputHTML {
		return writeReport(w, proj, audit)
	}
	doc := historyDoc{SchemaVersion: historySchemaVersion, ControlTopic: controlTopic, ReadTo: proj.Next, Verdicts: []verdictEntry{}}
	if plan != "" {
		if doc.PlanID, err = resolvePlanID(plan, audit, controlTopic); err != nil {
			return err
		}
	}
	// A COMMITTED its writer stamped ahead of the broker says so (docs/design.md §12).
	ahead := map[int64]projector.Ahead{}
	for _, a := range proj.State.Ahead(report.DefaultAheadTolerance) {
		ahead[a.Offset] = a
	}
	for _, v := range audit {
		if doc.PlanID != "" && v.PlanID != doc.PlanID {
			continue
		}
		if a, ok := ahead[v.Offset]; ok {
			v.Detail += fmt.Sprintf("; CLOCK AHEAD: stamped %s ahead of the broker's time of the record (%s): the writer's clock runs ahead",
				a.Lead().Round(time.Second), a.Appended.UTC().Format(time.RFC3339))
		}
		e := verdictEntry{Offset: v.Offset, Event: v.Event, PlanID: v.PlanID,
			Verdict: v.Outcome, Reason: v.Reason, Actor: v.Actor, OperatorReason: v.OperatorReason, Maintenance: v.Maintenance}
		if m := v.Maintenance; m != nil && m.Actor != "" {
			e.Actor = m.Actor
		}
		if g.output == outputJSON {
			e.Key, e.KeyBytes = clipJSON(v.Key, full)
			e.Detail, e.DetailBytes = clipJSON(v.Detail, full)
		} else {
			e.Key, e.Detail = v.Key, v.Detail // printHistory clips for the table
		}
		if !v.At.IsZero() {
			at := v.At.UTC()
			e.At = &at
		}
		doc.Verdicts = append(doc.Verdicts, e)
	}
	if g.output == outputJSON {
		return writeJSON(w, doc)
	}
	return printHistory(w, doc, full)
}

// writeReport writes the audit report (worker/console) of what the read gave.
func writeReport(w io.Writer, proj *worker.Projection, audit []projector.Verdict) error {
	return page.Render(w, page.FromLog(report.StatusOf(proj.Source()), audit))
}

// resolvePlanID expands a plan ID prefix to the one plan of the log that has it.
func resolvePlanID(prefix string, audit []projector.Verdict, controlTopic string) (string, error) {
	var ids []string
	for _, v := range audit {
		if strings.HasPrefix(v.PlanID, prefix) && !slices.Contains(ids, v.PlanID) {
			ids = append(ids, v.PlanID)
		}
	}
	switch len(ids) {
	case 1:
		return ids[0], nil
	case 0:
		return "", errors.WithHintf(errors.Newf("no record of control topic %s names a plan %s", controlTopic, prefix),
			"`kcleanup status --control-topic %s` lists the plans of this control topic", controlTopic)
	}
	return "", usageError(errors.WithHint(
		errors.Newf("--plan %s matches %d plans: %s", prefix, len(ids), strings.Join(ids, ", ")),
		"give more digits of the plan ID"))
}

func isHexPrefix(s string) bool {
	if len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func printHistory(w io.Writer, doc historyDoc, full bool) error {
	detail, actor := report.SingleLine, report.SingleLine
	if !full {
		detail = func(s string) string { return report.SingleLine(clip(s, tableDetailLimit)) }
		actor = func(s string) string { return report.SingleLine(clip(s, tableKeyLimit)) }
	}
	what := "records"
	if doc.PlanID != "" {
		what = "records of plan " + doc.PlanID
	}
	fmt.Fprintf(w, "Control topic %s, %s, in log order (read to offset %d):\n", doc.ControlTopic, what, doc.ReadTo)
	if len(doc.Verdicts) == 0 {
		fmt.Fprintln(w, "  none: the control topic is empty")
		return nil
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "  OFFSET\tAT\tEVENT\tPLAN\tVERDICT\tACTOR\tDETAIL")
	for _, v := range doc.Verdicts {
		verdict, what := string(v.Verdict), v.Detail
		if v.Reason != "" {
			verdict += " (" + string(v.Reason) + ")"
		}
		if m := v.Maintenance; m != nil {
			// The fleet's own upkeep, not another writer's bad record.
			verdict, what = "maintenance ("+m.Kind+")", m.Reason
		} else if v.Event.CarriesReason() && v.Actor != "" {
			what += "; " + report.WhyText(v.OperatorReason) // who is the ACTOR column
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Offset, formatTimePtr(v.At), report.OrDash(string(v.Event)),
			report.OrDash(shorten(v.PlanID, shortPlanID)), verdict, report.OrDash(actor(v.Actor)), detail(what))
	}
	return tw.Flush()
}

func formatTimePtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return report.FormatTime(*t)
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// flinkHistory is history for a control topic in Flink Agents' format: each
// record and what the job's own fold made of it.
func flinkHistory(w io.Writer, g globalOptions, proj *worker.Projection, fold *flinkagents.Fold, plan string) error {
	doc := historyDoc{SchemaVersion: historySchemaVersion, ControlTopic: proj.Topic, ReadTo: proj.Next, Verdicts: []verdictEntry{}, FlinkAgents: []flinkHistoryEntry{}}
	for _, e := range fold.Entries() {
		h := flinkHistoryEntry{Offset: e.Offset, Key: string(e.Key), Status: string(e.Status), PlanID: e.PlanID, Verdict: "folded"}
		switch {
		case e.Unread:
			h.Verdict = "unread"
		case e.Err != nil:
			h.Verdict, h.Error = "fails", report.FlinkErrorOf(e.Err)
		}
		if plan != "" && !strings.HasPrefix(h.PlanID, plan) && !strings.HasPrefix(h.Key, plan) {
			continue
		}
		doc.FlinkAgents = append(doc.FlinkAgents, h)
	}
	if g.output == outputJSON {
		return writeJSON(w, doc)
	}
	fmt.Fprintf(w, "Control topic %s, in Flink Agents' format, records in log order as the job folds them (read to offset %d):\n", doc.ControlTopic, doc.ReadTo)
	tw := newTable(w)
	fmt.Fprintln(tw, "  OFFSET\tSTATUS\tPLAN\tVERDICT\tDETAIL")
	for _, h := range doc.FlinkAgents {
		detail := "-"
		if h.Error != nil {
			detail = report.SingleLine(clip(h.Error.Message, tableDetailLimit))
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", h.Offset, report.OrDash(h.Status), report.OrDash(shorten(h.PlanID, shortPlanID)), h.Verdict, detail)
	}
	return tw.Flush()
}
