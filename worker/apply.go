package worker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
)

// Errors a caller of Apply or Finish can act on.
var (
	// ErrSuperseded: a concurrent commit raised the boundary above this plan.
	ErrSuperseded = errors.New("plan was superseded by a concurrent commit")
	// ErrBlocked: a condition that retrying will not fix until an operator
	// acts (topic recreated, policy changed, authorization denied).
	ErrBlocked = errors.New("operation is blocked")
	// ErrRejected: the live cluster or the control topic refuses the plan.
	ErrRejected = errors.New("plan rejected")
	// ErrDegraded: the control topic holds records from a newer kcleanup.
	ErrDegraded = errors.New("projection is degraded")
)

// Progress reports one step of the protocol as it happens.
type Progress struct {
	Step    string `json:"step"`
	Message string `json:"message"`
}

// Options tune Apply and Finish.
type Options struct {
	// Actor names the writer in control records; default Actor().
	Actor string
	// NoWait makes Apply return once COMMITTED is accepted.
	NoWait bool
	// FinishAfter, with NoWait, says the caller runs Finish itself right after: the
	// permission check before COMMITTED then covers the whole protocol.
	FinishAfter bool
	// Observe, when set, sees each step as it happens.
	Observe func(Progress)
	// Bootstrap is quoted in hints (the exact commands to run).
	Bootstrap string
	// DeleteRecordsTook, when set, sees how long each DeleteRecords request
	// took and whether it failed as a whole (the worker's latency metric).
	DeleteRecordsTook func(took time.Duration, err error)
}

func (o Options) say(step, format string, args ...any) {
	if o.Observe != nil {
		o.Observe(Progress{Step: step, Message: fmt.Sprintf(format, args...)})
	}
}

func (o Options) actor() string {
	if o.Actor != "" {
		return o.Actor
	}
	return Actor()
}

// Outcome is where an operation ended up.
type Outcome struct {
	PlanID string    `json:"planId"`
	State  fsm.State `json:"state"`
	// Already is true when the plan was APPLIED before this call.
	Already bool `json:"alreadyApplied"`
	// Deleted holds the DeleteRecords answers of this call.
	Deleted []DeleteResult `json:"-"`
	// LogStart holds the verified log-start offsets reported in APPLIED.
	LogStart events.Offsets `json:"logStart,omitempty"`
}

func envelope(e events.Event, plan events.Plan, o Options) events.Envelope {
	return events.Envelope{
		SchemaVersion: events.SchemaVersion, Event: e, PlanID: plan.PlanID, Plan: plan,
		At: time.Now().UTC(), Actor: o.actor(),
	}
}

// EnsureControlTopic creates the control topic when it is missing (as
// `kcleanup init` would) and checks it against DESIGN §4.
func (c *Cluster) EnsureControlTopic(ctx context.Context, controlTopic, dataTopic string, o Options) error {
	info, err := c.TopicMetadata(ctx, controlTopic)
	if errors.Is(err, ErrTopicNotFound) {
		if _, err := c.CreateControlTopic(ctx, controlTopic, -1); err != nil {
			return err
		}
		o.say("init", "created control topic %s (1 partition, cleanup.policy=compact)", controlTopic)
		info, err = c.TopicMetadata(ctx, controlTopic)
	}
	if err != nil {
		return err
	}
	if info.Configs, err = c.TopicConfigs(ctx, controlTopic); err != nil {
		return err
	}
	return findingsError(CheckControlTopic(info, dataTopic, info.Replicas, o.Bootstrap))
}

// findingsError turns blocking findings into one error with a hint each.
func findingsError(fs []Finding) error {
	block := Blocking(fs)
	if len(block) == 0 {
		return nil
	}
	var lines []string
	for _, f := range block {
		lines = append(lines, f.Subject+": "+f.Message)
	}
	err := errors.Mark(errors.Newf("%s", strings.Join(lines, "\n")), ErrRejected)
	for _, f := range block {
		if f.Hint != "" {
			err = errors.WithHint(err, f.Hint)
		}
	}
	return err
}

