package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"

	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

func newMirrorCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mirror",
		Short: "Attach, detach or sync a Flink Agents mirror: the control topic a Flink Agents job reads",
		Long: `A Flink Agents mirror is a topic in Flink Agents' own control format (the topic a job's
kafkaActionStateCleanupControlTopic names) that every kcleanup apply and worker keeps in step
with the boundary: a plan's COMMITTED is on the mirror before anything is deleted for it, its
APPLIED after the deletion is verified, so the job refuses at recovery the recovery points
kcleanup refuses. Attaching and detaching are records on the control topic (audited; an apply
cannot skip an attached mirror). See docs/flink-agents.md, "The mirror".`,
	}
	// --topic belongs to every mirror command.
	dataTopic := new(string)
	cmd.PersistentFlags().StringVar(dataTopic, flagTopic, "", "data `topic` whose control topic (<topic>.kcleanup) has the mirror")
	cmd.AddCommand(newMirrorAttachCmd(g, dataTopic), newMirrorDetachCmd(g, dataTopic), newMirrorSyncCmd(g, dataTopic), newMirrorGraceCmd(g, dataTopic))
	return cmd
}

func newMirrorAttachCmd(g *globalOptions, dataTopic *string) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "attach MIRROR_TOPIC",
		Short: "Attach a Flink Agents mirror to a control topic and seed it with the boundary",
		Long: `attach checks the mirror topic as a Flink Agents job would (it exists, has exactly one
partition and cleanup.policy=compact, its records fold without error and name only the data
topic this control topic governs), appends MIRROR_ATTACHED with its topic ID, and writes to it
the plan that set the boundary, so that the job's boundary equals kcleanup's from the start.
From then on every apply and every worker keeps it in step. Attaching another topic replaces
the mirror. A topic that does not fit (missing, the control or data topic, not one partition or
not compact, a fold the job fails on, a plan for another topic or above kcleanup's boundary), or
a control topic that cannot vouch for its boundary (degraded, history at risk), is refused with
exit 1 and nothing is written (exits 3 and 4 are the recovery gate's). Create the topic first:

  kafka-topics --create --topic action-state.flink --partitions 1 --config cleanup.policy=compact`,
		Example: `  kcleanup mirror attach action-state.flink --topic action-state
  kcleanup mirror attach action-state-cleanup --control-topic action-state.kcleanup --reason "adopted from Flink Agents' tool"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			grace, err := attachGrace(cmd)
			if err != nil {
				return err
			}
			return runMirror(cmd.Context(), *g, *dataTopic, cmd.OutOrStdout(), cmd.ErrOrStderr(),
				func(ctx context.Context, c *worker.Cluster, proj *worker.Projection, o worker.Options) (projector.Mirror, error) {
					if err := protocol.MirrorOwnTopic(proj.State, proj.Topic, args[0]); err != nil {
						return projector.Mirror{}, err // a refusal (exit 1), before AttachMirror's own check
					}
					var err error
					if o.Governors, err = governors(ctx, *g, c, proj, "", ""); err != nil {
						return projector.Mirror{}, err
					}
					o.AttachGrace, o.AttachWithGrace = grace, true
					return c.AttachMirror(ctx, proj, args[0], reason, o)
				}, "attached")
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "attached with kcleanup mirror attach", "why, for the audit")
	addAttachGraceFlag(cmd.Flags())
	return cmd
}

func newMirrorGraceCmd(g *globalOptions, dataTopic *string) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "grace DURATION",
		Short: "Set the restore grace of the attached Flink Agents mirror",
		Long: `grace appends a MIRROR_ATTACHED of the attached mirror that carries a new restore grace: from
then on every apply and every worker deletes nothing for a plan until DURATION after the mirror
showed it covered, so that a Flink Agents restore that passed its check on the mirror just
before can finish replaying. It belongs to the control topic, not to a process: a worker or an
apply started without --restore-grace waits it out, and theirs may only lengthen it. Set it to
the longest restore you run (from the job's recovery check to the end of its replay); 0 turns it
off. --reason is required: history shows the change.`,
		Example: `  kcleanup mirror grace 30m --topic action-state --reason "restores of the large state take 25 minutes"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := parseGrace(args[0], "DURATION")
			if err == nil && d%time.Second != 0 {
				err = usageError(errors.WithHint(errors.Newf("invalid DURATION %q: not whole seconds", args[0]), "give whole seconds: 90s, 15m, 2h"))
			}
			if err != nil {
				return err
			}
			return runMirror(cmd.Context(), *g, *dataTopic, cmd.OutOrStdout(), cmd.ErrOrStderr(),
				func(ctx context.Context, c *worker.Cluster, proj *worker.Projection, o worker.Options) (projector.Mirror, error) {
					return c.SetMirrorGrace(ctx, proj, d, reason, o)
				}, "restore grace set")
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit (required)")
	_ = cmd.MarkFlagRequired("reason")
	return cmd
}

