package daemon

import (
	"context"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/protocol"
)

// How often a view reads the attached Flink Agents mirror to say how it
// stands (status, metrics, /readyz): every mirrorCheckEvery, and at most
// every mirrorCheckMin after a read that folded records.
const (
	mirrorCheckEvery = 5 * time.Second
	mirrorCheckMin   = time.Second
)

// mirrorState is a view's last check of the attached mirror.
type mirrorState struct {
	a      *protocol.MirrorAssessment // nil when none is attached
	at     time.Time
	readTo int64 // the projection's Next the check was made for
	// err says why the last check could not read the mirror (the last
	// assessment stays); errors counts such checks.
	err    string
	errors int
}

// mirrorControl copies, under the view's lock, what a check of the mirror
// needs of the projection, when a check is due (ok false otherwise).
func (v *view) mirrorControl() (protocol.MirrorControl, int64, bool) {
	if v.proj == nil {
		return protocol.MirrorControl{}, 0, false
	}
	last := v.mirror.Load()
	_, attached := v.proj.State.Mirror()
	if !attached && (last == nil || last.a == nil) {
		return protocol.MirrorControl{}, 0, false
	}
	since := time.Duration(1<<63 - 1)
	if last != nil {
		since = time.Since(last.at)
	}
	folded := last == nil || last.readTo != v.proj.Next
	if since < mirrorCheckEvery && (!folded || since < mirrorCheckMin) {
		return protocol.MirrorControl{}, 0, false
	}
	return protocol.MirrorControlOf(v.proj.State), v.proj.Next, true
}

// checkMirror reads the attached mirror and publishes how it stands, with
// this replica's own permissions to write it (its writes keep it in step).
// It runs without the view's lock: a mirror whose last stable offset is
// held by an open transaction must not hold up the gate.
func (v *view) checkMirror(ctx context.Context, ctl protocol.MirrorControl, readTo int64) {
	old := v.mirror.Load()
	next := &mirrorState{at: time.Now(), readTo: readTo}
	if old != nil {
		next.a, next.errors = old.a, old.errors
	}
	if !ctl.Attached {
		next.a, next.err = nil, ""
		v.mirror.Store(next)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, v.d.cfg.readTimeout)
	defer cancel()
	a, _, err := v.d.cluster.AssessMirror(ctx, ctl, true, v.d.cfg.bootstrap)
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return // shutting down
		}
		next.errors++
		next.err = "cannot read the mirror: " + err.Error()
		v.d.log.Warn("cannot read the Flink Agents mirror", "control_topic", v.topic, errAttr(err))
		v.mirror.Store(next)
		return
	}
	if a.Standing == protocol.MirrorHeld {
		next.errors++ // read only up to the hold: counted as a check that could not read it
	}
	if (old == nil || old.a == nil || old.a.Standing != a.Standing) && !a.InStep() {
		v.d.log.Warn("Flink Agents mirror not in step", "control_topic", v.topic, "mirror_topic", a.Topic,
			"standing", string(a.Standing), "reason", a.Reason, "hint", a.Hint)
	}
	next.a = &a
	v.mirror.Store(next)
}

// mirrorOf is the view's last assessment of its mirror, nil when none is
// attached (or not checked yet).
func (v *view) mirrorOf() *protocol.MirrorAssessment {
	if m := v.mirror.Load(); m != nil {
		return m.a
	}
	return nil
}

// mirrorNotInStep says, per served control topic with an attached mirror
// that is not in step, why and what to do (for /readyz).
func (d *Daemon) mirrorNotInStep() map[string]string {
	out := map[string]string{}
	for _, t := range d.servedTopics() {
		m := d.view(t).mirror.Load()
		switch {
		case m == nil:
		case m.err != "":
			out[t] = m.err
		case m.a != nil && !m.a.InStep():
			out[t] = string(m.a.Standing) + ": " + m.a.Reason + "; fix: " + m.a.Hint
		}
	}
	return out
}