// Preflight is step 1 of DESIGN §6: it checks a plan against the live
// cluster and the projection, and changes nothing. Every problem is reported,
// one line each.
func (c *Cluster) Preflight(ctx context.Context, proj *Projection, plan events.Plan, o Options) error {
	if err := plan.Validate(); err != nil {
		return errors.Mark(err, ErrRejected)
	}
	if err := degraded(proj); err != nil {
		return err
	}
	if topic, id, ok := proj.State.Binding(); ok && (topic != plan.Topic || id != plan.TopicID) {
		hint := "use the control topic of the plan's data topic (--control-topic)"
		if topic == plan.Topic {
			// Same name, other ID: the topic was recreated. Its old control topic keeps the
			// old incarnation's history; the new incarnation needs a control topic of its own.
			hint = fmt.Sprintf("topic %s was deleted and recreated since this control topic was bound: "+
				"give the new incarnation its own control topic (kcleanup init --topic %s --control-topic <new name>) "+
				"and pass that --control-topic to every kcleanup command for it", topic, topic)
		}
		return errors.WithHint(errors.Mark(errors.Newf(
			"control topic %s governs topic %s (ID %s); the plan is for %s (ID %s)",
			proj.Topic, topic, id, plan.Topic, plan.TopicID), ErrRejected), hint)
	}
	info, err := c.DescribeTopic(ctx, plan.Topic)
	if errors.Is(err, ErrTopicNotFound) {
		return errors.WithHint(errors.Mark(err, ErrRejected), "check the plan's topic name and the bootstrap server (-b)")
	}
	if err != nil {
		return err
	}
	var fs []Finding
	subject := "data topic " + plan.Topic
	if info.ID != plan.TopicID {
		fs = append(fs, Finding{Block, subject, fmt.Sprintf(
			"has topic ID %s but the plan was made for ID %s: the topic was deleted and recreated", info.ID, plan.TopicID),
			"make a new plan from recovery markers of the current topic"})
	}
	if got, want := info.Partitions, plan.Offsets.Partitions(); !slices.Equal(got, want) {
		fs = append(fs, Finding{Block, subject, fmt.Sprintf(
			"has partitions %v but the plan covers %v", got, want), "make a new plan from current recovery markers"})
	}
	fs = append(fs, Blocking(CheckDataTopic(info, o.Bootstrap))...)
	boundary := proj.State.Boundary()
	for _, p := range plan.Offsets.Partitions() {
		if msg, hint := partitionRefusal(p, plan.Offsets[p], info, boundary, proj.State.BoundarySetBy); msg != "" {
			fs = append(fs, Finding{Block, subject, msg, hint})
		}
	}
	return findingsError(fs)
}

func degraded(proj *Projection) error {
	if d, why := proj.State.Degraded(); d {
		return errors.WithHint(errors.Mark(errors.Newf("control topic %s: %s", proj.Topic, why), ErrDegraded),
			"upgrade kcleanup to a version that understands every record of the control topic")
	}
	return nil
}

func accepted(v projector.Verdict) bool {
	return v.Outcome == projector.Accepted || v.Outcome == projector.Duplicate
}

// Submit appends PLANNED for a plan that passes Preflight.
func (c *Cluster) Submit(ctx context.Context, proj *Projection, plan events.Plan, o Options) (projector.Verdict, error) {
	if err := c.Preflight(ctx, proj, plan, o); err != nil {
		return projector.Verdict{}, err
	}
	return c.submit(ctx, proj, plan, o)
}

func (c *Cluster) submit(ctx context.Context, proj *Projection, plan events.Plan, o Options) (projector.Verdict, error) {
	v, err := proj.Decide(ctx, envelope(events.Planned, plan, o))
	if err != nil {
		return v, err
	}
	if !accepted(v) {
		return v, errors.Mark(errors.Newf("PLANNED for plan %s was rejected at offset %d: %s: %s",
			plan.PlanID, v.Offset, v.Reason, v.Detail), ErrRejected)
	}
	o.say("planned", "PLANNED %s at control offset %d", plan.PlanID, v.Offset)
	return v, nil
}

// Apply runs the protocol of DESIGN §6 for one plan: check, PLANNED,
// COMMITTED (the point of no return), then Finish. Re-running it on an
// interrupted plan resumes it; on an APPLIED plan it reports Already.
func (c *Cluster) Apply(ctx context.Context, proj *Projection, plan events.Plan, o Options) (Outcome, error) {
	out := Outcome{PlanID: plan.PlanID}
	if err := plan.Validate(); err != nil {
		return out, errors.Mark(err, ErrRejected)
	}
	if err := degraded(proj); err != nil {
		return out, err
	}
	op, _ := proj.State.Operation(plan.PlanID)
	switch op.State {
	case fsm.Applied:
		out.State, out.Already, out.LogStart = fsm.Applied, true, op.LogStart
		o.say("applied", "plan %s is already APPLIED", plan.PlanID)
		return out, nil
	case fsm.Committed, fsm.Deleting:
		o.say("resume", "plan %s is %s: resuming", plan.PlanID, op.State)
	default:
		if err := c.Preflight(ctx, proj, plan, o); err != nil {
			return out, err
		}
		o.say("check", "plan %s fits the live topic and the boundary", plan.PlanID)
		// Before the point of no return: every ACL the rest of the protocol needs.
		if err := c.CheckPermissions(ctx, ApplyPermissions(proj.Topic, plan.Topic, o.NoWait && !o.FinishAfter), o.Bootstrap); err != nil {
			return out, err
		}
		if err := c.commit(ctx, proj, plan, op.State, o); err != nil {
			return out, err
		}
	}
	if o.NoWait {
		out.State = fsm.Committed
		if op.State == fsm.Deleting {
			out.State = fsm.Deleting
		}
		return out, nil
	}
	return c.Finish(ctx, proj, plan.PlanID, o)
}

