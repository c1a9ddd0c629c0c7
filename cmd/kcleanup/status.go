package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"

	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
)

// flagTopic is the local --topic flag of the commands that read a control topic (status,
// history): the data topic whose default control topic, <topic>.kcleanup, is meant.
const flagTopic = "topic"

func newStatusCmd(g *globalOptions) *cobra.Command {
	var dataTopic string
	var all bool
	var tolerance time.Duration
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the committed boundary, the operations and the rejected records of a control topic",
		Long: `status reads the control topic from its beginning to its end (as the end was when the read
began) and shows what the log decided: the committed boundary of every partition and the plan
that set it, the operations and their state, the rejected records and why, whether the projection
is degraded (a record from a newer kcleanup), and the offset it read to. When a Flink Agents
mirror is attached, it also reads the mirror as the job would and says how it stands: in step,
lagging (by how much, and which plan it lacks), ahead, cannot be written, or pinned by an open
transaction (whose, kcleanup's writer or another producer's, and since when), with the reason and
the fix ("mirror" in -o json; docs/flink-agents.md). An operation COMMITTED or DELETING that the
control topic's unsafe settings block is shown BLOCKED, with the kafka-configs fix.

By default it stays short however long the history: every operation that is not APPLIED (but a
PLANNED untouched for more than 7 days: an interrupted apply nobody continued, only counted), the
20 most recent others, the 20 most recent rejected records, and counts of all of them by state and
by reason; a key or a detail longer than 1024 bytes is cut and ends with "… (N bytes)" (in JSON,
keyBytes and detailBytes give the length), and the table cuts keys at 80 bytes and details at 300.
--all lists every operation and every rejected record, every key and detail whole (the document a
worker serves at /v1/status?all=true).

Name the control topic with --control-topic, or the data topic with --topic (the control topic is
then <topic>.kcleanup). With -o json it prints the document a worker serves at /v1/status
(docs/schema/status.schema.json; "complete" says whether it lists everything).`,
		Example: `  kcleanup status --topic action-state
  kcleanup status --control-topic action-state.kcleanup -o json
  kcleanup status --topic action-state --all`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctl, err := g.readControlTopic(dataTopic)
			if err != nil {
				return err
			}
			if tolerance < 0 {
				return usageError(errors.Newf("invalid --%s %s: negative", flagClockTolerance, tolerance))
			}
			return runStatus(cmd.Context(), cmd.OutOrStdout(), *g, ctl, all, tolerance)
		},
	}
	cmd.Flags().DurationVar(&tolerance, flagClockTolerance, report.DefaultAheadTolerance,
		"show a COMMITTED whose \"at\" runs further than this ahead of the time the broker appended it")
	cmd.Flags().BoolVar(&all, flagAll, false, "list every operation and rejected record, keys and details whole (by default: those not APPLIED, the most recent, and counts; long text cut)")
	cmd.Flags().StringVar(&dataTopic, flagTopic, "", "data `topic` whose control topic (<topic>.kcleanup) to read")
	return cmd
}

// readControlTopic is the control topic a read-only command is about: --control-topic when
// given, else the default control topic of --topic. One of them is required.
func (g globalOptions) readControlTopic(dataTopic string) (string, error) {
	if dataTopic != "" {
		return g.controlTopicOf(dataTopic)
	}
	if g.controlTopic == "" {
		return "", usageError(errors.WithHint(
			errors.New("which control topic? neither --topic nor --control-topic is given"),
			"give the data topic (--topic action-state reads action-state.kcleanup) or the control topic itself (--control-topic)"))
	}
	return g.controlTopic, nil
}

