package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
)

// Options tune Apply and Finish.
type Options struct {
	// Actor names the writer in control records; default Actor().
	Actor string
	// Reason is the operator's --reason: the PLANNED and COMMITTED this
	// run appends carry it (events.ReasonSchemaVersion); "" for none.
	Reason string
	// NoWait makes Apply return once COMMITTED is accepted.
	NoWait bool
	// PhaseTimeout, when set, bounds each phase of a run on its own: up to the plan's
	// COMMITTED (check, PLANNED, COMMITTED), then to its end (DELETING, DeleteRecords,
	// verify, APPLIED). The CLI's --timeout.
	PhaseTimeout time.Duration
	// Observe, when set, sees each step as it happens.
	Observe func(protocol.Progress)
	// Bootstrap is quoted in hints (the exact commands to run).
	Bootstrap string
	// DeleteRecordsTook, when set, sees how long each DeleteRecords request
	// took and whether it failed as a whole (the worker's latency metric).
	DeleteRecordsTook func(took time.Duration, err error)
	// StepTook, when set, sees how long each protocol step took to execute
	// (the worker's step-duration histogram), by protocol.Kind.
	StepTook func(step string, took time.Duration)
	// TombstoneScanLimit bounds the tombstone scan of a control topic's
	// first plan (ScanTombstones): the most records it reads over all
	// partitions; 0 reads to the end.
	TombstoneScanLimit int64
	// AllowTombstones is the operator's --allow-tombstones
	// (protocol.Config.AllowTombstones).
	AllowTombstones bool
	// RestoreGrace is the operator's --restore-grace
	// (protocol.Config.RestoreGrace); GraceSeen is what an earlier run's
	// protocol.GraceWait said this process first saw (protocol.Config.GraceSeen).
	RestoreGrace time.Duration
	GraceSeen    time.Time
	// AttachGrace, when AttachWithGrace, is the restore grace AttachMirror
	// writes with the attachment (events.MirrorGraceSchemaVersion); without
	// it the attachment carries none (schema version 2).
	AttachGrace     time.Duration
	AttachWithGrace bool
	// Sleep, when set, sleeps through a protocol.Pause step (bounded by
	// ctx, saying why) and the run goes on; an error ends the run with it.
	// Without it a Pause ends the run, and Outcome.Paused hands it to the
	// caller's scheduler (a worker holds no goroutine for a grace).
	Sleep func(ctx context.Context, p protocol.Paused) error
	// Governors is the other control topics governing the incarnation a
	// writer writes about, gathered once (Cluster.Governors): the run
	// refuses while one does (protocol.Config.Governors), and so do the
	// writers that are no run (Unpin, AttachMirror, Declare). nil: not
	// gathered (a worker's finishing run).
	Governors *protocol.Governors
}

func (o Options) say(step, format string, args ...any) {
	if o.Observe != nil {
		o.Observe(protocol.Progress{Step: step, Message: fmt.Sprintf(format, args...)})
	}
}

func (o Options) actor() string {
	if o.Actor != "" {
		return o.Actor
	}
	return Actor()
}

// config is what the protocol is told of this run: the caller's options and
// the principal this cluster's client authenticates as.
func (c *Cluster) config(proj *Projection, o Options) protocol.Config {
	return protocol.Config{ControlTopic: proj.Topic, Bootstrap: o.Bootstrap, NoWait: o.NoWait,
		Principal: c.principal, AllowTombstones: o.AllowTombstones, Now: time.Now().UTC(),
		RestoreGrace: o.RestoreGrace, GraceSeen: o.GraceSeen, Governors: o.Governors}
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
	// Paused is what the run ended waiting for (a Pause it did not sleep
	// through, or a Blocked pin hold), nil when nothing.
	Paused *protocol.Paused `json:"-"`
}

// EnsureControlTopic creates the control topic when it is missing (as
// `kcleanup init` would) and checks it (docs/design.md, "The control topic").
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
	return protocol.FindingsError(report.CheckControlTopic(info, dataTopic, info.Replicas, o.Bootstrap))
}