// commit appends PLANNED (when absent) and COMMITTED, and returns once the
// log accepted COMMITTED. A commit that loses a race is retried while the
// plan is still monotonic; otherwise ErrSuperseded names the winner.
func (c *Cluster) commit(ctx context.Context, proj *Projection, plan events.Plan, state fsm.State, o Options) error {
	if state == fsm.None {
		if _, err := c.submit(ctx, proj, plan, o); err != nil {
			return err
		}
	}
	for attempt := 0; ; attempt++ {
		env := envelope(events.Committed, plan, o)
		env.Boundary = proj.State.Boundary()
		for p, off := range plan.Offsets {
			if b, ok := env.Boundary[p]; !ok || off > b {
				env.Boundary[p] = off
			}
		}
		v, err := proj.Decide(ctx, env)
		if err != nil {
			return err
		}
		if op, _ := proj.State.Operation(plan.PlanID); op.State == fsm.Committed || op.State == fsm.Deleting || op.State == fsm.Applied {
			if v.Covered {
				// Only a race gets here (Preflight refuses a plan below the
				// boundary): the boundary already covers the plan, so the
				// deletion that follows removes nothing recovery may need.
				o.say("committed", "COMMITTED %s at control offset %d, covered by the current boundary: it raises nothing", plan.PlanID, v.Offset)
				failpoint(AfterCommitted)
				return nil
			}
			o.say("committed", "COMMITTED %s at control offset %d: recovery now refuses older recovery points", plan.PlanID, v.Offset)
			failpoint(AfterCommitted)
			return nil
		}
		if v.Reason == projector.ReasonBoundaryRegression {
			return c.superseded(proj, plan)
		}
		if v.Reason != projector.ReasonBoundaryMismatch || attempt >= 3 {
			return errors.Mark(errors.Newf("COMMITTED for plan %s was rejected at offset %d: %s: %s",
				plan.PlanID, v.Offset, v.Reason, v.Detail), ErrRejected)
		}
		o.say("commit", "another commit landed first; recomputing the boundary and retrying")
	}
}

func (c *Cluster) superseded(proj *Projection, plan events.Plan) error {
	boundary := proj.State.Boundary()
	for _, p := range plan.Offsets.Partitions() {
		if b := boundary[p]; plan.Offsets[p] < b {
			winner := proj.State.BoundarySetBy(p)
			return errors.WithHint(errors.Mark(errors.Newf(
				"plan %s was superseded by plan %s: partition %d boundary is %d, above this plan's %d",
				plan.PlanID, winner, p, b, plan.Offsets[p]), ErrSuperseded),
				"nothing was deleted for this plan; plan again from a recovery point at or after the new boundary")
		}
	}
	return errors.Mark(errors.Newf("plan %s was superseded", plan.PlanID), ErrSuperseded)
}

