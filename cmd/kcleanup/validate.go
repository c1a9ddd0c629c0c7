package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/spf13/cobra"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/gate"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
)

func newValidateCmd(g *globalOptions) *cobra.Command {
	var point pointFlags
	var pinFor string
	cmd := &cobra.Command{
		Use:   "validate (--checkpoint PATH | --markers FILE...) [--pin-for 30m]",
		Short: "The recovery gate: may a job restore from this checkpoint or savepoint?",
		Long: `validate answers, for a deployment pipeline, whether a job may restore from a checkpoint or
savepoint: given as the path the job restores from (--checkpoint PATH: a chk-N or savepoint
directory or its _metadata, local, file:// or s3://, read natively; --operator-uid or
--operator-uid-hash when several operators hold the state recoveryMarker), or as its markers
(--markers: one marker object or a JSON array of them per file). It allows
only when every check passes, in this order (the same checks as a worker's POST /v1/validate):

  control topic  it exists, has exactly one partition, cleanup.policy=compact and settings that
                 keep the log cleaner from outrunning repairs (min.compaction.lag.ms and
                 delete.retention.ms of at least a day), and it governs the markers' topic and
                 topic ID;
  logical        every marker offset is at or above the committed cleanup boundary;
  physical       always: the data topic exists, its live topic ID (uncached) is the markers',
                 the markers cover exactly its partitions, and every marker offset lies inside
                 the live [log start, high watermark];
  fail closed    the control topic was read to its end within --timeout, the projection is not
                 degraded, no accepted history is missing or at risk, and no record is
                 unreadable (a control topic of Flink Agents' own records is folded by the
                 job's rules instead).

Exit 0: allowed. Exit 3: refused, restoring is proved unsafe; the message names the
topic-partition, the offset the recovery point needs and the boundary or the available range.
Pick a newer recovery point. Exit 4: cannot tell, the gate could not prove the recovery point
safe (cluster unreachable, control topic missing, unreadable or unsafe, projection not caught
up, degraded or at risk, missing permission, a checkpoint whose markers could not be read:
checkpoint-unreadable); fix the cause and ask again. Exit 1: a markers file or the --command-config file could
not be read or parsed, or markers that say which checkpoint and subtask they are from are not every
subtask's of one checkpoint (markers that do not say get a warning: completeness cannot be
checked).

The control topic is <data topic>.kcleanup, or --control-topic. The gate allows only after
reading it: a missing control topic, default or named, is exit 4 (its boundary may be kept under
another name). For a topic never cleaned, run 'kcleanup init --topic T' once; an empty control
topic proves no boundary exists, and the recovery point is allowed on the physical check, with a
warning. A blank --control-topic, or KCLEANUP_CONTROL_TOPIC set but blank, is exit 2.
-o json prints the verdict document (docs/schema/verdict.schema.json, schemaVersion 2).

--pin-for D (30m, 2h, 1d) keeps the answer true for a restore: when the gate allows, validate
pins the recovery point for D (a PINNED record, as kcleanup pin writes) and reads it back. It
answers ALLOWED only if the pin landed before any commit above the recovery point: then every
plan above it is refused until the pin expires or is unpinned (the verdict names the pin: pinId,
and the unpin command). If a commit above it landed first, the answer is the gate's for the log
as it now stands. A pin that cannot be written is exit 4.`,
		Example: `  kcleanup validate --checkpoint s3://flink/checkpoints/4f2a.../chk-42
  kcleanup validate --checkpoint /savepoints/savepoint-3f2a1b-0c5d6e7f8a9b --operator-uid action-state-markers --pin-for 30m
  kcleanup validate --markers chk-42/action-state-markers.json
  kcleanup validate --markers subtask-0.json --markers subtask-1.json -o json
  kcleanup validate --markers chk-42/action-state-markers.json --pin-for 30m`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := point.check(true, "validate"); err != nil {
				return err
			}
			var d time.Duration
			if pinFor != "" {
				var err error
				if d, err = parseDays(pinFor); err != nil || d <= 0 {
					return usageError(errors.WithHint(errors.Newf("--pin-for %q is not a positive duration", pinFor), "give a duration such as 30m, 2h or 1d"))
				}
			}
			if point.checkpoint != "" {
				return validateCheckpoint(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), *g, point, d)
			}
			markers, origins, err := readMarkerFiles(point.markers, cmd.InOrStdin(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return runValidate(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), *g, markers, origins, d)
		},
	}
	cmd.Flags().StringVar(&pinFor, "pin-for", "", "when allowed, pin the recovery point for this `duration` (30m, 2h, 1d) and answer ALLOWED only if the pin holds")
	point.add(cmd.Flags(), true)
	return cmd
}