// Preflight is step 1 of the protocol (protocol.NewPreflight): it checks a
// plan against the live cluster and the projection, and changes nothing.
// Every problem is reported, one line each.
func (c *Cluster) Preflight(ctx context.Context, proj *Projection, plan events.Plan, o Options) error {
	_, err := c.execute(ctx, proj, protocol.NewPreflight(plan, c.config(proj, o)), o)
	return err
}

// Submit appends PLANNED for a plan that passes Preflight.
func (c *Cluster) Submit(ctx context.Context, proj *Projection, plan events.Plan, o Options) (projector.Verdict, error) {
	out, err := c.execute(ctx, proj, protocol.NewSubmit(plan, c.config(proj, o)), o)
	return out.verdict, err
}

// Apply runs the protocol for one plan (protocol.NewApply): check, PLANNED,
// COMMITTED (the point of no return), then Finish. Re-running it on an
// interrupted plan resumes it; on an APPLIED plan it reports Already.
func (c *Cluster) Apply(ctx context.Context, proj *Projection, plan events.Plan, o Options) (Outcome, error) {
	out, err := c.execute(ctx, proj, protocol.NewApply(plan, c.config(proj, o)), o)
	return out.Outcome, err
}

// Finish drives an operation the log shows as COMMITTED or DELETING to
// APPLIED (protocol.NewFinish). Apply and the workers share it. Every step
// is idempotent, so any number of interrupted runs may precede one that
// completes.
func (c *Cluster) Finish(ctx context.Context, proj *Projection, planID string, o Options) (Outcome, error) {
	out, err := c.execute(ctx, proj, protocol.NewFinish(planID, c.config(proj, o)), o)
	return out.Outcome, err
}

type executed struct {
	Outcome
	verdict projector.Verdict
}

// execute performs the steps a protocol run decides, one at a time, and
// feeds each result back. It decides nothing itself: every rule is in
// package protocol.
func (c *Cluster) execute(ctx context.Context, proj *Projection, run *protocol.Run, o Options) (executed, error) {
	out := executed{Outcome: Outcome{PlanID: run.PlanID()}}
	var rep protocol.Report
	armed := "" // a failpoint reached, fired once the step's notes are out
	phases := phaseDeadlines{whole: ctx, each: o.PhaseTimeout}
	defer phases.stop()
	for {
		op, _ := proj.State.Operation(run.PlanID())
		ctx := phases.ctx(op.State.Order() >= fsm.Committed.Order())
		step := run.Next(proj.State, rep)
		for _, n := range step.Notes {
			if o.Observe != nil {
				o.Observe(n)
			}
		}
		if armed != "" {
			failpoint(armed)
			armed = ""
		}
		rep = protocol.Report{}
		if step.Kind == protocol.Pause && o.Sleep != nil {
			// The pause is waited out under the whole run's context, not a
			// phase's: the steps after it get a phase of their own.
			if err := o.Sleep(phases.whole, *step.Pause); err != nil {
				out.State, out.Paused = step.Result.State, step.Pause
				return out, err
			}
			phases.restart()
			continue
		}
		stepBegan := time.Now()
		switch step.Kind {
		case protocol.CatchUp:
			rep.Err = proj.CatchUp(ctx)
		case protocol.Permissions:
			rep.Denied, rep.Err = c.MissingPermissions(ctx, step.Need)
		case protocol.Describe, protocol.Recheck:
			rep.Topic, rep.Err = c.DescribeTopic(ctx, step.Topic)
			rep.Missing = errors.Is(rep.Err, ErrTopicNotFound)
			if step.ScanFrom != nil && rep.Err == nil {
				began := time.Now()
				var scan protocol.TombstoneScan
				scan, rep.Err = c.scanFirstPlan(ctx, rep.Topic, step.ScanFrom, o.TombstoneScanLimit)
				rep.Tombstones = &scan
				o.say("tombstones", "read %s for tombstones from %s (%s)", step.Topic, step.ScanFrom, time.Since(began).Round(time.Millisecond))
			}
		case protocol.Append:
			env := step.Record
			if env.At.IsZero() { // a PINNED comes stamped: its ID covers its time and actor
				env.At, env.Actor = time.Now().UTC(), o.actor()
			}
			if step.Acknowledge != "" {
				env.Actor += " (" + step.Acknowledge + ")"
			}
			if env.Event.CarriesReason() {
				env.Reason = o.Reason
			}
			var headers []kgo.RecordHeader
			if step.Maintenance != "" {
				headers = proj.maintenanceHeaders(step.Maintenance, step.Reason)
			}
			rep.Verdict, rep.Err = proj.Decide(ctx, env, headers...)
			armed = reached(proj, env)
		case protocol.Delete:
			began := time.Now()
			res, err := c.DeleteRecords(ctx, step.Topic, step.Delete)
			if o.DeleteRecordsTook != nil {
				o.DeleteRecordsTook(time.Since(began), err)
			}
			out.Deleted, rep.Err = res, err
			failed := false
			for _, r := range res {
				rep.Deleted = append(rep.Deleted, protocol.Deleted{Partition: r.Partition, Err: r.Err, Code: KafkaCode(r.Err)})
				failed = failed || r.Err != nil
			}
			if err == nil && !failed {
				o.say("delete-records", "DeleteRecords on %d of %d partitions of %s (%s)",
					len(step.Delete), step.Of, step.Topic, time.Since(began).Round(time.Millisecond))
				failpoint(AfterDeleteRecords)
			}
		case protocol.Identify:
			rep.Topic, rep.Err = c.TopicMetadata(ctx, step.Topic)
			rep.Missing = errors.Is(rep.Err, ErrTopicNotFound)
		case protocol.Verify:
			rep.Starts, rep.Err = c.StartOffsets(ctx, step.Topic)
		case protocol.ReadMirror:
			rep.Mirror, rep.Err = c.readMirrorAsWriter(ctx, step.Mirror.Topic, o)
		case protocol.WriteMirror:
			rep.MirrorWrote, rep.Err = c.WriteMirror(ctx, step.Mirror)
			if rep.Err == nil {
				armed = mirrorFailpoint(step.Mirror.Status)
			}
		default: // terminal, or a Pause this executor does not sleep through
			res := step.Result
			out.State, out.Already, out.LogStart, out.verdict = res.State, res.Already, res.LogStart, res.Verdict
			out.Paused = step.Pause
			return out, step.Err
		}
		if o.StepTook != nil {
			o.StepTook(string(step.Kind), time.Since(stepBegan))
		}
		rep.Code = KafkaCode(rep.Err)
	}
}

