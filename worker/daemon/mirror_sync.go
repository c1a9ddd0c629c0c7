package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/worker"
	"github.com/kcleanup/kcleanup/worker/protocol"
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
	if !o.mirrorDue(key) {
		return
	}
	if err := d.cluster.SyncMirror(ctx, proj, opts); err != nil {
		o.mirrorRetryAt = time.Now().Add(mirrorSyncRetry)
		att, _ := proj.State.Mirror()
		d.log.Warn("cannot bring the Flink Agents mirror up to the boundary; will retry", "control_topic", o.topic,
			"mirror", att.Topic, errAttr(err), "hints", errors.GetAllHints(err), "retry_in", mirrorSyncRetry.String())
		return
	}
	o.mirrorSynced, o.mirrorRetryAt = key, time.Time{}
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

// mirrorDue: the mirror was not yet brought up to key, and no failed
// attempt asks to wait.
func (o *owner) mirrorDue(key string) bool {
	return key != o.mirrorSynced && !time.Now().Before(o.mirrorRetryAt)
}

// mirrorIdle: an owner pass has no mirror sync to do (ownerIdle).
func (o *owner) mirrorIdle(proj *worker.Projection) bool {
	key, attached := mirrorKey(proj)
	return !attached || !o.mirrorDue(key)
}
