package daemon

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
)

// owner drives the pending operations of one control topic while this
// replica owns it. Its loop runs on one goroutine, which alone touches its
// projection; the retry table is also read by HTTP handlers, under mu.
type owner struct {
	topic string
	since time.Time
	// soft ends when no new work may start; hard abandons the step in flight.
	soft, hard         context.Context
	stopSoft, stopHard context.CancelFunc
	done               chan struct{}
	busy               atomic.Bool // an attempt to finish an operation is in flight

	mu       sync.Mutex
	attempts map[string]*attempt // by plan ID, only for pending operations

	// settingsAt and settingsErr are the last check of the control topic's
	// settings (ControlTopicSafe), owner goroutine only.
	settingsAt  time.Time
	settingsErr error
	// shapedAt and notControl are the last check that the topic is shaped like
	// a control topic (one partition, cleanup.policy=compact): an owner
	// writes nothing (no repair, no retraction tombstone) to a topic that
	// is not, such as a data topic named by mistake.
	shapedAt   time.Time
	notControl bool
	// mirrorSynced is what the mirror was last brought up to (syncMirror),
	// owner goroutine only.
	mirrorSynced string
	// watchedAt is when the tombstone watch last ran.
	watchedAt time.Time
	// mirrorSyncedAt is when (mirrorLagsSince).
	mirrorSyncedAt time.Time
	mirrorRetryAt  time.Time
	// tombstones is the watch of the data topic above the boundary
	// (tombstones.go), owner goroutine only; tombstoneReason is its
	// finding for /readyz and metrics, under mu.
	tombstones      tombstoneWatch
	tombstoneReason string
	// retention follows the control topic's retention policy (retention.go).
	retention retentionRound
}

// pinHeldMargin is added to a pin hold's gap before the retry: the
// broker's clock need not tick in step with this host's.
const pinHeldMargin = time.Second

// retry is the owner's retry schedule (protocol.OwnerRetry.After decides with it).
func (c daemonConfig) retry() protocol.OwnerRetry {
	return protocol.OwnerRetry{BackoffMin: c.backoffMin, BackoffMax: c.backoffMax, Blocked: c.blockedRetry, PinMargin: pinHeldMargin}
}

// settingsEvery is how often an owner re-checks its control topic's
// settings: an operator's fix is seen within it.
const settingsEvery = 10 * time.Second

// tombstonesEvery is how often an owner's tombstone watch reads on while the
// control topic is otherwise idle (no pass to make): a job that writes
// tombstones again shows in the metric and /readyz within about this long,
// before anyone commits the next plan. Each check lists two offsets and
// reads only the records appended since the last one.
const tombstonesEvery = 10 * time.Second

// attempt is the retry state of one pending operation.
type attempt struct {
	failures int
	next     time.Time // no new attempt before this
	blocked  bool      // the last failure needs an operator (or time)
	denied   bool      // ...and it was a missing ACL
	reason   string
	hints    []string  // the fixes the error carries (errors.GetAllHints)
	since    time.Time // first failure of the current streak
	// grace: the operation waits out the restore grace until grace.Until
	// (next); not a failure. graceSeen is when this replica first saw the
	// mirror show the plan with no time known (protocol.Config.GraceSeen).
	grace     *protocol.GraceWait
	graceSeen time.Time
	// pinHeld: the block is a pin the broker's clock still holds
	// (protocol.PinHeld): it passes by itself, so no operator alert.
	pinHeld bool
	// result is the owner's decision on the last attempt (protocol.OwnerRetry).
	result protocol.OwnerResult
}

// own starts a runner for a control topic this replica was assigned; when
// it cannot tell yet whether the topic is a control topic, it asks again in
// the background (retryOwn) until the group takes the topic away.
func (d *Daemon) own(topic string) {
	if d.tryOwn(topic, nil) == protocol.RetryAssigned {
		if u := d.startRetry(topic); u != nil {
			go d.retryOwn(topic, u)
		}
	}
}

