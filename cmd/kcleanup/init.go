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

// initOptions are the flags of `kcleanup init`.
type initOptions struct {
	topic             string
	replicationFactor int16 // -1: the broker's default.replication.factor
	mirrorTopic       string
	// restoreGrace is the grace written with the mirror's attachment.
	restoreGrace time.Duration
}

func newInitCmd(g *globalOptions) *cobra.Command {
	var o initOptions
	cmd := &cobra.Command{
		Use:   "init --topic TOPIC",
		Short: "Create the control topic of a data topic and check both",
		Long: `Create the control topic of a data topic (one partition, cleanup.policy=compact, unclean
leader election off, min.insync.replicas=2 when the replication factor is 3 or more) and check
the data topic's settings (cleanup.policy=compact,delete, retention.ms=-1, retention.bytes=-1).

With --mirror-topic it also creates the Flink Agents mirror topic and attaches it (as kcleanup
mirror attach does, after the same checks; nothing when it is attached already): one partition and
cleanup.policy=compact exactly (what the job requires), with the control topic's durability
settings (min.insync.replicas, no unclean leader election: the mirror's COMMITTED is written
before any deletion and must not be lost) and its min.compaction.lag.ms and delete.retention.ms
(a stray writer's tombstone, which makes the job fail closed, must not be cleaned away together
with the plan under it, which would silently lower the boundary the job enforces).

Each problem is reported with the exact command that fixes it. Running init again is safe: an
existing, correct control topic is left as it is. Exits 1 when anything blocks cleanup.`,
		Example: `  kcleanup init --topic action-state
  kcleanup init --topic action-state --replication-factor 3 --control-topic ops.action-state.ctl
  kcleanup init --topic action-state --mirror-topic action-state.flink-cleanup`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.replicationFactor == 0 || o.replicationFactor < -1 {
				return usageError(errors.WithHint(
					errors.Newf("invalid --replication-factor %d", o.replicationFactor),
					"give 1 or more, or -1 for the broker's default.replication.factor"))
			}
			var err error
			if o.restoreGrace, err = attachGrace(cmd); err != nil {
				return err
			}
			return runInit(cmd.Context(), *g, o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.topic, "topic", "", "the data `topic` to clean up (required)")
	cmd.Flags().Int16Var(&o.replicationFactor, "replication-factor", -1,
		"replication factor of a new control topic; -1 takes the broker's default (production: 3)")
	cmd.Flags().StringVar(&o.mirrorTopic, "mirror-topic", "",
		"also create and attach this Flink Agents mirror `topic` (the one the job's kafkaActionStateCleanupControlTopic names)")
	addAttachGraceFlag(cmd.Flags())
	_ = cmd.MarkFlagRequired("topic")
	return cmd
}

// initReport is what init prints: the topics it looked at and one finding per check.
type initReport struct {
	SchemaVersion       int         `json:"schemaVersion"`
	Topic               string      `json:"topic"`
	ControlTopic        string      `json:"controlTopic"`
	ControlTopicCreated bool        `json:"controlTopicCreated"`
	MirrorTopic         string      `json:"mirrorTopic,omitempty"`
	MirrorTopicCreated  bool        `json:"mirrorTopicCreated,omitempty"`
	MirrorAttached      bool        `json:"mirrorAttached,omitempty"`
	Findings            findingList `json:"findings"`
}

func runInit(ctx context.Context, g globalOptions, o initOptions, stdout io.Writer) error {
	control, err := g.controlTopicOf(o.topic)
	if err != nil {
		return err
	}
	ctx, c, done, err := g.connectFor(ctx)
	if err != nil {
		return err
	}
	defer done()

	if m := o.mirrorTopic; m == o.topic || m == control {
		return usageError(errors.WithHint(errors.Newf("--mirror-topic %q is the data topic or the control topic", m),
			"the mirror is a topic of its own, the one the Flink Agents job's kafkaActionStateCleanupControlTopic names"))
	}
	rep, err := initTopics(ctx, c, g, o.topic, control, o.replicationFactor)
	if err != nil {
		return g.unreachable(err)
	}
	if o.mirrorTopic != "" {
		if err := initMirror(ctx, c, g, o, &rep); err != nil {
			return g.unreachable(err)
		}
	}
	if err := printFindings(stdout, g.output, rep, rep.Findings); err != nil {
		return err
	}
	return blockingError(rep.Findings)
}

// initTopics checks the data topic, creates the control topic when it is missing, and checks
// it and what it governs. A missing data topic stops it before anything is created: a mistyped
// name must not leave a stray control topic behind.
func initTopics(ctx context.Context, c *worker.Cluster, g globalOptions, topic, control string, rf int16) (initReport, error) {
	rep := initReport{SchemaVersion: findingsSchemaVersion, Topic: topic, ControlTopic: control}
	data, err := c.TopicMetadata(ctx, topic)
	if errors.Is(err, worker.ErrTopicNotFound) {
		// Most often a typo: the names it is nearest to, never "create it".
		rep.Findings = append(rep.Findings, protocol.Finding{
			Severity: protocol.Block, Subject: "data topic " + topic,
			Message: fmt.Sprintf("no topic %s on the cluster; the control topic was not created", topic),
			Hint:    strings.Join(g.typoHints(ctx, c, topic), "; "),
		})
		return rep, nil
	}
	if err != nil {
		return rep, err
	}
	if data.Configs, err = c.TopicConfigs(ctx, topic); err != nil {
		return rep, err
	}
	rep.Findings = append(rep.Findings, protocol.CheckDataTopic(data, g.bootstrap())...)

	if stop, err := governedElsewhere(ctx, c, g, data, control, &rep); err != nil || stop {
		return rep, err
	}
	if rep.ControlTopicCreated, err = c.CreateControlTopic(ctx, control, rf); err != nil {
		return rep, err
	}
	info, err := c.DescribeTopic(ctx, control)
	if err != nil {
		return rep, err
	}
	created := "exists"
	if rep.ControlTopicCreated {
		created = "created"
	}
	rep.Findings = append(rep.Findings, protocol.Finding{Severity: protocol.OK, Subject: "control topic " + control,
		Message: fmt.Sprintf("%s: %d partition(s), replication factor %d", created, len(info.Partitions), info.Replicas)})
	checks := report.CheckControlTopic(info, topic, info.Replicas, g.bootstrap())
	rep.Findings = append(rep.Findings, checks...)
	rep.Findings = append(rep.Findings, report.CheckControlTopicDurability(info, g.bootstrap())...)
	if len(protocol.Blocking(checks)) > 0 {
		return rep, nil // the projection of a broken control topic proves nothing
	}

	// An existing control topic may govern another incarnation of the data topic.
	proj, err := c.Project(ctx, control)
	if err != nil {
		return rep, err
	}
	defer proj.Close()
	rep.Findings = append(rep.Findings, report.CheckBinding(report.StatusOf(proj.Source()), data)...)
	return rep, nil
}

// governedElsewhere stops init before it creates control for the data topic when another control
// topic, under any name, already governs the topic's incarnation: the new, empty one would let
// every gate that reads it allow what the other's boundary condemns (a mistaken init for a topic
// whose cleanups are kept under a --control-topic name).
func governedElsewhere(ctx context.Context, c *worker.Cluster, g globalOptions, data protocol.Topic, control string, rep *initReport) (bool, error) {
	if _, err := c.TopicMetadata(ctx, control); !errors.Is(err, worker.ErrTopicNotFound) {
		return false, err // it exists (checked below), or the cluster did not answer
	}
	// The rule every writer obeys (protocol.Governance): init may create only where it finds
	// no other control topic governing the incarnation.
	err := c.OneGovernor(ctx, protocol.Governance{Self: control, Topic: data.Name, TopicID: data.ID}, g.bootstrap())
	if !errors.Is(err, protocol.ErrGovernedElsewhere) {
		if errors.Is(err, protocol.ErrNoControlTopic) {
			err = nil // the one init creates next
		}
		return false, err
	}
	rep.Findings = append(rep.Findings, protocol.Finding{
		Severity: protocol.Block, Subject: "control topic " + control,
		Message: err.Error() + "; it was not created", Hint: strings.Join(errors.GetAllHints(err), "; "),
	})
	return true, nil
}

// initMirror creates the Flink Agents mirror topic when it is missing and
// checks it: one partition, cleanup.policy=compact exactly, and, when it
// existed already, a fold the job recovers from.
func initMirror(ctx context.Context, c *worker.Cluster, g globalOptions, o initOptions, rep *initReport) error {
	rep.MirrorTopic = o.mirrorTopic
	if len(protocol.Blocking(rep.Findings)) > 0 {
		rep.Findings = append(rep.Findings, protocol.Finding{Severity: protocol.Warn, Subject: "mirror topic " + o.mirrorTopic,
			Message: "not created: fix the BLOCK findings first", Hint: "then run kcleanup init again with --mirror-topic"})
		return nil
	}
	var err error
	if rep.MirrorTopicCreated, err = c.CreateMirrorTopic(ctx, o.mirrorTopic, o.replicationFactor); err != nil {
		return err
	}
	info, err := c.DescribeTopic(ctx, o.mirrorTopic)
	if err != nil {
		return err
	}
	v, err := c.ReadMirror(ctx, o.mirrorTopic)
	if err != nil {
		return err
	}
	created := "exists"
	if rep.MirrorTopicCreated {
		created = "created"
	}
	rep.Findings = append(rep.Findings, report.MirrorTopicFindings(v, info.Configs, info.Replicas, g.bootstrap(), created)...)
	if len(protocol.Blocking(rep.Findings)) > 0 {
		return nil
	}
	control, err := g.controlTopicOf(o.topic)
	if err != nil {
		return err
	}
	proj, err := c.Project(ctx, control)
	if err != nil {
		return err
	}
	defer proj.Close()
	subject := "mirror topic " + o.mirrorTopic
	if cur, ok := proj.State.Mirror(); ok && cur.Topic != o.mirrorTopic {
		rep.Findings = append(rep.Findings, protocol.Finding{Severity: protocol.Block, Subject: subject,
			Message: fmt.Sprintf("not attached: control topic %s has mirror %s attached", control, cur.Topic),
			Hint:    fmt.Sprintf("to replace it: kcleanup mirror attach %s --control-topic %s --reason …", o.mirrorTopic, control)})
		return nil
	}
	did, err := attachMirror(ctx, c, g, proj, o.mirrorTopic, "created and attached by kcleanup init",
		worker.Options{Bootstrap: g.bootstrap(), AttachGrace: o.restoreGrace, AttachWithGrace: true})
	if attachRefused(err) {
		rep.Findings = append(rep.Findings, protocol.Finding{Severity: protocol.Block, Subject: subject,
			Message: "not attached: " + err.Error(), Hint: errors.FlattenHints(err)})
		return nil
	}
	if err != nil {
		return err
	}
	rep.MirrorAttached = true
	rep.Findings = append(rep.Findings, protocol.Finding{Severity: protocol.OK, Subject: subject, Message: did +
		"; point the Flink Agents job's kafkaActionStateCleanupControlTopic at it once it holds a plan (a job refuses to recover from an empty control topic)"})
	return nil
}
