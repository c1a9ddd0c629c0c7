package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
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
	f := report.DoctorFacts{Asked: o.topic, ControlTopic: control, ControlNamed: g.controlTopic != "",
		Bootstrap: g.bootstrap(), StuckAfter: o.stuckAfter}
	if err := doctorFacts(ctx, c, g, o, &f); err != nil {
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

// doctorFacts reads what report.Diagnose judges, into f: only what the answers so far make
// relevant. Each group of reads gets its own --timeout. An error means the cluster did not
// answer; problems found are facts.
func doctorFacts(ctx context.Context, c *worker.Cluster, g globalOptions, o doctorOptions, f *report.DoctorFacts) error {
	step := func(read func(ctx context.Context) error) error {
		ctx, cancel := context.WithTimeout(ctx, g.timeout)
		defer cancel()
		return read(ctx)
	}
	if err := step(func(ctx context.Context) (err error) {
		f.Brokers, err = c.CheckBrokers(ctx)
		return err
	}); err != nil {
		return err
	}

	// The control topic and its projection; they also tell which data topic to check.
	if err := step(func(ctx context.Context) error {
		info, err := c.DescribeTopic(ctx, f.ControlTopic)
		if errors.Is(err, worker.ErrTopicNotFound) {
			f.ControlMissing = true
			if f.Asked != "" {
				if _, err := c.TopicMetadata(ctx, f.Asked); errors.Is(err, worker.ErrTopicNotFound) {
					f.DataMissing, f.Typos = true, g.typoHints(ctx, c, f.Asked)
					return nil
				}
			}
			if f.ControlNamed {
				f.Typos = g.typoHints(ctx, c, f.ControlTopic)
			}
			if f.Asked != "" {
				data, err := c.TopicMetadata(ctx, f.Asked)
				if err != nil {
					return err
				}
				gerr := c.OneGovernor(ctx, protocol.Governance{Self: f.ControlTopic, Topic: f.Asked, TopicID: data.ID}, g.bootstrap())
				if errors.Is(gerr, protocol.ErrGovernedElsewhere) {
					f.Elsewhere = gerr
				} else if !errors.Is(gerr, protocol.ErrNoControlTopic) {
					return gerr
				}
			}
			return nil
		}
		if err != nil {
			return err
		}
		f.ControlInfo = info
		if err := c.CheckControlShape(ctx, f.ControlTopic); errors.Is(err, worker.ErrNotControlTopic) {
			f.NotControl = err
			return nil
		}
		if len(info.Partitions) == 1 { // otherwise there is no single log to project
			proj, err := c.Project(ctx, f.ControlTopic)
			if err != nil {
				return err
			}
			defer proj.Close()
			if err := proj.CheckShape(ctx); err != nil {
				f.NotControl = err
				return nil
			}
			proj.AheadTolerance = o.clockTolerance
			st := report.StatusOf(proj.Source())
			// A stuck operation that the tombstone rule blocks is said so, not "re-run apply".
			blockedByTombstones(ctx, c, &st, o.tombstones.scanLimit)
			f.Status, f.Now = &st, time.Now()
			if f.Mirror, err = readMirror(ctx, c, g, proj); err != nil {
				return err
			}
		}
		if f.Status != nil && (f.Status.Format == projector.FormatFlinkAgents || f.Status.Format == projector.FormatMixed) {
			return nil // not kcleanup's topic: its settings and fold rules do not apply
		}
		topic := report.DoctorTopic(f.Asked, f.Status)
		gov := protocol.Governance{Self: f.ControlTopic, Exists: true, Topic: topic}
		if f.Status != nil && f.Status.Topic != "" {
			gov.Bound, gov.Topic, gov.TopicID = true, f.Status.Topic, f.Status.TopicID
		} else if topic != "" {
			data, err := c.TopicMetadata(ctx, topic)
			if err != nil && !errors.Is(err, worker.ErrTopicNotFound) {
				return err
			}
			gov.TopicID = data.ID
		}
		if gov.TopicID != "" {
			if err := c.OneGovernor(ctx, gov, g.bootstrap()); err != nil {
				if !errors.Is(err, protocol.ErrGovernedElsewhere) {
					return err
				}
				f.Governance = err
			}
		}
		return nil
	}); err != nil {
		return err
	}

	topic := report.DoctorTopic(f.Asked, f.Status)
	if topic == "" {
		return nil
	}
	if err := step(func(ctx context.Context) error {
		info, err := c.DescribeTopic(ctx, topic)
		if errors.Is(err, worker.ErrTopicNotFound) {
			f.DataGone = true
			return nil
		}
		f.DataRead, f.DataInfo = err == nil, info
		return err
	}); err != nil {
		return err
	}
	if f.DataGone || f.Status != nil && (f.Status.Format == projector.FormatFlinkAgents || f.Status.Format == projector.FormatMixed) {
		return nil // a Flink Agents control topic: kcleanup commits nothing on it
	}
	return step(func(ctx context.Context) error { return readTombstones(ctx, c, topic, o.tombstones.scanLimit, f) })
}

// readTombstones is doctor's tombstone scan of the data topic: from the committed boundary,
// or from the log start before the first plan (protocol.TombstoneFindings judges it). A scan
// the broker refuses (no Read on the data topic) is a fact, not a failure of doctor.
func readTombstones(ctx context.Context, c *worker.Cluster, topic string, limit int64, f *report.DoctorFacts) error {
	var from events.Offsets
	if f.Status != nil {
		from = f.Status.Boundary
	}
	if len(from) == 0 {
		starts, err := c.StartOffsets(ctx, topic)
		if err != nil {
			return nil // the data topic's own findings say why
		}
		from = starts
	}
	scan, err := c.ScanTombstones(ctx, topic, from, nil, limit)
	if err != nil {
		if worker.IsAuthorizationError(err) {
			f.TombstonesDenied = err
			return nil
		}
		return err
	}
	f.TombstonesScanned, f.TombstonesFrom, f.Tombstones = true, from, scan
	return nil
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

// readMirror reads the attached Flink Agents mirror, if one is: its standing
// (protocol.AssessMirror, with this principal's permissions to write it) and its
// durability settings; nil when none is attached.
func readMirror(ctx context.Context, c *worker.Cluster, g globalOptions, proj *worker.Projection) (*report.DoctorMirror, error) {
	a, ok, err := c.AssessMirror(ctx, protocol.MirrorControlOf(proj.State), true, g.bootstrap())
	if err != nil || !ok {
		return nil, err
	}
	var configs map[string]string
	if a.LiveTopicID != "" {
		if configs, err = c.TopicConfigs(ctx, a.Topic); err != nil && !worker.IsAuthorizationError(err) {
			return nil, err
		}
	}
	return &report.DoctorMirror{Assessment: a, Configs: configs}, nil
}