// tryOwn serves and owns an assigned control topic, or says why not. A
// retry (u, the entry it retries for) acts only while that entry stands:
// revoked and lost drop it under d.mu, and a new assignment makes another.
func (d *Daemon) tryOwn(topic string, u *unownedTopic) protocol.Assignment {
	// The group may assign a topic its regex matches before discovery
	// found it: serve it first (status, readiness and metrics read the view).
	if d.view(topic) == nil {
		matches, read, shaped, why := d.matches(topic), true, false, ""
		if matches {
			shaped, why = d.shaped(topic)
			read = why == ""
		}
		a := protocol.AssignedTopic(matches, read, shaped)
		if a == protocol.OwnAssigned && !d.addView(topic) {
			a, why = protocol.RetryAssigned, "its reader could not be created"
		}
		switch a {
		case protocol.RefuseAssigned:
			d.forgetUnowned(topic)
			d.log.Warn("assigned a control topic it cannot serve; not owning it", "control_topic", topic)
			return a
		case protocol.RetryAssigned:
			if u != nil {
				if !d.stillUnowned(topic, u, why) {
					return protocol.RefuseAssigned // revoked meanwhile: the retry ends
				}
			} else if d.setUnowned(topic, why) {
				d.log.Warn("assigned a control topic whose settings cannot be read now; not owning it until they are (asking again)",
					"control_topic", topic, "err", why)
			}
			return a
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if u != nil && d.unowned[topic] != u {
		return protocol.RefuseAssigned // revoked meanwhile
	}
	if _, was := d.unowned[topic]; was {
		delete(d.unowned, topic)
		d.log.Info("assigned control topic readable again; owning it", "control_topic", topic)
	}
	if d.stopping || d.owners[topic] != nil || d.runCtx == nil {
		return protocol.OwnAssigned
	}
	o := &owner{topic: topic, since: time.Now(), done: make(chan struct{}), attempts: map[string]*attempt{}, retention: retentionRound{policy: -1}}
	o.soft, o.stopSoft = context.WithCancel(d.runCtx)
	o.hard, o.stopHard = context.WithCancel(context.WithoutCancel(d.runCtx))
	d.owners[topic] = o
	d.metrics.takeover()
	d.log.Info("took ownership of control topic", "control_topic", topic, "group", d.cfg.group)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer close(o.done)
		defer o.stopHard()
		d.runOwner(o)
	}()
	return protocol.OwnAssigned
}

// unownedTopic is an assigned control topic this replica does not own yet,
// and why.
type unownedTopic struct {
	why      string
	retrying bool // a retryOwn runs for it
}

// setUnowned records why an assigned topic is not owned; it reports whether
// that is news (to log once, not at every retry).
func (d *Daemon) setUnowned(topic, why string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.unowned == nil {
		d.unowned = map[string]*unownedTopic{}
	}
	u := d.unowned[topic]
	if u == nil {
		d.unowned[topic] = &unownedTopic{why: why}
		return true
	}
	u.why = why
	return false
}

// startRetry returns the entry the caller is to start retryOwn for, nil
// when one runs already (or none is needed).
func (d *Daemon) startRetry(topic string) *unownedTopic {
	d.mu.Lock()
	defer d.mu.Unlock()
	u := d.unowned[topic]
	if u == nil || u.retrying || d.stopping {
		return nil
	}
	u.retrying = true
	return u
}

// stillUnowned updates why a retry's topic is not owned, and reports
// whether its entry u still stands.
func (d *Daemon) stillUnowned(topic string, u *unownedTopic, why string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.unowned[topic] != u {
		return false
	}
	u.why = why
	return true
}

// forgetUnowned drops an unowned topic (revoked, lost, refused): its retry
// ends. It reports whether it was there.
func (d *Daemon) forgetUnowned(topic string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.unowned[topic]
	delete(d.unowned, topic)
	return ok
}

// unownedTopics is, per assigned control topic not owned yet, why (/readyz).
func (d *Daemon) unownedTopics() map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.unowned) == 0 {
		return nil
	}
	out := make(map[string]string, len(d.unowned))
	for t, u := range d.unowned {
		out[t] = "assigned to this replica but not owned (its operations wait): " + u.why
	}
	return out
}

