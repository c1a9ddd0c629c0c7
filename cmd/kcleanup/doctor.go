package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"

	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
)

// doctorOptions are the flags of `kcleanup doctor`.
type doctorOptions struct {
	topic      string        // "" means: the topic the control topic governs
	stuckAfter time.Duration // COMMITTED or DELETING for longer than this is reported
	// clockTolerance: a COMMITTED stamped further ahead of its broker time is reported.
	clockTolerance time.Duration
	tombstones     tombstoneOptions
}

func newDoctorCmd(g *globalOptions) *cobra.Command {
	var o doctorOptions
	cmd := &cobra.Command{
		Use:   "doctor [--topic TOPIC]",
		Short: "Check the control topic, the data topic, the brokers and the projection (read-only)",
		Long: `Check everything kcleanup depends on, without changing anything:

  brokers        DeleteRecords supported, topic IDs supported (Metadata v10+)
  control topic  exists, exactly one partition, cleanup.policy=compact, and no other control
                 topic (among those named *.kcleanup) is bound to the same data topic
  projection     not degraded, rejected records, operations stuck in COMMITTED or DELETING,
                 accepted records listed for repair (overwritten or out of order), not yet re-appended
  data topic     cleanup.policy=compact,delete, retention.ms=-1, retention.bytes=-1, and the
                 topic ID the control topic governs
  tombstones     the data topic's records from the committed boundary (or, before the first
                 plan, from the log start) to the last stable offset, at most
                 --tombstone-scan-limit of them: a tombstone (null value) at or above the
                 boundary blocks (the job writes tombstones again; the workers delete nothing);
                 before the first plan the latest one is where that plan must lie above
  mirror         when a Flink Agents mirror is attached: it exists with the topic ID it was
                 attached with, one partition, cleanup.policy=compact, its Flink Agents fold is
                 valid, its effective boundary equals kcleanup's (or lags, by which plan), this
                 principal may read and write it, and its durability settings

The data topic is --topic, or the one the control topic (--control-topic) governs. One line per
finding, each problem with a hint. Exits 1 when anything blocks cleanup.`,
		Example: `  kcleanup doctor --topic action-state
  kcleanup doctor --control-topic action-state.kcleanup -o json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.topic == "" && g.controlTopic == "" {
				return usageError(errors.WithHint(errors.New("doctor needs a data topic or a control topic"),
					"give --topic TOPIC, or --control-topic NAME to check the topic it governs"))
			}
			if err := o.tombstones.check(); err != nil {
				return err
			}
			if o.stuckAfter <= 0 {
				return usageError(errors.Newf("invalid --stuck-after %s: want a positive duration", o.stuckAfter))
			}
			return runDoctor(cmd.Context(), *g, o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.topic, "topic", "", "the data `topic` (default: the one the control topic governs)")
	cmd.Flags().DurationVar(&o.stuckAfter, "stuck-after", 5*time.Minute,
		"report an operation COMMITTED or DELETING for longer than this `duration` as stuck")
	o.tombstones.addFlags(cmd.Flags(), false)
	cmd.Flags().DurationVar(&o.clockTolerance, flagClockTolerance, report.DefaultAheadTolerance,
		"report a COMMITTED whose \"at\" runs further than this ahead of the time the broker appended it")
	return cmd
}

// doctorReport is what doctor prints.
type doctorReport struct {
	SchemaVersion int         `json:"schemaVersion"`
	Topic         string      `json:"topic,omitempty"`
	ControlTopic  string      `json:"controlTopic"`
	Blocking      int         `json:"blocking"`
	Findings      findingList `json:"findings"`
}

func runDoctor(ctx context.Context, g globalOptions, o doctorOptions, stdout io.Writer) error {
	control := g.controlTopic
	if o.topic != "" {
		var err error
		if control, err = g.controlTopicOf(o.topic); err != nil {
			return err
		}
	}
	c, err := g.connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()

	rep := doctorReport{SchemaVersion: findingsSchemaVersion, Topic: o.topic, ControlTopic: control}
	f, err := c.DoctorFacts(ctx, worker.DoctorRequest{Topic: o.topic, ControlTopic: control, ControlNamed: g.controlTopic != "",
		Bootstrap: g.bootstrap(), StuckAfter: o.stuckAfter, ClockTolerance: o.clockTolerance, ScanLimit: o.tombstones.scanLimit,
		Timeout: g.timeout, Typos: func(ctx context.Context, name string) []string { return g.typoHints(ctx, c, name) }})
	if err != nil {
		return g.unreachable(err)
	}
	rep.Topic = report.DoctorTopic(o.topic, f.Status)
	rep.Findings = report.Diagnose(f)
	rep.Blocking = len(protocol.Blocking(rep.Findings))
	if err := printFindings(stdout, g.output, rep, rep.Findings); err != nil {
		return err
	}
	return blockingError(rep.Findings)
}

// printFindings writes doc as JSON, or the findings as one line each ("SEVERITY  subject:
// message"), with the hint, when there is one, on the line below.
func printFindings(w io.Writer, format outputFormat, doc any, fs []protocol.Finding) error {
	if format == outputJSON {
		return writeJSON(w, doc)
	}
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%-5s  %s: %s\n", strings.ToUpper(string(f.Severity)), f.Subject, f.Message)
		if f.Hint != "" {
			fmt.Fprintf(&b, "       hint: %s\n", f.Hint)
		}
	}
	_, err := io.WriteString(w, b.String())
	return errors.Wrap(err, "write output")
}

// blockingError is the command's error when findings block cleanup (exit 1), nil otherwise.
func blockingError(fs []protocol.Finding) error {
	n := len(protocol.Blocking(fs))
	if n == 0 {
		return nil
	}
	return errors.WithHint(errors.Newf("%d problem(s) block cleanup (the BLOCK findings)", n),
		"fix each BLOCK finding as its hint says, then run the command again")
}