// validateCheckpoint is validate --checkpoint: the checkpoint's markers, read within --timeout,
// go through the gate as markers files do. A checkpoint whose markers cannot be read proves
// nothing: exit 4 (checkpoint-unreadable), with the verdict document under -o json.
func validateCheckpoint(ctx context.Context, w, errw io.Writer, g globalOptions, p pointFlags, pinFor time.Duration) error {
	rctx, cancel := context.WithTimeout(ctx, g.timeout)
	markers, origins, _, _, err := p.readPoint(rctx, "", nil, errw)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return err // interrupted: exit 130, not a verdict
		}
		v := report.Unjudged("", gate.CheckpointUnreadable, err)
		if g.output == outputJSON {
			if werr := writeJSON(w, v); werr != nil {
				return werr
			}
		} else {
			fmt.Fprintf(w, "CANNOT TELL: the checkpoint's markers could not be read (%s)\n", p.checkpoint)
		}
		return cannotTellError(err)
	}
	return runValidate(ctx, w, errw, g, markers, origins, pinFor)
}

func runValidate(ctx context.Context, w, errw io.Writer, g globalOptions, markers []events.Marker, origins []string, pinFor time.Duration) error {
	topic := markers[0].Topic
	ctl, err := g.controlTopicOf(topic)
	if err != nil {
		return err
	}
	// A --command-config that cannot be read is a bad file (exit 1, the exit-code table); a
	// cluster that cannot be reached is the gate's "cannot tell" (exit 4), with its verdict,
	// at once when the connection is refused (Cluster.Validate asks Reachable first).
	c, err := g.connectLazy()
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	opts := worker.ValidateOptions{
		ControlTopic: ctl,
		Bootstrap:    g.bootstrap(),
		Explain:      g.unreachable,
	}
	var v gate.Verdict
	if pinFor > 0 {
		v = c.ValidateAndPin(ctx, markers, opts, pinFor, worker.Actor())
	} else {
		v = c.Validate(ctx, markers, opts)
	}
	for _, n := range v.Notes {
		fmt.Fprintf(errw, "Warning: %s\n", n)
	}
	if g.output == outputJSON {
		if err := writeJSON(w, v); err != nil {
			return err
		}
	} else if err := printVerdict(w, v, origins); err != nil {
		return err
	}
	return verdictError(v)
}

// verdictError is the verdict as the error main prints and maps to the exit code. The code is
// the gate's (gate.Class.ExitCode, the one class→code map): nil when allowed, exit 3 when
// refused, 2 for a malformed question, 4 when the gate cannot tell (any other class).
func verdictError(v gate.Verdict) error {
	switch v.Class.ExitCode() {
	case exitOK:
		return nil
	case exitRefused:
		return refusedError(v.Err())
	case exitUsage:
		return usageError(v.Err())
	}
	return cannotTellError(v.Err())
}

// printVerdict prints the verdict on stdout; the first refusal's message and hints go to
// stderr through main.
func printVerdict(w io.Writer, v gate.Verdict, origins []string) error {
	where := "control topic " + v.ControlTopic
	if v.ReadTo != nil {
		where += fmt.Sprintf(", read to offset %d", *v.ReadTo)
	}
	switch v.Class {
	case gate.Allowed:
		fmt.Fprintf(w, "ALLOWED: the recovery point may be restored (%s)\n", where)
		for _, n := range v.Notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
		tw := newTable(w)
		fmt.Fprintln(tw, "  PARTITION\tLOWEST MARKER OFFSET\tBOUNDARY\tSET BY PLAN\tAVAILABLE")
		for _, c := range v.Checked {
			fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t[%d, %d]\n", c.Partition, c.Lowest, optInt(c.Boundary),
				report.OrDash(shorten(c.PlanID, shortPlanID)), c.LogStart, c.HighWatermark)
		}
		return tw.Flush()
	case gate.Refused:
		fmt.Fprintf(w, "REFUSED: the recovery point may not be restored (%s)\n", where)
	default:
		fmt.Fprintf(w, "CANNOT TELL: the gate could not prove that the recovery point is safe (%s)\n", where)
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "  MARKER\tPARTITION\tNEEDS OFFSET\tBOUNDARY\tSET BY PLAN\tAVAILABLE\tREASON")
	var others []gate.Refusal
	for _, r := range v.Refusals {
		d := r.Detail
		if d == nil || d.Partition == nil {
			others = append(others, r)
			continue
		}
		marker := "-"
		if d.Marker != nil && *d.Marker < len(origins) {
			marker = origins[*d.Marker]
		}
		avail := "-"
		if d.LogStart != nil && d.HighWatermark != nil {
			avail = fmt.Sprintf("[%d, %d]", *d.LogStart, *d.HighWatermark)
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%s\t%s\n", marker, *d.Partition, optInt(d.Requested),
			optInt(d.Boundary), report.OrDash(shorten(d.PlanID, shortPlanID)), avail, r.Reason)
	}
	if len(others) < len(v.Refusals) {
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, r := range others {
		fmt.Fprintf(w, "  %s: %s\n", r.Reason, r.Message)
	}
	return nil
}

func optInt[T int32 | int64](v *T) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}
