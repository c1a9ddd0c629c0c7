package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"

	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

func newAdoptCmd(g *globalOptions) *cobra.Command {
	var from string
	var attach bool
	cmd := &cobra.Command{
		Use:   "adopt --from FLINK_CONTROL_TOPIC",
		Short: "Start a kcleanup control topic from the boundary Flink Agents' own cleanup tool committed",
		Long: `adopt reads a control topic written by Flink Agents' own cleanup tool (the topic a job's
kafkaActionStateCleanupControlTopic names) exactly as the job reads it when it recovers, and
records every plan on it in kcleanup's control topic of the same data topic: each as a
COMMITTED plan with its own plan ID, in ascending order, and as APPLIED too when Flink Agents
applied it and the live log starts prove the deletion. Afterwards kcleanup's boundary equals the
job's effective boundary, and kcleanup status, history and validate see the same plans.

Nothing is written when the job itself could not recover from the Flink Agents topic (a
tombstone, a regressed or changed plan, incomparable plans, a plan for another topic ID or
partition set), when a plan is one kcleanup cannot hold with its ID (a topic ID that is not a
Kafka topic ID, control characters or a lone surrogate in the recovery point), or when the
kcleanup control topic already holds plans of its own. Re-running adopt adds only what is
missing. The Flink Agents topic is only read.

The kcleanup control topic is <data topic>.kcleanup, or --control-topic; it is created as
kcleanup init would when it does not exist.

--attach-mirror then attaches the Flink Agents topic itself as the control topic's mirror (as
kcleanup mirror attach does, after the same checks): the job keeps reading the topic its
kafkaActionStateCleanupControlTopic names, and from then on every kcleanup apply and worker keeps
it in step, so the job's configuration does not change. See docs/flink-agents.md.`,
		Example: `  kcleanup adopt --from action-state-cleanup
  kcleanup adopt --from action-state-cleanup --control-topic action-state.kcleanup -o json
  kcleanup adopt --from action-state-cleanup --attach-mirror`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			grace, err := attachGrace(cmd)
			if err != nil {
				return err
			}
			return runAdopt(cmd.Context(), *g, from, attach, grace, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	addAttachGraceFlag(cmd.Flags())
	cmd.Flags().StringVar(&from, "from", "", "the Flink Agents control `topic` to adopt (read only)")
	cmd.Flags().BoolVar(&attach, "attach-mirror", false, "then attach the Flink Agents topic as the mirror, so the job's configuration does not change")
	_ = cmd.MarkFlagRequired("from")
	return cmd
}

func runAdopt(ctx context.Context, g globalOptions, from string, attach bool, grace time.Duration, stdout, stderr io.Writer) error {
	ctx, c, done, err := g.connectFor(ctx)
	if err != nil {
		return err
	}
	defer done()
	opts := worker.Options{
		Bootstrap: g.bootstrap(),
		Observe:   func(p protocol.Progress) { fmt.Fprintf(stderr, "[%s] %s\n", p.Step, p.Message) },
	}
	// A Flink Agents control topic has a control topic's shape (gate.Shape): a data topic named
	// by mistake is refused for what it is before a record of it is read.
	if err := c.CheckControlShape(ctx, from); err != nil && !errors.Is(err, worker.ErrTopicNotFound) {
		return g.unreachable(err)
	}
	// The data topic, hence the default control topic, is the plans'.
	src, err := c.PrepareAdoption(ctx, from)
	if errors.Is(err, worker.ErrTopicNotFound) {
		return errors.WithHint(err, "name the topic the job's kafkaActionStateCleanupControlTopic names")
	}
	if err != nil {
		return planError(g, err)
	}
	data := src.DataTopic
	control, err := g.controlTopicOf(data)
	if err != nil {
		return err
	}
	// adopt creates the control topic it starts, as init does: only after init's search found
	// no other control topic governing the data topic's incarnation.
	if _, err := c.TopicMetadata(ctx, control); errors.Is(err, worker.ErrTopicNotFound) {
		err := c.OneGovernor(ctx, protocol.Governance{Self: control, Topic: data, TopicID: src.TopicID}, g.bootstrap())
		if err != nil && !errors.Is(err, protocol.ErrNoControlTopic) {
			return planError(g, err)
		}
	}
	if err := c.EnsureControlTopic(ctx, control, data, opts); err != nil {
		return planError(g, err)
	}
	proj, err := g.project(ctx, c, control)
	if err != nil {
		return err
	}
	defer proj.Close()
	if opts.Governors, err = governors(ctx, g, c, proj, data, src.TopicID); err != nil {
		return err
	}
	ad, err := c.Adopt(ctx, src, proj, opts)
	if err != nil {
		return planError(g, err)
	}
	mirror := ""
	if attach {
		attachOpts := opts
		attachOpts.AttachGrace, attachOpts.AttachWithGrace = grace, true
		did, err := attachMirror(ctx, c, g, proj, from, "adopted from Flink Agents' tool: the job keeps reading this topic", attachOpts)
		if err != nil {
			return errors.WithHintf(err, "the adoption is done; attach the mirror once fixed: kcleanup mirror attach %s --control-topic %s", from, control)
		}
		mirror = from
		fmt.Fprintf(stderr, "[mirror] %s %s\n", from, did)
	}
	if g.output == outputJSON {
		return writeJSON(stdout, adoptOutput{ad, mirror})
	}
	tw := newTable(stdout)
	fmt.Fprintf(tw, "adopted from\t%s (read to offset %d)\n", ad.FlinkTopic, ad.FlinkEnd)
	fmt.Fprintf(tw, "control topic\t%s\n", ad.ControlTopic)
	fmt.Fprintf(tw, "boundary\t%s (Flink Agents' effective boundary)\n", ad.Boundary)
	if mirror != "" {
		fmt.Fprintf(tw, "mirror\t%s is attached: kcleanup keeps it in step, the job keeps reading it\n", mirror)
	}
	fmt.Fprintln(tw, "PLAN\tFLINK AGENTS\tKCLEANUP\t")
	for _, p := range ad.Plans {
		note := ""
		if p.Already {
			note = "(already adopted)"
		}
		fmt.Fprintf(tw, "%s\t%s at offset %d\t%s\t%s\n", p.PlanID, p.FlinkStatus, p.FlinkOffset, p.State, note)
	}
	return tw.Flush()
}

// adoptOutput is adopt's JSON document: the adoption, and the mirror
// attached (--attach-mirror).
type adoptOutput struct {
	worker.Adoption
	Mirror string `json:"mirror,omitempty"`
}
