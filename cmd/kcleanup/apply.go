package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// applyOptions are the flags of `kcleanup apply`.
type applyOptions struct {
	noWait     bool
	tombstones tombstoneOptions
	grace      time.Duration // --restore-grace
	reason     reasonOption
}

func newApplyCmd(g *globalOptions) *cobra.Command {
	var o applyOptions
	cmd := &cobra.Command{
		Use:   "apply PLAN.json [--reason TEXT] [--no-wait] [--restore-grace D]",
		Short: "Commit a plan's boundary and delete the records below it",
		Long: `Apply a plan, printing each step to standard error as it happens:

  1. check     the plan against the live topic (topic ID, partitions, configs, offsets within
               [log start, high watermark]) and the committed boundary; nothing is written.
               A control topic's first plan also has the data topic read for tombstones (null
               values) from its offsets: one found, or a scan --tombstone-scan-limit stopped,
               refuses it (docs/operator-guide.md, "Migrating from tombstones") unless
               --allow-tombstones, which PLANNED and COMMITTED record in their actor
  2. commit    append PLANNED and COMMITTED to the control topic and read the verdict back.
               COMMITTED accepted is the point of no return: recovery refuses older recovery
               points from then on
  3. delete    append DELETING, check the topic again, DeleteRecords below the plan offsets
  4. verify    read the log-start offsets back and append APPLIED

A failure before step 2 leaves Kafka unchanged. Running apply again on an interrupted plan
resumes it; on an APPLIED plan it says so and exits 0. With --no-wait, apply returns once
COMMITTED is accepted and leaves steps 3 and 4 to the kcleanup workers.

--timeout bounds each phase separately (connecting and reading the control topic; check and
commit; delete and verify), so a whole apply may take up to three times as long, plus the
restore grace: with --restore-grace D (or KCLEANUP_RESTORE_GRACE) and a Flink Agents mirror
attached, apply says until when and waits in-process until D after the mirror's COMMITTED of the
plan was acknowledged before DELETING (docs/flink-agents.md). apply never creates the control
topic: run kcleanup init --topic T first. It writes nothing while another control topic, under
any name, governs the plan's topic (name that one with --control-topic), and it deletes nothing
while the data topic holds a tombstone at or above the committed boundary (a plan whose boundary
would lie at or below one is refused before it is written), as the workers do.

--reason TEXT says why, for the audit: the PLANNED and COMMITTED this run writes carry it, with
this process's host/pid as their actor, and history, status and the audit report show who
committed the plan and why. It is optional (without it history says "(no reason given)"), but
records with a reason are a newer schema that kcleanup builds before it read as such and fail
closed on: upgrade every worker and gate first (docs/events.md, "Reasons").`,
		Example: `  kcleanup apply chk-42.plan.json --reason "reclaim disk before the quarter close (OPS-1234)"
  kcleanup apply chk-42.plan.json --no-wait -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.tombstones.check(); err != nil {
				return err
			}
			if err := o.reason.check(cmd.Flags()); err != nil {
				return err
			}
			var err error
			if o.grace, err = restoreGrace(cmd); err != nil {
				return err
			}
			if o.noWait && o.grace > 0 {
				// It would be ignored: the wait belongs to whoever deletes.
				return usageError(errors.WithHint(errors.Newf("--restore-grace %s with --no-wait: this run deletes nothing, so it waits out no grace", o.grace),
					"the workers delete and wait out the grace the mirror's attachment carries (kcleanup mirror grace sets it, kcleanup status shows it); drop --restore-grace, or --no-wait to wait here"))
			}
			return runApply(cmd.Context(), *g, args[0], o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&o.noWait, "no-wait", false, "return once COMMITTED is accepted; workers delete")
	o.tombstones.addFlags(cmd.Flags(), true)
	addRestoreGraceFlag(cmd.Flags())
	o.reason.addFlag(cmd.Flags(), "the PLANNED and COMMITTED it writes")
	return cmd
}

// applyReport is what apply prints when it succeeds.
type applyReport struct {
	PlanID       string    `json:"planId"`
	Topic        string    `json:"topic"`
	ControlTopic string    `json:"controlTopic"`
	State        fsm.State `json:"state"`
	// AlreadyApplied is true when the plan was APPLIED before this run.
	AlreadyApplied bool `json:"alreadyApplied"`
	// Boundary is the committed boundary of the data topic after this run.
	Boundary events.Offsets `json:"boundary"`
	// LogStart holds the log-start offsets APPLIED verified; absent until APPLIED.
	LogStart events.Offsets `json:"logStart,omitempty"`
	// LiveLogStart holds the data topic's log-start offsets listed now, when the
	// plan was already APPLIED: they may have moved since (another plan, a
	// deletion outside kcleanup). LiveLogStartError says why they are missing.
	LiveLogStart      events.Offsets `json:"liveLogStart,omitempty"`
	LiveLogStartError string         `json:"liveLogStartError,omitempty"`
	// Steps are the steps this run took, as printed to standard error.
	Steps []protocol.Progress `json:"steps"`
}

func runApply(ctx context.Context, g globalOptions, path string, o applyOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	plan, err := readPlanFile(path, stdin)
	if err != nil {
		return err
	}
	s, err := openPlanSession(ctx, g, plan, o.tombstones, stderr)
	if err != nil {
		return err
	}
	defer s.close()

	rep := applyReport{PlanID: plan.PlanID, Topic: plan.Topic, ControlTopic: s.proj.Topic, Steps: []protocol.Progress{}}
	opts := s.opts
	say := opts.Observe
	opts.Observe = func(p protocol.Progress) {
		rep.Steps = append(rep.Steps, p)
		say(p)
	}

	// One run of the protocol: check and commit (or find the plan already committed or
	// applied), then, without --no-wait, delete and verify; --timeout bounds each phase.
	opts.NoWait, opts.PhaseTimeout, opts.RestoreGrace, opts.Reason = o.noWait, g.timeout, o.grace, o.reason.text
	// The restore grace, and a pin the broker's clock still holds, are waited out here, in
	// process (a Pause step of the run), not in a phase: the deletion then runs with its own
	// --timeout. The run reads everything again after each; a later mirror record may move
	// the grace, so it pauses again, a few times at most (protocol.MaxPauses).
	opts.Sleep = func(ctx context.Context, p protocol.Paused) error { return sleepThrough(ctx, p, opts.Observe) }
	out, err := s.cluster.Apply(ctx, s.proj, plan, opts)
	if err != nil {
		err = planError(g, err)
		if errors.Is(err, protocol.ErrGovernedElsewhere) {
			return err // the run's first step: this run wrote nothing, and apply again would not help
		}
		if op, ok := s.proj.State.Operation(plan.PlanID); ok && op.State.Unfinished() {
			return errors.WithHintf(err,
				"the boundary is committed and recovery enforces it; nothing more is needed for safety. "+
					"To finish the deletion, remove the cause and run kcleanup apply %s%s again, or let a kcleanup worker finish it", path, graceArg(o.grace))
		}
		if !errors.Is(err, protocol.ErrRejected) && !errors.Is(err, protocol.ErrSuperseded) {
			err = errors.WithHintf(err, "running kcleanup apply %s%s again is safe: it resumes where this run stopped", path, graceArg(o.grace))
		}
		return err
	}
	rep.State, rep.AlreadyApplied, rep.LogStart = out.State, out.Already, out.LogStart
	rep.Boundary = s.proj.State.Boundary()
	if out.Already {
		// APPLIED is about the incarnation the plan names: on a recreated topic, "applied" and
		// the new topic's log starts side by side would read as a cleanup that holds.
		info, err := withTimeout(ctx, g, func(ctx context.Context) (protocol.Topic, error) {
			return s.cluster.TopicMetadata(ctx, plan.Topic)
		})
		switch {
		case errors.Is(err, worker.ErrTopicNotFound):
			return errors.WithHint(errors.Newf("plan %s was APPLIED to topic %s (ID %s), which no longer exists: it was deleted", plan.PlanID, plan.Topic, plan.TopicID),
				"nothing is left to clean for this plan; a new topic of that name needs its own control topic (kcleanup init --topic "+plan.Topic+" --control-topic <new name>)")
		case err != nil:
			return g.unreachable(err)
		}
		if why := protocol.Recreated(plan, info.ID); why != "" {
			return errors.WithHintf(errors.Newf("plan %s was APPLIED to topic ID %s, but %s; the plan says nothing about the new topic, and this run changed nothing", plan.PlanID, plan.TopicID, why),
				"control topic %s governs the old incarnation; give the new topic a control topic of its own (kcleanup init --topic %s --control-topic <new name>) and plan from one of its recovery points",
				s.proj.Topic, plan.Topic)
		}
		live, err := withTimeout(ctx, g, func(ctx context.Context) (events.Offsets, error) {
			return s.cluster.StartOffsets(ctx, plan.Topic)
		})
		if err != nil {
			rep.LiveLogStartError = err.Error()
		} else {
			rep.LiveLogStart = live
		}
	}
	if g.output == outputJSON {
		return writeJSON(stdout, rep)
	}
	tw := newTable(stdout)
	fmt.Fprintf(tw, "plan\t%s\n", rep.PlanID)
	fmt.Fprintf(tw, "topic\t%s\n", rep.Topic)
	fmt.Fprintf(tw, "control topic\t%s\n", rep.ControlTopic)
	state := string(rep.State)
	switch {
	case rep.AlreadyApplied:
		state += " (already, before this run)"
	case rep.State == fsm.Committed:
		state += " (deletion left to the workers: kcleanup status shows progress)"
	}
	fmt.Fprintf(tw, "state\t%s\n", state)
	fmt.Fprintf(tw, "boundary\t%s\n", rep.Boundary.String())
	switch {
	case rep.LiveLogStart != nil:
		fmt.Fprintf(tw, "log start\t%s (live; APPLIED verified %s)\n", rep.LiveLogStart.String(), rep.LogStart.String())
	case rep.LiveLogStartError != "":
		fmt.Fprintf(tw, "log start\tunknown now (%s); APPLIED verified %s\n", rep.LiveLogStartError, rep.LogStart.String())
	case rep.LogStart != nil:
		fmt.Fprintf(tw, "log start\t%s\n", rep.LogStart.String())
	}
	return tw.Flush()
}

// withTimeout runs one phase of a command under its own --timeout.
func withTimeout[T any](ctx context.Context, g globalOptions, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	return f(ctx)
}

// graceArg repeats this run's own --restore-grace in a printed command, so that the re-run keeps
// it (the attachment's grace needs no flag: every run reads it from the control topic).
func graceArg(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return " --restore-grace " + d.String()
}
