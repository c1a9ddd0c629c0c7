package main

import (
	"context"
	"fmt"
	"io"

	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

func newSubmitCmd(g *globalOptions) *cobra.Command {
	var t tombstoneOptions
	var reason reasonOption
	cmd := &cobra.Command{
		Use:   "submit PLAN.json [--reason TEXT]",
		Short: "Record a plan on the control topic (PLANNED) without committing it",
		Long: `Check a plan against the live cluster and the committed boundary, then append its PLANNED
record to the control topic. Nothing is committed and nothing is deleted: a PLANNED plan is a
proposal that anyone can review (kcleanup status, history) and later apply.

submit never creates the control topic (run kcleanup init --topic T first) and writes nothing
while another control topic, under any name, governs the plan's topic. Submitting a plan that is
already on the control topic changes nothing.

A control topic's first plan is refused while the data topic holds a tombstone (null value) at or
above its offsets, or while a scan bounded by --tombstone-scan-limit cannot tell
(docs/operator-guide.md, "Migrating from tombstones"); --allow-tombstones overrides that and is
recorded in the PLANNED record's actor.

--reason TEXT says why, for the audit: the PLANNED carries it (history and status show it). It
is optional; records with a reason are a newer schema that kcleanup builds before it fail closed
on, so upgrade every worker and gate first (docs/events.md, "Reasons").`,
		Example: `  kcleanup submit chk-42.plan.json
  kcleanup submit chk-42.plan.json --reason "proposed for Tuesday's change window (OPS-1234)"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := t.check(); err != nil {
				return err
			}
			if err := reason.check(cmd.Flags()); err != nil {
				return err
			}
			return runSubmit(cmd.Context(), *g, args[0], t, reason.text, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	t.addFlags(cmd.Flags(), true)
	reason.addFlag(cmd.Flags(), "the PLANNED it writes")
	return cmd
}

// submitReport is what submit prints.
type submitReport struct {
	PlanID       string    `json:"planId"`
	ControlTopic string    `json:"controlTopic"`
	State        fsm.State `json:"state"`
	// Offset is the control-topic offset of the PLANNED record this call appended; -1 when the
	// plan was already on the control topic and nothing was written.
	Offset int64 `json:"offset"`
	// Outcome is the log's verdict on the record: accepted or duplicate; "" when nothing was written.
	Outcome string `json:"outcome,omitempty"`
}

func runSubmit(ctx context.Context, g globalOptions, path string, t tombstoneOptions, reason string, stdin io.Reader, stdout, stderr io.Writer) error {
	plan, err := readPlanFile(path, stdin)
	if err != nil {
		return err
	}
	s, err := openPlanSession(ctx, g, plan, t, stderr)
	if err != nil {
		return err
	}
	defer s.close()
	s.opts.Reason = reason

	rep := submitReport{PlanID: plan.PlanID, ControlTopic: s.proj.Topic, Offset: -1}
	if op, ok := s.proj.State.Operation(plan.PlanID); ok {
		// No run writes here, but the plan writers' rule still refuses beside another governor.
		if err := worker.Governed(s.proj, s.opts); err != nil {
			return planError(g, err)
		}
		rep.State = op.State
		fmt.Fprintf(stderr, "plan %s is already on control topic %s (%s): nothing written\n", plan.PlanID, s.proj.Topic, op.State)
	} else {
		ctx, cancel := context.WithTimeout(ctx, g.timeout)
		defer cancel()
		v, err := s.cluster.Submit(ctx, s.proj, plan, s.opts)
		if err != nil {
			return planError(g, err)
		}
		op, _ := s.proj.State.Operation(plan.PlanID)
		rep.State, rep.Offset, rep.Outcome = op.State, v.Offset, string(v.Outcome)
	}
	if g.output == outputJSON {
		return writeJSON(stdout, rep)
	}
	tw := newTable(stdout)
	fmt.Fprintf(tw, "plan\t%s\n", rep.PlanID)
	fmt.Fprintf(tw, "control topic\t%s\n", rep.ControlTopic)
	fmt.Fprintf(tw, "state\t%s\n", rep.State)
	if rep.Offset >= 0 {
		fmt.Fprintf(tw, "PLANNED at offset\t%d (%s)\n", rep.Offset, rep.Outcome)
	}
	if rep.State == fsm.Planned {
		fmt.Fprintf(tw, "next\tkcleanup apply %s\n", path)
	}
	return tw.Flush()
}

// readPlanFile loads a plan strictly ("-" is standard input): an edited plan fails here, naming
// the file, before any connection is made.
func readPlanFile(path string, stdin io.Reader) (events.Plan, error) {
	data, err := readInput(path, stdin)
	if err != nil {
		return events.Plan{}, err
	}
	plan, err := events.ParsePlan(data)
	if err != nil {
		return events.Plan{}, decodeError(err, "plan file", path, data) // ParsePlan's hints say what to do
	}
	return plan, nil
}

// planSession is a cluster connection and a caught-up projection of the plan's control topic.
type planSession struct {
	cluster *worker.Cluster
	proj    *worker.Projection
	opts    worker.Options
}

// openPlanSession connects, checks the control topic of plan's data topic (it must exist:
// worker.PrepareControlTopic), reads it to its end and gathers the other control topics governing
// the plan's topic (worker.Cluster.Governors: the run refuses while one does), all within
// --timeout. Progress lines go to stderr.
func openPlanSession(ctx context.Context, g globalOptions, plan events.Plan, t tombstoneOptions, stderr io.Writer) (*planSession, error) {
	control, err := g.controlTopicOf(plan.Topic)
	if err != nil {
		return nil, err
	}
	c, err := g.connect(ctx)
	if err != nil {
		return nil, err
	}
	opts := t.apply(worker.Options{
		Bootstrap: g.bootstrap(),
		Observe: func(p protocol.Progress) {
			fmt.Fprintf(stderr, "[%s] %s\n", p.Step, p.Message)
		},
	})
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	if err := c.PrepareControlTopic(ctx, control, plan, opts); err != nil {
		c.Close()
		return nil, planError(g, err)
	}
	proj, err := g.projectChecked(ctx, c, control)
	if err != nil {
		c.Close()
		return nil, err
	}
	// The other control topics governing the plan's topic, gathered once: the run refuses
	// before its first step while one does (protocol.GovernedElsewhere).
	if opts.Governors, err = c.Governors(ctx, proj, plan.Topic, plan.TopicID); err != nil {
		proj.Close()
		c.Close()
		return nil, planError(g, err)
	}
	return &planSession{cluster: c, proj: proj, opts: opts}, nil
}

// governors is worker.Cluster.Governors for the commands that write no plan (pin, unpin,
// mirror attach, a tombstones declaration, adopt): the fact their writer decides on (the
// incarnation (topic, topicID), or, with topic "", the one proj's control topic is bound to).
func governors(ctx context.Context, g globalOptions, c *worker.Cluster, proj *worker.Projection, topic, topicID string) (*protocol.Governors, error) {
	gov, err := c.Governors(ctx, proj, topic, topicID)
	return gov, planError(g, err)
}

// governedError is how a writer that writes no plan words its error: a refusal because another
// control topic governs the topic as the plan writers do (planError: nothing was written), any
// other error as before.
func governedError(g globalOptions, err error) error {
	if errors.Is(err, protocol.ErrGovernedElsewhere) {
		return planError(g, err)
	}
	return g.unreachable(err)
}

func (s *planSession) close() {
	s.proj.Close()
	s.cluster.Close()
}

// planError adds to an error of the protocol what the operator needs to know: whether the
// cluster stopped answering, and that a refused plan left Kafka unchanged. Every such error
// exits 1: a plan that does not fit the cluster is an error, not a recovery-point refusal (3).
func planError(g globalOptions, err error) error {
	err = g.unreachable(err)
	// A COMMITTED that was written and rejected (a pin landed first) is not "nothing was
	// committed": its error says what happened and that it changed nothing.
	if errors.Is(err, protocol.ErrRejected) && !errors.Is(err, protocol.ErrCommitRejected) {
		err = errors.WithHint(err, "nothing was committed or deleted")
	}
	return err
}