// retryOwn asks again, with the owners' backoff, for an assigned control
// topic whose settings could not be read, until it is owned, refused, or no
// longer assigned.
func (d *Daemon) retryOwn(topic string, u *unownedTopic) {
	wait := d.cfg.backoffMin
	for sleep(d.runCtxOrBackground(), wait) {
		d.mu.Lock()
		pending := d.unowned[topic] == u
		stopping := d.stopping
		d.mu.Unlock()
		if !pending || stopping || d.tryOwn(topic, u) != protocol.RetryAssigned {
			return
		}
		wait = min(2*wait, d.cfg.backoffMax)
	}
}

// disown stops the runner of a control topic: no new step starts, the step
// in flight may run on for grace, then it is abandoned. Abandoning is safe
// because every step is idempotent and the next owner starts from the log.
func (d *Daemon) disown(topic string, grace time.Duration, why string) {
	d.mu.Lock()
	o := d.owners[topic]
	delete(d.owners, topic)
	d.mu.Unlock()
	if o == nil {
		return
	}
	o.stopSoft()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-o.done:
	case <-t.C:
		busy := o.busy.Load()
		o.stopHard()
		<-o.done
		if busy {
			d.log.Warn("abandoned the step in flight; the next owner resumes the operation", "control_topic", topic, "grace", grace.String())
		}
	}
	d.log.Info("released control topic", "control_topic", topic, "why", why, "owned_for", time.Since(o.since).Round(time.Millisecond).String())
}

// owned reports the owner of a control topic, or nil.
func (d *Daemon) owned(topic string) *owner {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.owners[topic]
}

// ownedTopics lists the control topics this replica owns, sorted.
func (d *Daemon) ownedTopics() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Sorted(maps.Keys(d.owners))
}

// runOwner is the loop of one owned control topic: read the log to its end,
// re-append what the projection lists as repairs (overwritten or out-of-order keys) and tombstone retracted keys, finish each due pending operation, wait a poll
// interval (or until the next retry is due), again.
func (d *Daemon) runOwner(o *owner) {
	log := d.log.With("control_topic", o.topic)
	proj := d.cluster.OpenBoundedProjection(o.topic)
	defer func() { proj.Close() }() // the one open when the loop ends (see reread)
	proj.Actor = d.cfg.actor
	proj.PauseWhenIdle() // no fetch while there is nothing to read
	opened := time.Now()
	var passedAt time.Time // start of the last pass that succeeded
	opts := worker.Options{
		Actor:     d.cfg.actor,
		Bootstrap: d.cfg.bootstrap,
		Observe: func(p protocol.Progress) {
			log.Info(p.Message, "step", p.Step)
		},
		DeleteRecordsTook: func(took time.Duration, _ error) {
			d.metrics.observeDelete(o.topic, took)
		},
		StepTook: func(step string, took time.Duration) {
			d.metrics.observeStep(o.topic, step, took)
		},
	}
	readFailures := 0
	for o.soft.Err() == nil {
		wait := d.cfg.pollInterval
		if d.ownerIdle(o, proj, passedAt) {
			if time.Since(o.watchedAt) >= tombstonesEvery && d.readSlot(o.soft) {
				// Nothing else to do, but the job may write tombstones again: the watch
				// alone, without a pass (an idle replica sends little else).
				ctx, cancel := context.WithTimeout(o.hard, d.cfg.readTimeout)
				d.watchTombstones(ctx, o, proj)
				cancel()
				d.releaseRead()
			}
			if o.retentionDue(proj) && d.readSlot(o.soft) {
				d.followRetention(o, proj, opts)
				d.releaseRead()
			}
			sleep(o.soft, wait)
			continue
		}
		if !d.readSlot(o.soft) {
			return
		}
		began := time.Now()
		err := d.pass(o, proj, opts)
		d.releaseRead()
		if err != nil {
			if o.soft.Err() != nil {
				return
			}
			readFailures++
			wait = d.cfg.retry().Backoff(readFailures)
			log.Warn("cannot read control topic; will retry", errAttr(err), "attempt", readFailures, "retry_in", wait.String())
		} else {
			readFailures, passedAt = 0, began
			if o.retentionDue(proj) && d.readSlot(o.soft) {
				d.followRetention(o, proj, opts)
				d.releaseRead()
			}
			if due := o.nextDue(); !due.IsZero() {
				wait = min(wait, max(time.Until(due), 0))
			}
		}
		if fresh := d.reread(o, proj, opened); fresh != nil {
			proj, opened, passedAt = fresh, time.Now(), time.Time{}
			proj.PauseWhenIdle()
		}
		sleep(o.soft, wait)
	}
}

