package daemon

import (
	"context"
	"time"
)

// mirrorCheckEvery is how often a view reads the attached Flink Agents
// mirror to say how it stands (status, metrics, /readyz), besides after
// every read that folded records.
const mirrorCheckEvery = 5 * time.Second

// checkMirror assesses the attached mirror for the snapshot s being
// published (the caller holds the view's lock): with this replica's own
// permissions to write it, since this replica's writes are the ones that
// keep it in step. A failed read keeps the last assessment, counts an
// error and says why.
func (v *view) checkMirror(ctx context.Context, s, old *snapshot) {
	if _, attached := v.proj.State.Mirror(); !attached {
		s.mirror, s.mirrorErr = nil, ""
		return
	}
	folded := s.status.ReadTo != old.status.ReadTo
	if !folded && old.mirror != nil && time.Since(old.mirrorAt) < mirrorCheckEvery {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, v.d.cfg.readTimeout)
	defer cancel()
	a, ok, err := v.d.cluster.AssessMirror(ctx, v.proj.State, true, v.d.cfg.bootstrap)
	s.mirrorAt = time.Now()
	if err != nil {
		s.mirrorErrors++
		s.mirrorErr = "cannot read the mirror: " + err.Error()
		v.d.log.Warn("cannot read the Flink Agents mirror", "control_topic", v.topic, errAttr(err))
		return
	}
	if !ok {
		s.mirror = nil
		return
	}
	if (old.mirror == nil || old.mirror.Standing != a.Standing) && !a.InStep() {
		v.d.log.Warn("Flink Agents mirror not in step", "control_topic", v.topic, "mirror_topic", a.Topic,
			"standing", string(a.Standing), "reason", a.Reason, "hint", a.Hint)
	}
	s.mirror, s.mirrorErr = &a, ""
}

// mirrorNotInStep says, per served control topic with an attached mirror
// that is not in step, why and what to do (for /readyz).
func (d *Daemon) mirrorNotInStep() map[string]string {
	out := map[string]string{}
	for _, t := range d.servedTopics() {
		s := d.view(t).snap.Load()
		switch {
		case s.mirrorErr != "":
			out[t] = s.mirrorErr
		case s.mirror != nil && !s.mirror.InStep():
			out[t] = string(s.mirror.Standing) + ": " + s.mirror.Reason + "; fix: " + s.mirror.Hint
		}
	}
	return out
}
