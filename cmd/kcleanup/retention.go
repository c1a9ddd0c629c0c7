package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"

	"github.com/kcleanup/kcleanup/checkpoint/store"
	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
)

func newRetentionCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "retention",
		Short: "Follow the job: let the owner trim the topic as Flink retires its checkpoints",
		Long: `A retention policy, recorded on the control topic, tells the worker that owns it to
follow the job: each round it lists the watched checkpoint and savepoint locations, reads the
markers of every completed recovery point, and commits a plan up to the per-partition minimum
over all of them and every active pin, never past a recovery point that still exists. A
location it cannot list, a point it cannot read, no completed point at all, or a location
outside the worker's --checkpoint-root means no plan that round, with the reason in status,
/v1/status and the kcleanup_retention_blocked metric. See docs/operator-guide.md, "Follow the job".`,
	}
	dataTopic := new(string)
	cmd.PersistentFlags().StringVar(dataTopic, flagTopic, "", "data `topic` whose control topic (<topic>.kcleanup) holds the policy")
	cmd.AddCommand(newRetentionSetCmd(g, dataTopic), newRetentionClearCmd(g, dataTopic), newRetentionShowCmd(g, dataTopic))
	return cmd
}

// retentionResult is the JSON answer of retention set and clear.
type retentionResult struct {
	ControlTopic string                  `json:"controlTopic"`
	Policy       *report.RetentionStatus `json:"policy"`
}

