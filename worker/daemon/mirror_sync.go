package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// mirrorSyncRetry is how long an owner waits before it syncs the mirror
// again after a failure (each finishing run still checks the mirror).
const mirrorSyncRetry = 5 * time.Second

// syncMirror brings the attached Flink Agents mirror up to the boundary
// (Cluster.SyncMirror) whenever the attachment or the plan that sets the
// boundary changed since the last success: attaching seeds the mirror,
// and a mirror left behind by a crash or an unreachable broker is caught
// up by the owner. A failure is logged and retried on the next pass;
// operations are not held back by it (each finishing run checks the
// mirror itself before deleting).
func (d *Daemon) syncMirror(ctx context.Context, o *owner, proj *worker.Projection, opts worker.Options) {
	key, attached := mirrorKey(proj)
	if !attached {
		o.mirrorSynced = ""
		return
	}
	if !o.mirrorDue(key, d.mirrorLagsSince(o.topic, o.mirrorSyncedAt)) {
		return
	}
	if err := d.cluster.SyncMirror(ctx, proj, opts); err != nil {
		o.mirrorRetryAt = time.Now().Add(mirrorSyncRetry)
		att, _ := proj.State.Mirror()
		d.log.Warn("cannot bring the Flink Agents mirror up to the boundary; will retry", "control_topic", o.topic,
			"mirror", att.Topic, errAttr(err), "hints", errors.GetAllHints(err), "retry_in", mirrorSyncRetry.String())
		return
	}
	o.mirrorSynced, o.mirrorSyncedAt, o.mirrorRetryAt = key, time.Now(), time.Time{}
}

// mirrorKey names what a sync brings the attached mirror up to: the
// attachment and the plan that sets the boundary, with its state.
func mirrorKey(proj *worker.Projection) (string, bool) {
	att, ok := proj.State.Mirror()
	if !ok {
		return "", false
	}
	key := fmt.Sprintf("%s/%s@%d", att.Topic, att.TopicID, att.Offset)
	if op, ok := protocol.BoundaryPlan(proj.State); ok {
		key += " " + op.PlanID + "=" + string(op.State)
	}
	return key, true
}

// mirrorDue: the mirror was not yet brought up to key, or lags behind it
// again, and no failed attempt asks to wait.
func (o *owner) mirrorDue(key string, lagging bool) bool {
	return (key != o.mirrorSynced || lagging) && !time.Now().Before(o.mirrorRetryAt)
}

// mirrorIdle: an owner pass has no mirror sync to do (ownerIdle).
func (o *owner) mirrorIdle(proj *worker.Projection, lagging bool) bool {
	key, attached := mirrorKey(proj)
	return !attached || !o.mirrorDue(key, lagging)
}

// mirrorLagsSince: the view's check of the mirror, made after since, found
// it lagging behind the boundary although the control topic did not move:
// the mirror lost a record (another writer's tombstone cleaned with the
// plan under it, a truncation); or held by kcleanup's own writer's open
// transaction (a process killed inside it), which the sync's read fences
// at once instead of leaving it to the transaction timeout. The owner then
// syncs again; a check older than the last sync says nothing about it.
func (d *Daemon) mirrorLagsSince(topic string, since time.Time) bool {
	v := d.view(topic)
	if v == nil {
		return false
	}
	m := v.mirror.Load()
	if m == nil || m.a == nil || !m.at.After(since) {
		return false
	}
	return m.a.Standing == protocol.MirrorLagging || m.a.Standing == protocol.MirrorHeld && m.a.Hold != nil && m.a.Hold.KcleanupWriter
}
