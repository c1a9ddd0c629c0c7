package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/report"
)

// printFlinkStatus renders a control topic in Flink Agents' format as the
// job folds it: its effective boundary, or why the job cannot recover from
// it, and every plan.
func printFlinkStatus(w io.Writer, st report.Status) error {
	fa := st.FlinkAgents
	tw := newTable(w)
	fmt.Fprintf(tw, "Control topic:\t%s (read to offset %d, its end when the read began)\n", st.ControlTopic, st.ReadTo)
	if len(st.MirrorOf) > 0 {
		// kcleanup writes here: the mirror of its control topic, which holds the decisions.
		fmt.Fprintf(tw, "Format:\tFlink Agents' (folded by the job's rules)\n")
		fmt.Fprintf(tw, "Mirror of:\t%s: the Flink Agents mirror kcleanup keeps for the job; the decisions are the control topic's (kcleanup status --control-topic %s)\n",
			strings.Join(st.MirrorOf, ", "), st.MirrorOf[0])
	} else {
		fmt.Fprintf(tw, "Format:\tFlink Agents' own cleanup tool (folded by the job's rules; kcleanup never writes here)\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if fa.Error != nil {
		fmt.Fprintf(w, "Boundary: UNKNOWN: the job's recovery fails on this control topic (%s, %s)\n  %s\n  Hint: %s\n",
			fa.Error.Reason, fa.Error.Class, report.SingleLine(fa.Error.Message), fa.Error.Hint)
	} else {
		fmt.Fprintln(w, "Effective boundary (the job refuses recovery points below it):")
		tw = newTable(w)
		fmt.Fprintln(tw, "  PARTITION\tBOUNDARY\tSET BY PLAN")
		for _, p := range fa.EffectiveBoundary.Partitions() {
			fmt.Fprintf(tw, "  %d\t%d\t%s\n", p, fa.EffectiveBoundary[p], shorten(fa.BoundarySetBy[p], shortPlanID))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Plans: %d\n", len(fa.Plans))
	tw = newTable(w)
	fmt.Fprintln(tw, "  PLAN\tSTATUS\tRECOVERY POINT\tOFFSETS\tTOPIC ID\tRECORDS")
	for _, p := range fa.Plans {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%d..%d\n", p.PlanID, p.Status, flinkagents.Quote(p.SourceRecoveryPoint), p.Offsets, p.TopicID, p.First, p.Last)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nTo manage this topic's cleanups with kcleanup: kcleanup adopt --from %s (docs/flink-agents.md)\n", st.ControlTopic)
	return nil
}
