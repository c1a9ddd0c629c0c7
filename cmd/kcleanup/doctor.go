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
	if err := diagnose(ctx, c, g, o, &rep); err != nil {
		return g.unreachable(err)
	}
	rep.Blocking = len(protocol.Blocking(rep.Findings))
	if err := printFindings(stdout, g.output, rep, rep.Findings); err != nil {
		return err
	}
	return blockingError(rep.Findings)
}

// diagnose fills rep with findings. Each group of checks gets its own --timeout. An error means
// the cluster did not answer; problems found are findings.
func diagnose(ctx context.Context, c *worker.Cluster, g globalOptions, o doctorOptions, rep *doctorReport) error {
	add := func(fs ...protocol.Finding) { rep.Findings = append(rep.Findings, fs...) }
	step := func(f func(ctx context.Context) error) error {
		ctx, cancel := context.WithTimeout(ctx, g.timeout)
		defer cancel()
		return f(ctx)
	}

	if err := step(func(ctx context.Context) error {
		fs, err := c.CheckBrokers(ctx)
		add(fs...)
		return err
	}); err != nil {
		return err
	}

	// The control topic and its projection; they also tell which data topic to check.
	var status *report.Status
	var folded *projector.State // the projection's fold, for the tombstone rule under a declaration
	if err := step(func(ctx context.Context) error {
		info, err := c.DescribeTopic(ctx, rep.ControlTopic)
		if errors.Is(err, worker.ErrTopicNotFound) {
			// Most often a typo: the nearest names, and "create it" only for a data topic that
			// exists and was never cleaned.
			if rep.Topic != "" {
				if _, err := c.TopicMetadata(ctx, rep.Topic); errors.Is(err, worker.ErrTopicNotFound) {
					add(protocol.Finding{Severity: protocol.Block, Subject: "data topic " + rep.Topic,
						Message: "no topic " + rep.Topic + " on the cluster", Hint: strings.Join(g.typoHints(ctx, c, rep.Topic), "; ")})
					return nil
				}
			}
			hint := "if cleanup never ran for the data topic, create its control topic: kcleanup init --topic <data topic>"
			if rep.Topic != "" && g.controlTopic == "" {
				hint = "create it: kcleanup init --topic " + rep.Topic
			}
			if g.controlTopic != "" {
				hint = strings.Join(append(g.typoHints(ctx, c, rep.ControlTopic), hint), "; ")
			}
			msg := "does not exist"
			if rep.Topic != "" {
				// The boundary may be kept under another name: say which, as every writer does.
				data, err := c.TopicMetadata(ctx, rep.Topic)
				if err != nil {
					return err
				}
				gerr := c.OneGovernor(ctx, protocol.Governance{Self: rep.ControlTopic, Topic: rep.Topic, TopicID: data.ID}, g.bootstrap())
				if errors.Is(gerr, protocol.ErrGovernedElsewhere) {
					msg, hint = gerr.Error(), strings.Join(errors.GetAllHints(gerr), "; ")
				} else if !errors.Is(gerr, protocol.ErrNoControlTopic) {
					return gerr
				}
			}
			add(protocol.Finding{Severity: protocol.Block, Subject: "control topic " + rep.ControlTopic,
				Message: msg, Hint: hint})
			return nil
		}
		if err != nil {
			return err
		}
		// A topic of another shape is never read as a control topic (gate.Shape): one finding
		// says what it looks like, instead of its settings judged as a control topic's.
		notControl := func(err error) {
			add(protocol.Finding{Severity: protocol.Block, Subject: "control topic " + rep.ControlTopic,
				Message: err.Error(), Hint: strings.Join(errors.GetAllHints(err), "; ")})
		}
		if err := c.CheckControlShape(ctx, rep.ControlTopic); errors.Is(err, worker.ErrNotControlTopic) {
			notControl(err)
			return nil
		}
		var projection []protocol.Finding
		if len(info.Partitions) == 1 { // otherwise there is no single log to project
			proj, err := c.Project(ctx, rep.ControlTopic)
			if err != nil {
				return err
			}
			defer proj.Close()
			if err := proj.CheckShape(ctx); err != nil {
				notControl(err)
				return nil
			}
			proj.AheadTolerance = o.clockTolerance
			st := report.StatusOf(proj.Source())
			folded = proj.State
			// A stuck operation that the tombstone rule blocks is said so, not "re-run apply".
			blockedByTombstones(ctx, c, proj.State, &st, o.tombstones.scanLimit)
			status = &st
			projection = report.CheckProjection(st, time.Now(), o.stuckAfter)
			projection = append(projection, report.CheckClocks(st)...)
			mf, err := checkMirror(ctx, c, g, proj)
			if err != nil {
				return err
			}
			projection = append(projection, mf...)
			if rep.Topic == "" {
				rep.Topic = st.Topic
			}
		}
		if status != nil && (status.Format == projector.FormatFlinkAgents || status.Format == projector.FormatMixed) {
			// Not kcleanup's topic: its settings and fold rules do not apply.
			add(report.CheckFlinkControlTopic(info, *status)...)
			if fa := status.FlinkAgents; rep.Topic == "" && fa != nil && len(fa.Plans) > 0 {
				rep.Topic = fa.Plans[0].Topic
			}
			return nil
		}
		add(report.CheckControlTopic(info, rep.Topic, info.Replicas, g.bootstrap())...)
		add(report.CheckControlTopicDurability(info, g.bootstrap())...)
		add(projection...)
		// One topic incarnation, one control topic, under any name: each of two is blind to the
		// other's boundary, and an unbound one beside one that governs is a forgotten
		// --control-topic (protocol.Governance, the rule every writer obeys).
		gov := protocol.Governance{Self: rep.ControlTopic, Exists: true, Topic: rep.Topic}
		if status != nil && status.Topic != "" {
			gov.Bound, gov.Topic, gov.TopicID = true, status.Topic, status.TopicID
		} else if rep.Topic != "" {
			data, err := c.TopicMetadata(ctx, rep.Topic)
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
				add(protocol.Finding{Severity: protocol.Block, Subject: "control topic " + rep.ControlTopic,
					Message: err.Error(), Hint: strings.Join(errors.GetAllHints(err), "; ")})
			}
		}
		return nil
	}); err != nil {
		return err
	}

	if rep.Topic == "" {
		add(protocol.Finding{Severity: protocol.Warn, Subject: "data topic",
			Message: fmt.Sprintf("not checked: control topic %s governs no topic yet", rep.ControlTopic),
			Hint:    "give --topic TOPIC to check the data topic too"})
		return nil
	}
	exists := false
	if err := step(func(ctx context.Context) error {
		info, err := c.DescribeTopic(ctx, rep.Topic)
		if errors.Is(err, worker.ErrTopicNotFound) {
			add(protocol.Finding{Severity: protocol.Block, Subject: "data topic " + rep.Topic, Message: "does not exist",
				Hint: "check the name (--topic); a control topic governs the topic it was bound to by its first plan"})
			return nil
		}
		exists = err == nil
		if err != nil {
			return err
		}
		add(protocol.CheckDataTopic(info, g.bootstrap())...)
		if status != nil {
			add(report.CheckBinding(*status, info)...)
		}
		return nil
	}); err != nil {
		return err
	}
	if !exists || status != nil && (status.Format == projector.FormatFlinkAgents || status.Format == projector.FormatMixed) {
		return nil // a Flink Agents control topic: kcleanup commits nothing on it
	}
	return step(func(ctx context.Context) error {
		fs, err := checkTombstones(ctx, c, rep.Topic, status, folded, o.tombstones.scanLimit)
		add(fs...)
		return err
	})
}