func newMirrorDetachCmd(g *globalOptions, dataTopic *string) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "detach",
		Short: "Stop keeping the attached Flink Agents mirror in step",
		Long: `detach appends MIRROR_DETACHED for the attached mirror. The mirror keeps the boundary it
holds, and a Flink Agents job reading it learns no later one: gate its restores with kcleanup
validate, or point it at another mirror. --reason is required: history shows it.`,
		Example: `  kcleanup mirror detach --topic action-state --reason "job retired"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMirror(cmd.Context(), *g, *dataTopic, cmd.OutOrStdout(), cmd.ErrOrStderr(),
				func(ctx context.Context, c *worker.Cluster, proj *worker.Projection, o worker.Options) (projector.Mirror, error) {
					return c.DetachMirror(ctx, proj, reason, o)
				}, "detached")
		},
	}
	// Required: a detach stops the job learning the boundary, and an
	// auditor must be able to read why.
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit (required)")
	_ = cmd.MarkFlagRequired("reason")
	return cmd
}

func newMirrorSyncCmd(g *globalOptions, dataTopic *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Bring the attached Flink Agents mirror up to the boundary now",
		Long: `sync writes to the attached mirror the plan that set the boundary (with its state on the
control topic), unless the mirror already covers it. The owning worker does the same by itself;
sync is for a mirror that attach could not seed, once the cause is fixed.`,
		Example: `  kcleanup mirror sync --topic action-state`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMirror(cmd.Context(), *g, *dataTopic, cmd.OutOrStdout(), cmd.ErrOrStderr(),
				func(ctx context.Context, c *worker.Cluster, proj *worker.Projection, o worker.Options) (projector.Mirror, error) {
					if err := c.SyncMirror(ctx, proj, o); err != nil {
						return projector.Mirror{}, err
					}
					m, _ := proj.State.Mirror()
					return m, nil
				}, "in step")
		},
	}
	return cmd
}

// mirrorResult is the JSON answer of the mirror commands.
type mirrorResult struct {
	ControlTopic string `json:"controlTopic"`
	Mirror       string `json:"mirror,omitempty"`
	MirrorID     string `json:"mirrorTopicId,omitempty"`
	// RestoreGrace is the grace the attachment carries ("" when it carries none: schema 2).
	RestoreGrace string `json:"restoreGrace,omitempty"`
	Result       string `json:"result"`
}

func runMirror(ctx context.Context, g globalOptions, dataTopic string, stdout, stderr io.Writer,
	do func(context.Context, *worker.Cluster, *worker.Projection, worker.Options) (projector.Mirror, error), result string) error {
	control, err := g.readControlTopic(dataTopic)
	if err != nil {
		return err
	}
	ctx, c, done, err := g.connectFor(ctx)
	if err != nil {
		return err
	}
	defer done()
	proj, err := g.project(ctx, c, control)
	if err != nil {
		return err
	}
	defer proj.Close()
	o := worker.Options{
		Bootstrap: g.bootstrap(),
		Observe:   func(p protocol.Progress) { fmt.Fprintf(stderr, "[%s] %s\n", p.Step, p.Message) },
	}
	m, err := do(ctx, c, proj, o)
	if err != nil {
		return attachError(planError(g, err))
	}
	res := mirrorResult{ControlTopic: control, Mirror: m.Topic, MirrorID: m.TopicID, Result: result}
	grace := ""
	if m.HasGrace {
		res.RestoreGrace = m.RestoreGrace.String()
		grace = ", restore grace " + res.RestoreGrace
	}
	if m.Topic == "" {
		res.Result = "no mirror attached"
	}
	if g.output == outputJSON {
		return writeJSON(stdout, res)
	}
	if m.Topic == "" {
		_, err := fmt.Fprintf(stdout, "control topic %s: no mirror attached\n", control)
		return err
	}
	_, err = fmt.Fprintf(stdout, "control topic %s: mirror %s (topic ID %s%s) %s\n", control, m.Topic, m.TopicID, grace, result)
	return err
}