func newRetentionSetCmd(g *globalOptions, dataTopic *string) *cobra.Command {
	var r events.Retention
	var every, reason string
	cmd := &cobra.Command{
		Use:   "set --topic T --watch LOC [--watch LOC...] [--every 1m] [--min-advance N] [--operator-uid UID | --operator-uid-hash H] --reason TEXT",
		Short: "Record the retention policy the owner of the control topic follows",
		Long: `set appends RETENTION_SET to the control topic and reads it back; it replaces any earlier
policy. Each --watch is a location as Flink lays it out: a checkpoint base directory
(<dir>/<job id>/chk-N, every job ID under it, since an upgraded job leaves its old checkpoints
behind), one job's checkpoint directory (<dir>/<job id>), or a savepoint directory (holding
savepoint-* directories); local paths or s3:// URLs. The worker reads them only under its
--checkpoint-root locations: a location outside them blocks the policy with that reason.

--every (at least 1s) is how often the owner looks; --min-advance is the least rise, on some
partition, worth a plan. When a recovery point holds markers of several operators, name the one
with --operator-uid or --operator-uid-hash, or every such point is unreadable and blocks the policy.
Nothing is read or deleted here: run kcleanup retention show for the dry run.`,
		Example: `  kcleanup retention set --topic action-state --watch s3://flink/checkpoints --watch s3://flink/savepoints --every 1m --min-advance 1000 --reason "follow the job"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := time.ParseDuration(every)
			if err != nil || d < events.MinRetentionEvery {
				return usageError(errors.WithHintf(errors.Newf("--every %q is not a duration of at least %s", every, events.MinRetentionEvery), "give a duration such as 30s, 1m or 5m"))
			}
			if *dataTopic == "" {
				return usageError(errors.WithHint(errors.New("--topic is required"), "name the data topic the policy trims, e.g. --topic action-state"))
			}
			r.Topic, r.Every, r.Reason = *dataTopic, d, reason
			if err := r.Check(events.RetentionSet); err != nil {
				return usageError(errors.WithHint(err, "run 'kcleanup retention set --help' for usage"))
			}
			control, err := g.controlTopicOf(r.Topic)
			if err != nil {
				return err
			}
			p, err := retentionSession(cmd.Context(), *g, control, cmd.ErrOrStderr(), func(ctx context.Context, c *worker.Cluster, proj *worker.Projection, o worker.Options) (projector.Policy, error) {
				return c.SetRetention(ctx, proj, r, o)
			})
			if err != nil {
				return err
			}
			return printPolicy(*g, cmd.OutOrStdout(), control, p, true)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&r.Watch, "watch", nil, "checkpoint base, job or savepoint `location` to watch (repeatable; local path or s3://)")
	f.StringVar(&every, "every", "1m", "how often the owner looks (`duration`, at least 1s)")
	f.Int64Var(&r.MinAdvance, "min-advance", 0, "least rise of some partition's boundary worth a plan (`offsets`)")
	f.StringVar(&r.OperatorUID, "operator-uid", "", "`uid` of the operator holding the markers, when a point holds several")
	f.StringVar(&r.OperatorUIDHash, "operator-uid-hash", "", "Flink operator ID (32 hex digits) of the operator holding the markers")
	f.StringVar(&reason, "reason", "", "why, for the audit (required)")
	_ = cmd.MarkFlagRequired("watch")
	_ = cmd.MarkFlagRequired("reason")
	cmd.MarkFlagsMutuallyExclusive("operator-uid", "operator-uid-hash")
	return cmd
}

func newRetentionClearCmd(g *globalOptions, dataTopic *string) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "clear --topic T --reason TEXT",
		Short: "End the retention policy: the owner stops following the job",
		Long: `clear appends RETENTION_CLEARED and reads it back. From that record on the owner commits no
plan of its own; plans already committed finish as usual. With no policy set nothing is written.`,
		Example: `  kcleanup retention clear --topic action-state --reason "job retired"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(reason) == "" {
				return usageError(errors.WithHint(errors.New("--reason is blank"), "say why the policy is cleared: history shows it"))
			}
			control, err := g.readControlTopic(*dataTopic)
			if err != nil {
				return err
			}
			p, err := retentionSession(cmd.Context(), *g, control, cmd.ErrOrStderr(), func(ctx context.Context, c *worker.Cluster, proj *worker.Projection, o worker.Options) (projector.Policy, error) {
				topic := *dataTopic
				if topic == "" {
					if cur, ok := proj.State.Retention(); ok {
						topic = cur.Topic
					}
				}
				return c.ClearRetention(ctx, proj, topic, reason, o)
			})
			if err != nil {
				return err
			}
			return printPolicy(*g, cmd.OutOrStdout(), control, p, p.Offset >= 0 && p.Topic != "")
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit (required)")
	_ = cmd.MarkFlagRequired("reason")
	return cmd
}

func newRetentionShowCmd(g *globalOptions, dataTopic *string) *cobra.Command {
	var roots []string
	cmd := &cobra.Command{
		Use:   "show --topic T [--checkpoint-root LOC...] [-o json]",
		Short: "Dry run of the policy: every recovery point found, its markers, the bound and the plan",
		Long: `show reads the policy and does what the owner's next round would, writing nothing: it lists
every watched location, reads the markers of every completed recovery point, and prints each
point with its offsets (foreign: another topic's; unrestorable: below the committed boundary on
some partitions), the points that bound cleanup now, and the plan that would follow or why none
would. With --checkpoint-root it reads only under those locations, as a worker does; without,
it reads every watched location as the user running it.`,
		Example: `  kcleanup retention show --topic action-state
  kcleanup retention show --topic action-state --checkpoint-root s3://flink -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			control, err := g.readControlTopic(*dataTopic)
			if err != nil {
				return err
			}
			opts := store.Options{}
			if len(roots) > 0 {
				rs, err := store.ParseRoots(roots)
				if err != nil {
					return usageError(errors.WithHint(err, "give absolute directories or s3:// URLs"))
				}
				opts = store.Options{Confined: true, Roots: rs}
			}
			return runRetentionShow(cmd.Context(), *g, control, opts, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringArrayVar(&roots, flagWorkerCkptRoot, nil, "read watched locations only under this `location` (repeatable), as a worker does")
	return cmd
}

func retentionSession(ctx context.Context, g globalOptions, control string, stderr io.Writer,
	do func(context.Context, *worker.Cluster, *worker.Projection, worker.Options) (projector.Policy, error)) (projector.Policy, error) {
	ctx, c, done, err := g.connectFor(ctx)
	if err != nil {
		return projector.Policy{}, err
	}
	defer done()
	proj, err := g.project(ctx, c, control)
	if err != nil {
		return projector.Policy{}, err
	}
	defer proj.Close()
	o := worker.Options{
		Bootstrap: g.bootstrap(),
		Observe:   func(p protocol.Progress) { fmt.Fprintf(stderr, "[%s] %s\n", p.Step, p.Message) },
	}
	p, err := do(ctx, c, proj, o)
	if err != nil {
		return projector.Policy{}, g.unreachable(err)
	}
	return p, nil
}

func printPolicy(g globalOptions, w io.Writer, control string, p projector.Policy, has bool) error {
	var st *report.RetentionStatus
	if has {
		s := report.RetentionStatusOf(p)
		st = &s
	}
	if g.output == outputJSON {
		return writeJSON(w, retentionResult{ControlTopic: control, Policy: st})
	}
	if st == nil {
		_, err := fmt.Fprintf(w, "control topic %s follows no retention policy\n", control)
		return err
	}
	tw := newTable(w)
	fmt.Fprintf(tw, "policy\t%s\n", st.Name)
	fmt.Fprintf(tw, "control topic\t%s (offset %d)\n", control, st.Offset)
	fmt.Fprintf(tw, "topic\t%s\n", st.Topic)
	fmt.Fprintf(tw, "watch\t%s\n", strings.Join(st.Watch, ", "))
	fmt.Fprintf(tw, "every\t%s\n", st.Every)
	fmt.Fprintf(tw, "min advance\t%d\n", st.MinAdvance)
	if op := st.OperatorUID + st.OperatorUIDHash; op != "" {
		fmt.Fprintf(tw, "operator\t%s\n", op)
	}
	fmt.Fprintf(tw, "set\t%s by %s: %s\n", st.At.Format(time.RFC3339), st.Actor, clip(st.Reason, report.TextLimit))
	if st.Cleared != nil {
		fmt.Fprintf(tw, "cleared\t%s by %s at offset %d: %s\n", st.Cleared.At.Format(time.RFC3339), st.Cleared.Actor, st.Cleared.Offset, clip(st.Cleared.Reason, report.TextLimit))
	} else {
		fmt.Fprintf(tw, "state\tactive: the owner of %s follows it every %s\n", control, st.Every)
	}
	return tw.Flush()
}

// retentionShow is retention show's JSON answer.
type retentionShow struct {
	ControlTopic string                  `json:"controlTopic"`
	Policy       *report.RetentionStatus `json:"policy"`
	report.RetentionRound
}

func runRetentionShow(ctx context.Context, g globalOptions, control string, opts store.Options, w io.Writer) error {
	c, proj, done, err := g.openProjection(ctx, control)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	f := &worker.Follower{Store: opts}
	d, policy, ok, err := c.FollowDryRun(ctx, proj, f)
	if err != nil {
		return g.unreachable(err)
	}
	if !ok {
		if g.output == outputJSON {
			return writeJSON(w, retentionShow{ControlTopic: control})
		}
		_, err := fmt.Fprintf(w, "control topic %s follows no retention policy: kcleanup retention set --topic T --watch LOC --reason TEXT sets one\n", control)
		return err
	}
	st := report.RetentionStatusOf(policy)
	round := report.RetentionRoundOf(d)
	if g.output == outputJSON {
		return writeJSON(w, retentionShow{ControlTopic: control, Policy: &st, RetentionRound: round})
	}
	if err := printPolicy(g, w, control, policy, true); err != nil {
		return err
	}
	return report.WriteRetentionRound(w, round)
}