// ownerIdle reports whether a pass would do nothing: the last pass
// succeeded, the control topic's high watermark listed since it began
// (watchEnds) is still the end that pass read to, and the projection holds
// nothing to do (no pending operation, repair, retraction, unconfirmed
// commit or disputed conflict, no mirror sync due). A replica owning hundreds of idle control
// topics then sends no request for them between two listings.
func (d *Daemon) ownerIdle(o *owner, proj *worker.Projection, passedAt time.Time) bool {
	v := d.view(o.topic)
	if v == nil || passedAt.IsZero() {
		return false
	}
	l := v.listed.Load()
	if l == nil || !l.at.After(passedAt) || l.hw != proj.End || proj.Next < proj.End {
		return false
	}
	st := proj.State
	return len(st.Pending()) == 0 && len(st.Repairs()) == 0 && len(st.Retractions()) == 0 &&
		len(st.Unconfirmed()) == 0 && len(st.Disputed()) == 0 && o.mirrorIdle(proj, d.mirrorLagsSince(o.topic, o.mirrorSyncedAt))
}

// reread returns a fresh projection of the control topic (and closes proj)
// when proj shows a disputed conflict (projector.State.Disputed: the log
// cleaner showed it a conflict the other way, docs/design.md §5) and was
// opened at least protocol.RetractionGrace ago (the retraction's writer has
// had its grace; then the cleaner's lag decides); nil otherwise. A disputed
// projection repairs neither side and deletes nothing; a read made once
// the cleaner has removed the retracted loser names the full log's winner.
// The fresh projection is read to the end by the next pass.
func (d *Daemon) reread(o *owner, proj *worker.Projection, opened time.Time) *worker.Projection {
	plans := proj.State.Disputed()
	if len(plans) == 0 || time.Since(opened) < d.cfg.rereadAfter {
		return nil
	}
	fresh := d.cluster.OpenBoundedProjection(o.topic)
	d.log.Warn("control topic shows a disputed conflict; reading it afresh", "control_topic", o.topic, "plans", plans)
	proj.Close()
	fresh.Actor = d.cfg.actor
	return fresh
}

