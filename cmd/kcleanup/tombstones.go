package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
)

// tombstoneOptions are the flags of the tombstone check (docs/operator-guide.md, "Migrating
// from tombstones"): plan, apply, submit and doctor bound the scan; apply and submit may allow
// what it found.
type tombstoneOptions struct {
	scanLimit int64
	allow     bool
}

func (o *tombstoneOptions) addFlags(f *pflag.FlagSet, allow bool) {
	f.Int64Var(&o.scanLimit, "tombstone-scan-limit", worker.DefaultTombstoneScanLimit,
		"read at most this many `records` of the data topic for tombstones (0: no limit); a scan it stops cannot tell, which refuses a first plan")
	if allow {
		f.BoolVar(&o.allow, "allow-tombstones", false,
			"commit a control topic's first plan although tombstones lie at or above its offsets (or the scan cannot tell): you assert they name keys no supported recovery point replays; PLANNED and COMMITTED record it in their actor")
	}
}

// check is the usage error of a bad limit.
func (o tombstoneOptions) check() error {
	if o.scanLimit < 0 {
		return usageError(errors.Newf("invalid --tombstone-scan-limit %d: want a number of records, or 0 for no limit", o.scanLimit))
	}
	return nil
}

// apply sets the options of a worker call.
func (o tombstoneOptions) apply(w worker.Options) worker.Options {
	w.TombstoneScanLimit, w.AllowTombstones = o.scanLimit, o.allow
	return w
}

// newTombstonesCmd is the operator's no-tombstones declaration (issue 35 item 8;
// docs/operator-guide.md, "Declaring that the job writes no tombstones").
func newTombstonesCmd(g *globalOptions) *cobra.Command {
	var dataTopic string
	cmd := &cobra.Command{
		Use:   "tombstones",
		Short: "Declare that the job writes no tombstones (so kcleanup need not read the data topic), or withdraw it",
		Long: `The tombstone rule (no deletion while the data topic holds a tombstone at or above the boundary)
reads the data topic, which needs Read on it: every record of the job's action state. An operator
who knows the job writes no tombstones (Flink Agents' cleanup mode rejects them) can declare it
instead, as a record on the control topic, with who and why: from then on the first plan's scan and
the workers' watch do not read the partitions the declaration covers, and Read on the data topic is
not needed there (docs/deploy.md, "Kafka ACLs"). A tombstone kcleanup sees anyway still blocks.
Withdrawing the declaration is the safe direction: the scan resumes at once.`,
	}
	cmd.PersistentFlags().StringVar(&dataTopic, flagTopic, "", "the data `topic` (its control topic is <topic>.kcleanup unless --control-topic says otherwise)")
	cmd.AddCommand(newDeclareNoneCmd(g, &dataTopic), newWithdrawCmd(g, &dataTopic))
	return cmd
}