// checkTombstones is doctor's tombstone scan of the data topic: from the committed boundary,
// or from the log start before the first plan (protocol.TombstoneFindings). A scan the broker
// refuses (no Read on the data topic) is a finding, not a failure of doctor.
func checkTombstones(ctx context.Context, c *worker.Cluster, topic string, status *report.Status, folded *projector.State, limit int64) ([]protocol.Finding, error) {
	var boundary events.Offsets
	if status != nil {
		boundary = status.Boundary
	}
	from := boundary
	if len(from) == 0 {
		starts, err := c.StartOffsets(ctx, topic)
		if err != nil {
			return nil, nil // the data topic's own findings say why
		}
		from = starts
	}
	if folded == nil {
		folded = projector.New()
	}
	topicID := ""
	if status != nil {
		topicID = status.TopicID
	}
	if topicID == "" { // before the first plan: the declaration names the live incarnation
		if info, err := c.TopicMetadata(ctx, topic); err == nil {
			topicID = info.ID
		}
	}
	// Under a no-tombstones declaration only what it leaves is read, as the workers read it.
	scan, err := c.ScanTombstonesUnder(ctx, folded, topic, topicID, from, limit)
	if err != nil {
		if worker.IsAuthorizationError(err) {
			return []protocol.Finding{{Severity: protocol.Warn, Subject: "data topic " + topic,
				Message: "cannot read it for tombstones: " + err.Error(), Hint: strings.Join(errors.GetAllHints(err), "; ")}}, nil
		}
		return nil, err
	}
	fs := protocol.TombstoneFindings(topic, boundary, from, scan)
	if declared := protocol.DeclaredFindings(folded, topic, topicID, from); len(declared) > 0 {
		if len(fs) == 1 && fs[0].Severity == protocol.OK && len(protocol.TombstoneScanFrom(folded, topic, topicID, from)) == 0 {
			fs = nil // nothing was read: "no tombstone found" would claim a read
		}
		fs = append(fs, declared...)
	}
	return fs, nil
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

// checkMirror is doctor's check of the attached Flink Agents mirror, if
// one is: its standing (protocol.AssessMirror, with this principal's
// permissions to write it) and its durability settings.
func checkMirror(ctx context.Context, c *worker.Cluster, g globalOptions, proj *worker.Projection) ([]protocol.Finding, error) {
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
	return report.MirrorFindings(a, configs, g.bootstrap()), nil
}