// Finish drives an operation the log shows as COMMITTED or DELETING to
// APPLIED: steps 3 and 4 of DESIGN §6. Apply and the workers share it. Every
// step is idempotent, so any number of interrupted runs may precede one that
// completes.
func (c *Cluster) Finish(ctx context.Context, proj *Projection, planID string, o Options) (Outcome, error) {
	out := Outcome{PlanID: planID}
	if err := proj.CatchUp(ctx); err != nil {
		return out, err
	}
	if err := degraded(proj); err != nil {
		return out, err
	}
	op, ok := proj.State.Operation(planID)
	if !ok {
		return out, errors.Mark(errors.Newf("plan %s is not on control topic %s", planID, proj.Topic), ErrRejected)
	}
	out.State = op.State
	switch op.State {
	case fsm.Applied:
		out.Already, out.LogStart = true, op.LogStart
		return out, nil
	case fsm.Committed, fsm.Deleting:
	default:
		return out, errors.Mark(errors.Newf("plan %s is %s; only a COMMITTED plan may be deleted", planID, op.State), ErrRejected)
	}
	plan := op.Plan

	// Checked before DELETING too, so that a blocked operation retried by a
	// worker does not append a DELETING on every attempt.
	if err := c.recheck(ctx, plan, o); err != nil {
		return out, err
	}
	// And every ACL the rest needs, so that a principal that cannot finish writes nothing.
	if err := c.CheckPermissions(ctx, FinishPermissions(proj.Topic, plan.Topic), o.Bootstrap); err != nil {
		return out, err
	}
	v, err := proj.Decide(ctx, envelope(events.Deleting, plan, o))
	if err != nil {
		return out, err
	}
	if !accepted(v) {
		if op, _ := proj.State.Operation(planID); op.State == fsm.Applied {
			out.State, out.LogStart = fsm.Applied, op.LogStart
			return out, nil
		}
		return out, errors.Newf("DELETING for plan %s was rejected at offset %d: %s: %s", planID, v.Offset, v.Reason, v.Detail)
	}
	out.State = fsm.Deleting
	o.say("deleting", "DELETING %s at control offset %d", planID, v.Offset)
	failpoint(AfterDeleting)

	// The topic may have been recreated or reconfigured since COMMITTED.
	// DeleteRecords addresses topics by name only, so this check narrows but
	// cannot close the window (DESIGN §9).
	if err := c.recheck(ctx, plan, o); err != nil {
		return out, err
	}
	start, err := c.StartOffsets(ctx, plan.Topic)
	if err != nil {
		return out, err
	}
	to := events.Offsets{}
	for p, off := range plan.Offsets {
		if start[p] < off {
			to[p] = off
		}
	}
	began := time.Now()
	res, err := c.DeleteRecords(ctx, plan.Topic, to)
	if o.DeleteRecordsTook != nil && len(to) > 0 {
		o.DeleteRecordsTook(time.Since(began), err)
	}
	if err != nil {
		return out, err
	}
	out.Deleted = res
	if err := deleteErrors(plan.Topic, res); err != nil {
		return out, err
	}
	o.say("delete-records", "DeleteRecords on %d of %d partitions of %s (%s)",
		len(to), len(plan.Offsets), plan.Topic, time.Since(began).Round(time.Millisecond))
	failpoint(AfterDeleteRecords)

	after, err := c.StartOffsets(ctx, plan.Topic)
	if err != nil {
		return out, err
	}
	seen := events.Offsets{}
	for _, p := range plan.Offsets.Partitions() {
		if after[p] < plan.Offsets[p] {
			return out, errors.Newf("verify %s-%d: log start is %d, below the plan's %d; will retry", plan.Topic, p, after[p], plan.Offsets[p])
		}
		seen[p] = after[p]
	}
	o.say("verify", "every log start of %s is at or above the plan", plan.Topic)

	if err := proj.CatchUp(ctx); err != nil {
		return out, err
	}
	if op, _ := proj.State.Operation(planID); op.State == fsm.Applied {
		out.State, out.LogStart = fsm.Applied, op.LogStart
		return out, nil
	}
	env := envelope(events.Applied, plan, o)
	env.LogStart = seen
	if v, err = proj.Decide(ctx, env); err != nil {
		return out, err
	}
	if op, _ := proj.State.Operation(planID); op.State != fsm.Applied {
		return out, errors.Newf("APPLIED for plan %s was rejected at offset %d: %s: %s", planID, v.Offset, v.Reason, v.Detail)
	}
	out.State, out.LogStart = fsm.Applied, seen
	o.say("applied", "APPLIED %s at control offset %d", planID, v.Offset)
	return out, nil
}

// recheck repeats the live checks that must still hold right before a
// deletion: same topic incarnation, and a policy that allows DeleteRecords.
func (c *Cluster) recheck(ctx context.Context, plan events.Plan, o Options) error {
	info, err := c.TopicMetadata(ctx, plan.Topic)
	if errors.Is(err, ErrTopicNotFound) {
		return errors.Mark(err, ErrBlocked)
	}
	if err != nil {
		return err
	}
	if info.ID != plan.TopicID {
		return errors.WithHint(errors.Mark(errors.Newf(
			"topic %s now has ID %s, not the plan's %s: it was recreated; nothing was deleted",
			plan.Topic, info.ID, plan.TopicID), ErrBlocked),
			"the committed boundary stays; make a new plan for the new topic on a new control topic")
	}
	if info.Configs, err = c.TopicConfigs(ctx, plan.Topic); err != nil {
		return err
	}
	if err := findingsError(CheckDataTopic(info, o.Bootstrap)); err != nil {
		return errors.Mark(err, ErrBlocked)
	}
	return nil
}

// deleteErrors reports every failed partition, one line each, and marks the
// error blocked when retrying cannot help.
func deleteErrors(topic string, res []DeleteResult) error {
	var lines []string
	permanent := false
	for _, r := range res {
		if r.Err == nil {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s-%d: %v", topic, r.Partition, r.Err))
		if errors.Is(r.Err, kerr.PolicyViolation) || errors.Is(r.Err, kerr.TopicAuthorizationFailed) ||
			errors.Is(r.Err, kerr.ClusterAuthorizationFailed) {
			permanent = true
		}
	}
	if len(lines) == 0 {
		return nil
	}
	err := errors.Newf("DeleteRecords failed on %d partition(s):\n%s", len(lines), strings.Join(lines, "\n"))
	if permanent {
		err = errors.Mark(err, ErrBlocked)
	}
	return err
}