// openProjection connects to the cluster and reads a control topic to its end within --timeout.
// The caller calls done when finished with both.
func (g globalOptions) openProjection(ctx context.Context, controlTopic string, opts ...projector.Option) (_ *worker.Cluster, _ *worker.Projection, done func(), _ error) {
	c, err := g.connect(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	proj, err := g.project(ctx, c, controlTopic, opts...)
	if err != nil {
		c.Close()
		return nil, nil, nil, err
	}
	return c, proj, func() { proj.Close(); c.Close() }, nil
}

func runStatus(ctx context.Context, w io.Writer, g globalOptions, controlTopic string, all bool, tolerance time.Duration) error {
	c, proj, done, err := g.openProjection(ctx, controlTopic)
	if err != nil {
		return err
	}
	defer done()
	proj.AheadTolerance = tolerance
	st := report.SummaryOf(proj.Source())
	if all {
		st = report.StatusOf(proj.Source())
	}
	if err := g.assessMirror(ctx, c, proj, &st); err != nil {
		return err
	}
	g.blockedBySettings(ctx, c, proj.State, &st)
	if st.Format == projector.FormatFlinkAgents || st.Format == projector.FormatNone {
		st.MirrorOf = g.mirrorOf(ctx, c, controlTopic) // a mirror before its first plan is empty
	}
	if g.output == outputJSON {
		return writeJSON(w, st)
	}
	return printStatus(w, st, all)
}

// printStatus renders the status document for people: a summary, then one table per section.
func printStatus(w io.Writer, st report.Status, full bool) error {
	if st.FlinkAgents != nil {
		return printFlinkStatus(w, st)
	}
	tw := newTable(w)
	fmt.Fprintf(tw, "Control topic:\t%s (read to offset %d, its end when the read began)\n", st.ControlTopic, st.ReadTo)
	if len(st.MirrorOf) > 0 {
		// An empty mirror: no boundary of its own to speak of; the control topic has the decisions.
		fmt.Fprintf(tw, "Mirror of:\t%s: the Flink Agents mirror kcleanup keeps for the job (empty: no plan applied yet); the decisions are the control topic's (kcleanup status --control-topic %s)\n",
			strings.Join(st.MirrorOf, ", "), st.MirrorOf[0])
		return tw.Flush()
	}
	if st.Topic != "" {
		fmt.Fprintf(tw, "Data topic:\t%s (topic ID %s)\n", st.Topic, st.TopicID)
	} else {
		fmt.Fprintf(tw, "Data topic:\tnone yet (the first accepted PLANNED binds this control topic to its data topic)\n")
	}
	if st.Degraded {
		fmt.Fprintf(tw, "Degraded:\tYES: %s\n", st.DegradedReason)
		fmt.Fprintf(tw, "\tno recovery point is validated and no worker deletes until kcleanup is upgraded\n")
	} else {
		fmt.Fprintf(tw, "Degraded:\tno\n")
	}
	if st.Format == projector.FormatMixed {
		fmt.Fprintf(tw, "Format:\tMIXED: kcleanup's records and Flink Agents' (bare plan-ID keys); neither fold holds, validate cannot tell, kcleanup writes nothing here\n")
	}
	if m := st.Mirror; m != nil {
		printMirror(tw, *m)
	}
	if g := st.MirrorGrace; g != nil {
		if g.Unset {
			fmt.Fprintf(tw, "Restore grace:\tNOT SET: the mirror's attachment (offset %d) predates the grace on the control topic; only a process's --restore-grace applies (set one: kcleanup mirror grace 15m --control-topic %s --reason …)\n", g.Offset, st.ControlTopic)
		} else {
			fmt.Fprintf(tw, "Restore grace:\t%s (the mirror's attachment, offset %d): every COMMITTED operation waits it out after the mirror shows it, before anything is deleted\n", time.Duration(g.Seconds)*time.Second, g.Offset)
		}
	}
	for _, h := range st.PinHolds {
		fmt.Fprintf(tw, "Held by pin:\t%s\n", report.SingleLine(h.Reason))
	}
	for _, a := range st.ClockAhead {
		fmt.Fprintf(tw, "Clock ahead:\tCOMMITTED of plan %s (offset %d) by %s is stamped %s, %s ahead of the broker's time of the record (%s): fix that host's clock; no deletion above a pin follows until the broker's clock passes it\n",
			a.PlanID, a.Offset, report.SingleLine(a.Actor), a.At.UTC().Format(time.RFC3339), (time.Duration(a.AheadSeconds * float64(time.Second))).Round(time.Second), a.Appended.UTC().Format(time.RFC3339))
	}
	if st.UnrepairedKeys > 0 {
		fmt.Fprintf(tw, "Unrepaired keys:\t%d accepted record(s) listed for repair (key overwritten, or out of order); a worker or the next apply re-appends them\n", st.UnrepairedKeys)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w)
	if len(st.Boundary) == 0 {
		fmt.Fprintln(w, "Boundary: none committed (every recovery point is allowed)")
	} else {
		fmt.Fprintln(w, "Boundary (records below it may be deleted; older recovery points are refused):")
		tw = newTable(w)
		fmt.Fprintln(tw, "  PARTITION\tBOUNDARY\tSET BY PLAN")
		for _, p := range st.Boundary.Partitions() {
			fmt.Fprintf(tw, "  %d\t%d\t%s\n", p, st.Boundary[p], shorten(st.BoundarySetBy[p], shortPlanID))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if err := printPins(w, st.Pins); err != nil {
		return err
	}
	if st.NoTombstones != nil {
		tw = newTable(w)
		for _, l := range report.DeclarationLines(st.NoTombstones) {
			fmt.Fprintf(tw, "%s:\t%s\n", l[0], l[1])
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if p := st.RetentionPolicy; p != nil && p.Active {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Retention policy %s (set %s by %s: %s):\n  the owner follows %s every %s, min advance %d; its last round: /v1/status on the owner, or kcleanup retention show\n",
			p.Name, p.At.Format(time.RFC3339), p.Actor, clip(p.Reason, report.TextLimit), strings.Join(p.Watch, ", "), p.Every, p.MinAdvance)
	}

	fmt.Fprintln(w)
	if len(st.Operations) == 0 && st.OperationsOmitted == 0 {
		fmt.Fprintln(w, "Operations: none")
	} else {
		fmt.Fprintf(w, "Operations: %s\n", countByState(st.OperationCounts))
		if n := st.OperationsOmitted - st.StalePlanned; n > 0 {
			fmt.Fprintf(w, "  showing every one not APPLIED and the %d most recent; %d older APPLIED not shown (--all lists them)\n",
				report.RecentOperations, n)
		}
		if st.StalePlanned > 0 {
			fmt.Fprintf(w, "  %d PLANNED untouched for more than %s not shown: an apply interrupted before its commit, or a submitted plan nobody applied; nothing was committed or deleted (--all lists them; `kcleanup apply PLAN.json` still continues one)\n",
				st.StalePlanned, staleAge)
		}
		tw = newTable(w)
		fmt.Fprintln(tw, "  PLAN\tSTATE\tRECOVERY POINT\tOFFSETS\tUPDATED\tBY\tCOMMITTED (ELSE PLANNED) BY: WHY")
		for _, op := range st.Operations {
			rp, by := op.SourceRecoveryPoint, op.UpdatedBy
			why, whyBy := op.Why()
			if why == "" {
				why = report.NoReason
			}
			why = whyBy + ": " + why
			if !full {
				rp, by, why = clip(rp, tableKeyLimit), clip(by, tableKeyLimit), clip(why, tableDetailLimit)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", op.PlanID, op.State, report.SingleLine(rp),
				op.Offsets.String(), report.FormatTime(op.UpdatedAt), report.SingleLine(by), report.SingleLine(why))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if pending := countPending(st.Operations); pending > 0 && len(st.Blocked) > 0 {
			// Never "re-run apply" where apply would refuse: the same rule blocks both.
			fmt.Fprintf(w, "  %d operation(s) COMMITTED or DELETING, blocked (below): neither a worker nor a re-run of `kcleanup apply` deletes until the cause is removed\n", pending)
		} else if pending > 0 {
			fmt.Fprintf(w, "  %d operation(s) COMMITTED or DELETING: a running worker finishes them, or re-run `kcleanup apply PLAN.json`\n", pending)
		}
		printBlocked(w, st.Blocked)
	}

	fmt.Fprintln(w)
	if len(st.Rejected) == 0 && st.RejectedOmitted == 0 {
		fmt.Fprintln(w, "Rejected records: none")
		return nil
	}
	fmt.Fprintf(w, "Rejected records: %d: %s (they changed nothing; `kcleanup history` shows them in context)\n",
		len(st.Rejected)+st.RejectedOmitted, countByReason(st.RejectedCounts))
	if st.RejectedOmitted > 0 {
		fmt.Fprintf(w, "  showing the %d most recent; %d older not shown (--all lists them)\n", len(st.Rejected), st.RejectedOmitted)
	}
	tw = newTable(w)
	fmt.Fprintln(tw, "  OFFSET\tREASON\tKEY\tDETAIL")
	for _, r := range st.Rejected {
		key, detail := r.Key, r.Detail
		if !full {
			key, detail = clipCut(key, r.KeyBytes, tableKeyLimit), clipCut(detail, r.DetailBytes, tableDetailLimit)
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", r.Offset, r.Reason, report.SingleLine(key), report.SingleLine(detail))
	}
	return tw.Flush()
}

// countByState summarizes operation counts in lifecycle order: "1 PLANNED, 2 APPLIED".
func countByState(n map[fsm.State]int) string {
	var parts []string
	for _, s := range fsm.OperationStates() {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
		}
	}
	return strings.Join(parts, ", ")
}

// countByReason summarizes rejection counts, most frequent first: "3 malformed, 1 tombstone".
func countByReason(n map[projector.Reason]int) string {
	reasons := slices.Collect(maps.Keys(n))
	slices.SortFunc(reasons, func(a, b projector.Reason) int {
		if n[a] != n[b] {
			return n[b] - n[a]
		}
		return strings.Compare(string(a), string(b))
	})
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%d %s", n[r], r)
	}
	return strings.Join(parts, ", ")
}

// staleAge is report.StalePlanned in words.
var staleAge = fmt.Sprintf("%d days", int(report.StalePlanned.Hours()/24))

func countPending(ops []report.OperationStatus) int {
	n := 0
	for _, op := range ops {
		if op.State.Unfinished() {
			n++
		}
	}
	return n
}

// assessMirror sets st.Mirror when a Flink Agents mirror is attached: the
// mirror read as the job reads it, against the boundary (within --timeout).
func (g globalOptions) assessMirror(ctx context.Context, c *worker.Cluster, proj *worker.Projection, st *report.Status) error {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	a, ok, err := c.AssessMirror(ctx, protocol.MirrorControlOf(proj.State), false, g.bootstrap())
	if err != nil {
		return g.unreachable(errors.Wrapf(err, "read the Flink Agents mirror"))
	}
	if ok {
		st.Mirror = &a
	}
	return nil
}

// blockedBySettings lists in st.Blocked the operations a worker would drive
// that the control topic's settings block, with the kafka-configs fix: what
// the owner's /v1/status shows, so that the operator sees it here without
// reading a worker's log. Other blocks (a worker's missing ACL) only the
// owner knows. Settings this principal may not read, or a read that fails,
// say nothing about the worker's: they add nothing.
func (g globalOptions) blockedBySettings(ctx context.Context, c *worker.Cluster, folded *projector.State, st *report.Status) {
	if st.FlinkAgents != nil || countPending(st.Operations) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	err := c.ControlTopicSafe(ctx, st.ControlTopic, g.bootstrap())
	if err != nil && errors.Is(err, protocol.ErrBlocked) && !worker.IsAuthorizationError(err) {
		st.Blocked = report.BlockedBySettings(*st, err.Error(), errors.GetAllHints(err))
		return
	}
	c.MarkTombstoneBlocks(ctx, folded, st, worker.DefaultTombstoneScanLimit)
}

// printBlocked is the status table's lines about blocked operations: each
// cause once, the plans it blocks, and its fixes.
func printBlocked(w io.Writer, blocked []report.BlockedOperation) {
	var reasons []string
	plans := map[string][]string{}
	hints := map[string][]string{}
	for _, b := range blocked {
		if _, ok := plans[b.Reason]; !ok {
			reasons = append(reasons, b.Reason)
			hints[b.Reason] = b.Hints
		}
		plans[b.Reason] = append(plans[b.Reason], b.PlanID)
	}
	for _, r := range reasons {
		fmt.Fprintf(w, "  BLOCKED: %s\n", report.SingleLine(r))
		fmt.Fprintf(w, "    plan(s): %s (they stay in their state until the cause is removed; a worker then finishes them)\n", strings.Join(plans[r], ", "))
		for _, h := range hints[r] {
			fmt.Fprintf(w, "    fix: %s\n", report.SingleLine(h))
		}
	}
}

// mirrorOf names the control topics, among those kcleanup finds without being told
// (worker.Cluster.ControlTopics: *.kcleanup), whose attached mirror is topic. Best effort
// within --timeout: a status that cannot tell shows the topic as Flink Agents' own.
func (g globalOptions) mirrorOf(ctx context.Context, c *worker.Cluster, topic string) []string {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	known, err := c.ControlTopics(ctx, true)
	if err != nil {
		return nil
	}
	var out []string
	for _, k := range known {
		if k.Mirror == topic {
			out = append(out, k.ControlTopic)
		}
	}
	return out
}

// printMirror is the status table's lines about the attached mirror.
func printMirror(tw io.Writer, m protocol.MirrorAssessment) {
	fmt.Fprintf(tw, "Flink Agents mirror:	%s (topic ID %s, attached at offset %d)\n", m.Topic, m.TopicID, m.AttachedAt)
	switch m.Standing {
	case protocol.MirrorInStep:
		if m.Plans == 0 {
			fmt.Fprintf(tw, "\tin step: no boundary yet, and the mirror holds no plan (a Flink Agents job refuses to recover from it until it does)\n")
		} else {
			fmt.Fprintf(tw, "\tin step: the job's effective boundary there is %s (%d plan(s))\n", m.Boundary, m.Plans)
		}
	case protocol.MirrorHeld: // not read: no lag to tell
		fmt.Fprintf(tw, "\tHELD: %s\n", report.SingleLine(m.Reason))
		fmt.Fprintf(tw, "\tfix: %s\n", report.SingleLine(m.Hint))
	default:
		fmt.Fprintf(tw, "\t%s (lag %d): %s\n", strings.ToUpper(string(m.Standing)), m.Lag, report.SingleLine(m.Reason))
		fmt.Fprintf(tw, "\tfix: %s\n", report.SingleLine(m.Hint))
	}
}
