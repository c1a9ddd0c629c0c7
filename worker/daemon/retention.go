package daemon

import (
	"context"
	"time"

	"github.com/kcleanup/kcleanup/checkpoint/store"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
)

// retentionRound is the owner's follower of the control topic's retention
// policy (docs/operator-guide.md, "Follow the job"): owner goroutine only,
// but last, which HTTP handlers and metrics read under the owner's mu.
type retentionRound struct {
	follower worker.Follower
	policy   int64 // offset of the RETENTION_SET last followed (-1: none)
	next     time.Time
	last     *report.RetentionFollow
}

// followRetention runs a round of the policy when one is due: every
// policy's --every, and at once when the policy changes. Without a policy
// it clears what the last round said.
func (d *Daemon) followRetention(o *owner, proj *worker.Projection, opts worker.Options) {
	r := &o.retention
	p, ok := proj.State.ActiveRetention()
	if !ok {
		if r.last != nil {
			o.mu.Lock()
			r.last = nil
			o.mu.Unlock()
		}
		r.policy = -1
		return
	}
	now := time.Now()
	if p.Offset == r.policy && now.Before(r.next) {
		return
	}
	r.policy, r.next = p.Offset, now.Add(p.Every)
	r.follower.Store = store.Options{Confined: true, Roots: d.cfg.checkpointRoots}
	reads, hits := r.follower.Reads, r.follower.Hits
	ctx, cancel := context.WithTimeout(o.hard, max(d.cfg.readTimeout, p.Every))
	defer cancel()
	dec, _, err := d.cluster.FollowRound(ctx, proj, &r.follower, opts)
	f := &report.RetentionFollow{Policy: p.Name(), At: now, NextAt: r.next, Points: len(dec.Points),
		Read: r.follower.Reads - reads, Cached: r.follower.Hits - hits, NoPlan: dec.NoPlan, Why: dec.Why}
	if dec.Plan != nil {
		f.PlanID = dec.Plan.PlanID
	}
	if err != nil {
		f.Error = reason(err)
	}
	f.Blocked = f.Error != "" || report.RetentionBlocks(f.NoPlan)
	log := d.log.With("control_topic", o.topic, "policy", p.Name())
	switch {
	case f.Error != "":
		log.Warn("retention round failed; no plan this round", "error", err.Error())
	case f.Blocked && (r.last == nil || r.last.Why != f.Why):
		log.Warn("retention policy blocked: no plan this round", "reason", f.NoPlan, "why", f.Why)
	case f.PlanID != "" && (r.last == nil || r.last.PlanID != f.PlanID):
		log.Info("retention round committed a plan", "plan_id", f.PlanID, "points", f.Points)
	}
	o.mu.Lock()
	r.last = f
	o.mu.Unlock()
}

// retentionFollow is the owner's last round (nil: no policy, or none yet).
func (o *owner) retentionFollow() *report.RetentionFollow {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.retention.last == nil {
		return nil
	}
	f := *o.retention.last
	return &f
}

// retentionDue reports whether followRetention has something to do: a
// round is due, the policy changed, or one was cleared.
func (o *owner) retentionDue(proj *worker.Projection) bool {
	r := &o.retention
	p, ok := proj.State.ActiveRetention()
	if !ok {
		return r.last != nil || r.policy != -1
	}
	return p.Offset != r.policy || !time.Now().Before(r.next)
}