// phaseDeadlines gives each phase of a run (before and after the plan's COMMITTED) a deadline
// of its own (Options.PhaseTimeout); with none, every step runs under the caller's context.
type phaseDeadlines struct {
	whole     context.Context
	each      time.Duration
	committed bool
	current   context.Context
	cancel    context.CancelFunc
}

// ctx is the context of the next step: a new deadline when the phase changed.
func (p *phaseDeadlines) ctx(committed bool) context.Context {
	if p.each <= 0 {
		return p.whole
	}
	if p.current == nil || committed != p.committed {
		p.stop()
		p.current, p.cancel = context.WithTimeout(p.whole, p.each)
		p.committed = committed
	}
	return p.current
}

// restart gives the next step a new deadline (after a pause).
func (p *phaseDeadlines) restart() {
	p.stop()
	p.current = nil
}

func (p *phaseDeadlines) stop() {
	if p.cancel != nil {
		p.cancel()
	}
}

// reached names the failpoint of the record just read back, if any.
func reached(proj *Projection, env events.Envelope) string {
	op, _ := proj.State.Operation(env.PlanID)
	switch {
	case env.Event == events.Committed && (op.State == fsm.Committed || op.State == fsm.Deleting):
		return AfterCommitted
	case env.Event == events.Deleting && op.State == fsm.Deleting:
		return AfterDeleting
	}
	return ""
}

// envelope is a control record for plan, as this writer appends it.
func envelope(e events.Event, plan events.Plan, o Options) events.Envelope {
	return events.Envelope{
		SchemaVersion: events.SchemaVersion, Event: e, PlanID: plan.PlanID, Plan: plan,
		At: time.Now().UTC(), Actor: o.actor(),
	}
}

// degraded is protocol.Degraded for a projection.
func degraded(proj *Projection) error { return protocol.Degraded(proj.State, proj.Topic) }