func newDeclareNoneCmd(g *globalOptions, dataTopic *string) *cobra.Command {
	var reason, since string
	cmd := &cobra.Command{
		Use:   "declare-none --topic T --reason TEXT [--since end|start|P=OFFSET,...]",
		Short: "Declare that the job writes no tombstones to the data topic from given offsets on",
		Long: `declare-none appends NO_TOMBSTONES_DECLARED to the control topic and reads it back. It reads only
the data topic's metadata and offsets (Describe), never its records.

--since says from which offset on, per partition, the declaration holds:
  end      (the default) the data topic's end now: only records written after the declaration are
           covered, since nobody saw how the earlier ones were written. The rule still reads the
           partitions whose boundary lies below it, until a plan above it is committed.
  start    the log start now: you assert the job never wrote a tombstone that is still there.
  0=100,1=230  explicit offsets; a partition not named is not covered (it is read as before).
A later declaration replaces the earlier one; 'kcleanup tombstones withdraw' ends it.`,
		Example: `  kcleanup tombstones declare-none --topic action-state --reason "Flink Agents cleanup mode rejects tombstones"
  kcleanup tombstones declare-none --topic action-state --since start --reason "the job never emitted tombstones (release notes 1.0)"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if *dataTopic == "" {
				return usageError(errors.WithHint(errors.New("declare-none needs --topic: the data topic the declaration is for"),
					"give the data topic: kcleanup tombstones declare-none --topic action-state --reason \"...\""))
			}
			req := worker.DeclarationRequest{Topic: *dataTopic, Reason: reason}
			switch since {
			case "", "end":
			case "start":
				req.FromStart = true
			default:
				offs, err := parseSince(since)
				if err != nil {
					return usageError(err)
				}
				req.Since = offs
			}
			control, err := g.controlTopicOf(*dataTopic)
			if err != nil {
				return err
			}
			d, err := declarationSession(cmd.Context(), *g, control, *dataTopic, cmd.ErrOrStderr(), func(ctx context.Context, c *worker.Cluster, proj *worker.Projection, wo worker.Options) (projector.Declaration, error) {
				return c.Declare(ctx, proj, req, wo)
			})
			if err != nil {
				return err
			}
			return printDeclaration(*g, cmd.OutOrStdout(), control, d)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the job writes no tombstones, for the audit (required)")
	cmd.Flags().StringVar(&since, "since", "end", "from which `offsets` on: end (now), start (the log start) or P=OFFSET,... per partition")
	_ = cmd.MarkFlagRequired("reason")
	return cmd
}

func newWithdrawCmd(g *globalOptions, dataTopic *string) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "withdraw --topic T --reason TEXT",
		Short: "Withdraw the no-tombstones declaration: the tombstone rule reads the data topic again",
		Long: `withdraw appends NO_TOMBSTONES_WITHDRAWN and reads it back. From that record on the first plan's
scan and the workers' watch read the data topic again (and need Read on it). With no declaration in
force it writes nothing.`,
		Example: `  kcleanup tombstones withdraw --topic action-state --reason "release 43 emits tombstones"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			control, err := g.readControlTopic(*dataTopic)
			if err != nil {
				return err
			}
			d, err := declarationSession(cmd.Context(), *g, control, *dataTopic, cmd.ErrOrStderr(), func(ctx context.Context, c *worker.Cluster, proj *worker.Projection, wo worker.Options) (projector.Declaration, error) {
				return c.Withdraw(ctx, proj, reason, wo)
			})
			if err != nil {
				return err
			}
			return printDeclaration(*g, cmd.OutOrStdout(), control, d)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit (required)")
	_ = cmd.MarkFlagRequired("reason")
	return cmd
}

// parseSince reads --since P=OFFSET,...
func parseSince(s string) (events.Offsets, error) {
	out := events.Offsets{}
	for _, part := range strings.Split(s, ",") {
		p, o, ok := strings.Cut(strings.TrimSpace(part), "=")
		pn, perr := strconv.ParseInt(p, 10, 32)
		on, oerr := strconv.ParseInt(o, 10, 64)
		if !ok || perr != nil || oerr != nil || pn < 0 || on < 0 {
			return nil, errors.WithHint(errors.Newf("invalid --since %q: %q is not PARTITION=OFFSET", s, part),
				"give end, start, or offsets such as 0=100,1=230 (partitions and offsets 0 or more)")
		}
		if _, dup := out[int32(pn)]; dup {
			return nil, errors.WithHint(errors.Newf("invalid --since %q: partition %d is given twice", s, pn), "name each partition once")
		}
		out[int32(pn)] = on
	}
	return out, nil
}

// declarationSession reads control and runs do on it, once no other control topic governs the
// data topic (as every writer does).
func declarationSession(ctx context.Context, g globalOptions, control, topic string, stderr io.Writer,
	do func(context.Context, *worker.Cluster, *worker.Projection, worker.Options) (projector.Declaration, error)) (projector.Declaration, error) {
	ctx, c, done, err := g.connectFor(ctx)
	if err != nil {
		return projector.Declaration{}, err
	}
	defer done()
	proj, err := g.project(ctx, c, control)
	if err != nil {
		return projector.Declaration{}, err
	}
	defer proj.Close()
	topicID := ""
	if topic != "" {
		live, err := c.TopicMetadata(ctx, topic)
		if err != nil {
			return projector.Declaration{}, g.unreachable(err)
		}
		topicID = live.ID
	}
	gov, err := governors(ctx, g, c, proj, topic, topicID)
	if err != nil {
		return projector.Declaration{}, err
	}
	o := worker.Options{
		Bootstrap: g.bootstrap(),
		Observe:   func(p protocol.Progress) { fmt.Fprintf(stderr, "[%s] %s\n", p.Step, p.Message) },
		Governors: gov,
	}
	d, err := do(ctx, c, proj, o)
	if err != nil {
		return projector.Declaration{}, governedError(g, err)
	}
	return d, nil
}

func printDeclaration(g globalOptions, stdout io.Writer, control string, d projector.Declaration) error {
	if g.output == outputJSON {
		return writeJSON(stdout, struct {
			ControlTopic string                    `json:"controlTopic"`
			Declaration  *report.DeclarationStatus `json:"declaration"`
		}{control, report.DeclarationStatusOf(d)})
	}
	tw := newTable(stdout)
	fmt.Fprintf(tw, "control topic\t%s\n", control)
	ds := report.DeclarationStatusOf(d)
	if ds == nil {
		fmt.Fprintf(tw, "no-tombstones declaration\tnone: the tombstone rule reads the data topic\n")
		return tw.Flush()
	}
	for _, l := range report.DeclarationLines(ds) {
		fmt.Fprintf(tw, "%s\t%s\n", l[0], l[1])
	}
	return tw.Flush()
}