// pass is one round of the owner loop. It returns an error only when the
// control topic could not be read or repaired; failures of an operation are
// recorded in its attempt and logged.
func (d *Daemon) pass(o *owner, proj *worker.Projection, opts worker.Options) error {
	ctx, cancel := context.WithTimeout(o.hard, d.cfg.readTimeout)
	defer cancel()
	if err := proj.CatchUp(ctx); err != nil {
		return err
	}
	if o.shapedAt.IsZero() || time.Since(o.shapedAt) >= settingsEvery {
		// Settings that cannot be read leave repairs going, as before:
		// only a topic known not to be a control topic is left alone.
		_, not, err := d.cluster.ShapedAsControlTopics(ctx, []string{o.topic})
		o.shapedAt, o.notControl = time.Now(), err == nil && len(not) == 1
	}
	if o.notControl {
		return errors.Mark(errors.WithHintf(errors.Newf("topic %s is not a control topic (it needs one partition and cleanup.policy=compact): this replica writes nothing to it", o.topic),
			"check --control-topic: give the control topic (kcleanup init creates it), not the data topic"), protocol.ErrBlocked)
	}
	if n := len(proj.State.Repairs()); n > 0 {
		d.log.Warn("re-appending accepted records listed for repair (key overwritten, or out of order)", "control_topic", o.topic, "keys", n)
	}
	// Also tombstones keys that hold only rejected records, once past the
	// grace period; a no-op when there is nothing to do.
	if err := proj.Repair(ctx); err != nil {
		return err
	}
	// An operation whose COMMITTED the cleaner erased: re-commit it only
	// where nothing more would be deleted (see Recommit).
	lines, err := d.cluster.Recommit(ctx, proj, opts)
	for _, line := range lines {
		d.log.Warn("history at risk: "+line, "control_topic", o.topic)
	}
	if err != nil {
		return err
	}
	d.syncMirror(ctx, o, proj, opts)
	pending := proj.State.Pending()
	o.keepOnly(pending)
	if len(pending) > 0 && time.Since(o.settingsAt) >= settingsEvery {
		o.settingsAt, o.settingsErr = time.Now(), d.cluster.ControlTopicSafe(ctx, o.topic, d.cfg.bootstrap)
	}
	// On every pass, not only before a deletion: the data topic above the
	// boundary, read on from where the last pass stopped.
	d.watchTombstones(ctx, o, proj)
	// Another served control topic bound to the same topic incarnation: each is blind to the
	// other's boundary, so no deletion starts on either until one is retired (blocked, with
	// the fix, in /v1/status).
	shared := d.sharedGovernance(o.topic, proj.State)
	for _, op := range pending {
		if o.soft.Err() != nil {
			return nil
		}
		if !o.due(op.PlanID, time.Now()) {
			continue
		}
		// Settings and bindings first, then the tombstone watch (protocol.OwnerFacts.Gate).
		facts := protocol.OwnerFacts{Settings: o.settingsErr, Shared: shared, Tombstones: o.tombstones.err}
		if verdict, err := facts.Gate(); verdict != protocol.Drive {
			a := o.record(op.PlanID, err, func(failures int) protocol.OwnerResult {
				return d.cfg.retry().Gated(verdict, failures, time.Now())
			})
			if verdict == protocol.HoldBlocked {
				d.metrics.attempt(o.topic, "blocked")
				d.log.Error("operation blocked: it stays in its state until the cause is removed", "control_topic", o.topic,
					"plan", op.PlanID, "state", op.State, errAttr(err), "hints", errors.GetAllHints(err), "retry_at", a.next.Format(time.RFC3339))
				continue
			}
			d.metrics.attempt(o.topic, "retry")
			if err == o.tombstones.err {
				d.log.Warn("tombstone watch cannot tell yet; will retry", "control_topic", o.topic, "plan", op.PlanID,
					errAttr(err), "retry_in", time.Until(a.next).Round(time.Millisecond).String())
				continue
			}
			d.log.Warn("cannot check the control topic's settings or bindings; will retry", "control_topic", o.topic, "plan", op.PlanID,
				errAttr(err), "retry_in", time.Until(a.next).Round(time.Millisecond).String())
			o.settingsAt = time.Time{}
			continue
		}
		d.finish(o, proj, op, opts)
	}
	return nil
}

// sharedGovernance is protocol.SharedGovernance for a served control topic (self: its
// fold) over the bindings of every control topic this replica serves, as each view last read
// it; nil while self is unbound or alone. A view still on its first read may be bound to the
// same topic: until it is read, that is a transient error (fail closed), never "alone".
func (d *Daemon) sharedGovernance(topic string, self *projector.State) error {
	bt, bid, _ := self.Binding()
	return d.sharedGovernanceOf(topic, bt, bid)
}

// sharedGovernanceOf is sharedGovernance for a control topic bound to topic bt (ID bid).
func (d *Daemon) sharedGovernanceOf(topic, bt, bid string) error {
	if bt == "" {
		return nil
	}
	var known []protocol.Governor
	for _, v := range d.allViews() {
		if v.topic == topic {
			continue
		}
		s := v.snap.Load()
		if s.caughtUpAt.IsZero() && s.err == nil {
			return errors.Newf("control topic %s is served but not read yet: whether it governs topic %s too is not known", v.topic, bt)
		}
		known = append(known, protocol.Governor{ControlTopic: v.topic, Topic: s.status.Topic, TopicID: s.status.TopicID})
	}
	return protocol.SharedGovernance(topic, bt, bid, known, d.cfg.bootstrap)
}

