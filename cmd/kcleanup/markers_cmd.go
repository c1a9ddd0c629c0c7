package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"

	"github.com/kcleanup/kcleanup/checkpoint"
	"github.com/kcleanup/kcleanup/checkpoint/store"
	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/worker"
)

func newMarkersCmd(g *globalOptions) *cobra.Command {
	var p pointFlags
	cmd := &cobra.Command{
		Use:   "markers --checkpoint PATH [--operator-uid UID | --operator-uid-hash HASH]",
		Short: "Show the recovery markers a Flink checkpoint or savepoint holds, or write them as markers JSON",
		Long: `markers reads a checkpoint or savepoint natively (no JVM, no cluster) and shows what it holds
for kcleanup: the checkpoint ID and when its _metadata was written, the operator holding the
union state recoveryMarker (its uid where Flink 2.x recorded it, its uid hash, its parallelism),
each subtask's marker (topic, topic ID, offsets) and the per-partition minimum that a plan from
this checkpoint would carry. Other operators holding the state are listed too.

-o json writes the markers as the JSON array plan, validate and pin take with --markers, each
marker saying which checkpoint, operator and subtask it is from, so that those commands refuse
a set missing a subtask or mixing checkpoints. For pipelines, audits and bug reports.

PATH is a checkpoint directory (chk-N), a savepoint directory or its _metadata file; local,
file:// or s3:// (credentials from the standard AWS chain: AWS_ACCESS_KEY_ID, AWS_PROFILE, ...;
AWS_ENDPOINT_URL for an S3-compatible store). Exit 1 when the markers cannot be read: the
message names the file, the byte offset and what was expected.`,
		Example: `  kcleanup markers --checkpoint /flink/checkpoints/4f2a9c0d1e2b3a4f5e6d7c8b9a0f1e2d/chk-42
  kcleanup markers --checkpoint s3://flink/savepoints/savepoint-3f2a1b-0c5d6e7f8a9b -o json > sp.markers.json
  kcleanup markers --checkpoint sp/_metadata --operator-uid action-state-markers`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := p.check(false, "markers"); err != nil {
				return err
			}
			return runMarkers(cmd.Context(), *g, p, cmd.OutOrStdout())
		},
	}
	p.add(cmd.Flags(), false)
	return cmd
}

func runMarkers(ctx context.Context, g globalOptions, p pointFlags, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	r, err := worker.ReadCheckpoint(ctx, p.checkpoint, p.selector(), store.Options{})
	if err != nil {
		return err
	}
	// Shown as it is, but a set that is not every subtask's is an error, as plan would say.
	incomplete := r.Complete()
	if g.output == outputJSON {
		if incomplete != nil {
			return incomplete
		}
		return writeMarkersJSON(w, r.Markers())
	}
	if err := printCheckpoint(w, r); err != nil {
		return err
	}
	return incomplete
}

// writeMarkersJSON writes markers as a JSON array, one marker a line, as --markers reads them.
func writeMarkersJSON(w io.Writer, ms []events.Marker) error {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, m := range ms {
		b.WriteString("  ")
		b.Write(m.Encode())
		if i < len(ms)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]\n")
	_, err := w.Write(b.Bytes())
	return errors.Wrap(err, "write the markers")
}

func printCheckpoint(w io.Writer, r worker.CheckpointRead) error {
	cp := r.Checkpoint
	fmt.Fprintf(w, "checkpoint %d at %s\n", cp.ID, r.Location.Metadata)
	written := "unknown (the store does not say)"
	if !r.Location.Written.IsZero() {
		written = r.Location.Written.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "  _metadata written %s; format version %d (%s); %d operators\n", written, cp.Version, cp.Line, cp.Operators)
	op := cp.Selected
	fmt.Fprintf(w, "  markers of operator %s, parallelism %d (max %d)\n", operatorText(*op), op.Parallelism, op.MaxParallelism)
	tw := newTable(w)
	fmt.Fprintln(tw, "  SUBTASK\tTOPIC\tTOPIC ID\tOFFSETS")
	for _, s := range r.Subtasks {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", s.Subtask, s.Marker.Topic, s.Marker.TopicID, s.Marker.Offsets)
	}
	if len(r.Subtasks) > 0 {
		if plan, err := events.BuildPlan(r.Path, r.Markers()); err == nil {
			fmt.Fprintf(tw, "  minimum\t%s\t%s\t%s\n", plan.Topic, plan.TopicID, plan.Offsets)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, h := range cp.Holders {
		if h.UIDHash == op.UIDHash {
			continue
		}
		state := fmt.Sprintf("%d subtasks with the state", len(h.Subtasks))
		if h.Err != nil {
			state = "unreadable: " + h.Err.Error()
		}
		fmt.Fprintf(w, "  also holding %s: operator %s, parallelism %d, %s\n", checkpoint.StateName, operatorText(h), h.Parallelism, state)
	}
	return nil
}

// operatorText names an operator as Flink Agents' flags do: uid "U" (uid hash H), or the hash
// alone where the checkpoint records no uid (Flink 1.20's metadata).
func operatorText(op checkpoint.Operator) string {
	if op.UID != "" {
		return fmt.Sprintf("uid %q (uid hash %s)", op.UID, op.UIDHash)
	}
	return "uid hash " + op.UIDHash
}