// sharedGovernances is sharedGovernance for every served control topic, as its view last
// read it, with the fix (for /readyz): the finding whether or not anything is pending.
func (d *Daemon) sharedGovernances() map[string]string {
	out := map[string]string{}
	for _, v := range d.allViews() {
		s := v.snap.Load()
		if s.caughtUpAt.IsZero() {
			continue
		}
		err := d.sharedGovernanceOf(v.topic, s.status.Topic, s.status.TopicID)
		if err != nil && errors.Is(err, protocol.ErrBlocked) {
			out[v.topic] = err.Error() + "; fix: " + strings.Join(errors.GetAllHints(err), "; ")
		}
	}
	return out
}

// finish makes one attempt to drive one operation to APPLIED.
func (d *Daemon) finish(o *owner, proj *worker.Projection, op projector.Operation, opts worker.Options) {
	log := d.log.With("control_topic", o.topic, "plan", op.PlanID)
	log.Info("finishing operation", "state", op.State, "delete_attempts", op.DeleteAttempts)
	ctx, cancel := context.WithTimeout(o.hard, d.cfg.operationTimeout)
	defer cancel()
	o.busy.Store(true)
	defer o.busy.Store(false)
	began := time.Now()
	opts.RestoreGrace, opts.GraceSeen = d.cfg.restoreGrace, o.graceSeen(op.PlanID)
	out, err := d.cluster.Finish(ctx, proj, op.PlanID, opts)
	took := time.Since(began).Round(time.Millisecond)
	if waiting := out.Paused != nil && out.Paused.Grace != nil; err != nil && !waiting && o.hard.Err() != nil {
		log.Info("step in flight abandoned; the next owner resumes it", errAttr(err))
		return
	}
	a := o.record(op.PlanID, err, func(failures int) protocol.OwnerResult {
		return d.cfg.retry().After(err, worker.KafkaCode(err), out.Paused, failures, time.Now())
	})
	switch r := a.result; r.Outcome {
	case protocol.Waiting:
		// Nothing is held meanwhile: the owner moves on and retries the
		// operation when the grace is out.
		g := r.Grace
		d.metrics.attempt(o.topic, "grace")
		log.Info("waiting out the restore grace: no deletion before it is out", "until", g.Until.Format(time.RFC3339), "mirror_acknowledged_at", g.From.Format(time.RFC3339Nano), "time_known", g.Known, "grace", g.Grace.String())
	case protocol.Applied:
		d.metrics.attempt(o.topic, "applied")
		log.Info("operation applied", "state", out.State, "already", out.Already, "log_start", out.LogStart, "took", took.String())
	case protocol.Held:
		// Not a fault: it passes by itself when the broker's clock does.
		h := r.Hold
		d.metrics.attempt(o.topic, "blocked")
		log.Warn("deletion held by a pin the broker's clock still holds", "pin", h.Pin.PinID, "committed_at", h.CommittedAt.Format(time.RFC3339),
			"broker_time", h.Broker.Format(time.RFC3339), "gap", h.Gap().String(), errAttr(err), "retry_at", a.next.Format(time.RFC3339))
	case protocol.BlockedOutcome:
		d.metrics.attempt(o.topic, "blocked")
		log.Error("operation blocked: it stays in its state until the cause is removed",
			"state", out.State, errAttr(err), "hints", errors.GetAllHints(err), "retry_at", a.next.Format(time.RFC3339), "took", took.String())
	default:
		d.metrics.attempt(o.topic, "retry")
		log.Warn("operation attempt failed; will retry", "state", out.State, errAttr(err),
			"attempt", a.failures, "retry_in", time.Until(a.next).Round(time.Millisecond).String(), "took", took.String())
	}
}

func (o *owner) due(planID string, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	a := o.attempts[planID]
	return a == nil || !now.Before(a.next)
}

// nextDue is the earliest time a waiting operation may be retried.
func (o *owner) nextDue() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	var next time.Time
	for _, a := range o.attempts {
		if next.IsZero() || a.next.Before(next) {
			next = a.next
		}
	}
	return next
}

// graceSeen is when this replica first saw the mirror show the plan
// without a known time (zero: never).
func (o *owner) graceSeen(planID string) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	if a := o.attempts[planID]; a != nil {
		return a.graceSeen
	}
	return time.Time{}
}

// waiting lists the operations waiting out the restore grace, soonest first.
func (o *owner) waiting() []report.GraceOperation {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := []report.GraceOperation{}
	for id, a := range o.attempts {
		if a.grace != nil {
			out = append(out, report.GraceOperation{PlanID: id, Mirror: a.grace.Mirror, Since: a.grace.From, TimeKnown: a.grace.Known, Until: a.grace.Until})
		}
	}
	slices.SortFunc(out, func(a, b report.GraceOperation) int { return a.Until.Compare(b.Until) })
	return out
}

// record keeps what the owner's decision (decide, given the failures of
// the current streak counting this one) made of an attempt at planID
// (err: its error, nil when it applied): an applied operation is
// forgotten, a restore grace is no failure.
func (o *owner) record(planID string, err error, decide func(failures int) protocol.OwnerResult) attempt {
	o.mu.Lock()
	defer o.mu.Unlock()
	a := o.attempts[planID]
	failures := 1
	if a != nil {
		failures = a.failures + 1
	}
	r := decide(failures)
	if r.Outcome == protocol.Applied {
		delete(o.attempts, planID)
		return attempt{result: r}
	}
	if a == nil {
		a = &attempt{since: time.Now()}
		o.attempts[planID] = a
	}
	a.result, a.next, a.grace = r, r.Next, nil
	if r.Outcome == protocol.Waiting {
		a.blocked, a.denied, a.pinHeld, a.reason, a.hints = false, false, false, "", nil
		a.grace = &r.Grace
		if !r.Grace.Known && a.graceSeen.IsZero() {
			a.graceSeen = r.Grace.From
		}
		return *a
	}
	a.failures = failures
	a.blocked, a.reason, a.hints = r.Blocked(), err.Error(), errors.GetAllHints(err)
	a.denied = a.blocked && worker.IsAuthorizationError(err)
	a.pinHeld = r.Outcome == protocol.Held
	return *a
}

// keepOnly forgets operations that are no longer pending (another writer,
// or this one, finished them).
func (o *owner) keepOnly(pending []projector.Operation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for id := range o.attempts {
		if !slices.ContainsFunc(pending, func(op projector.Operation) bool { return op.PlanID == id }) {
			delete(o.attempts, id)
		}
	}
}

// denied returns the reason of the oldest operation blocked by a missing ACL, if any.
func (o *owner) denied() (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var oldest *attempt
	for _, a := range o.attempts {
		if a.denied && (oldest == nil || a.since.Before(oldest.since)) {
			oldest = a
		}
	}
	if oldest == nil {
		return "", false
	}
	return oldest.reason, true
}

// awaitingOperator counts the blocked operations an operator must unblock
// (a pin hold passes by itself).
func (o *owner) awaitingOperator() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, a := range o.attempts {
		if a.blocked && !a.pinHeld {
			n++
		}
	}
	return n
}

// blocked lists the blocked operations, oldest first.
func (o *owner) blocked() []report.BlockedOperation {
	return o.attemptsWhere(func(a *attempt) bool { return a.blocked })
}

// retrying lists the operations retried on the owner's schedule (neither
// blocked nor waiting out a restore grace), oldest first, with the last reason.
func (o *owner) retrying() []report.BlockedOperation {
	return o.attemptsWhere(func(a *attempt) bool { return !a.blocked && a.grace == nil && a.reason != "" })
}

// attemptsWhere lists the operations whose last attempt matches, oldest first.
func (o *owner) attemptsWhere(match func(*attempt) bool) []report.BlockedOperation {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := []report.BlockedOperation{}
	for id, a := range o.attempts {
		if match(a) {
			out = append(out, report.BlockedOperation{PlanID: id, Reason: a.reason, Hints: slices.Clone(a.hints), Since: a.since, RetryAt: a.next})
		}
	}
	slices.SortFunc(out, func(a, b report.BlockedOperation) int { return a.Since.Compare(b.Since) })
	return out
}
