package daemon

import (
	"context"
	"strings"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// tombstoneWatch is an owner's watch of its data topic above the committed
// boundary (docs/operator-guide.md, "Migrating from tombstones"): a
// tombstone there means the job writes tombstones again, and no deletion
// starts. It is incremental: each check reads only the records appended
// since the last one (protocol.Continue), at most the scan limit per pass.
// Owner goroutine only, but found, which HTTP handlers read under the
// owner's mu.
type tombstoneWatch struct {
	key  string                  // data topic/ID the scan is of
	scan *protocol.TombstoneScan // what was read so far
	err  error                   // the last check's answer: nil, ErrBlocked (tombstones, access), or not yet known
	// declared is the control offset of the no-tombstones declaration in force the last pass
	// saw (-1: none, or not yet looked).
	declared int64
	looked   bool
}

// checkTombstones runs one pass of the watch, on every pass of the owner
// whether or not an operation is due (so that the metric, /readyz and
// /v1/status say it as soon as the job writes a tombstone again): nil when
// the data topic was read to its end above the boundary and holds no
// tombstone there.
func (d *Daemon) checkTombstones(ctx context.Context, o *owner, proj *worker.Projection) error {
	topic, id, ok := proj.State.Binding()
	boundary := proj.State.Boundary()
	if !ok || len(boundary) == 0 {
		return nil
	}
	w := &o.tombstones
	if key := topic + "/" + id; w.key != key {
		w.key, w.scan = key, nil // another incarnation: its records are new
	}
	// Under a no-tombstones declaration the partitions it covers are not read
	// (protocol.TombstoneScanFrom): Read on the data topic is then not needed.
	var scan *protocol.TombstoneScan
	if from := protocol.TombstoneScanFrom(proj.State, topic, id, boundary); len(from) > 0 {
		read, err := d.cluster.ScanTombstones(ctx, topic, from, w.scan, d.cfg.tombstoneScanLimit)
		if err != nil {
			if worker.KafkaCode(err) == 3 { // UNKNOWN_TOPIC_OR_PARTITION: the run's recheck blocks on it, and says why
				return nil
			}
			return errors.Wrapf(err, "tombstone watch of %s", topic)
		}
		scan = &read
	}
	// The one rule (protocol.WatchTombstones), as every finishing run applies it; a
	// tombstone an earlier pass saw on a partition now declared still blocks.
	judged := protocol.Declared(proj.State, topic, id, boundary, scan, w.scan)
	if scan != nil {
		w.scan = scan
	}
	return protocol.WatchTombstones(topic, boundary, judged)
}

// watchTombstones runs the watch (checkTombstones) and publishes what it found for the
// metric, /readyz and /v1/status.
func (d *Daemon) watchTombstones(ctx context.Context, o *owner, proj *worker.Projection) {
	// A declaration that came into force since the last pass is the operator's fix for a
	// watch that could not read the data topic: blocked operations are tried again at once,
	// not after the blocked retry.
	declared := int64(-1)
	if decl, ok := proj.State.Declaration(); ok && decl.InForce() {
		declared = decl.Offset
	}
	if w := &o.tombstones; w.looked && declared >= 0 && declared != w.declared {
		o.dueNow()
	}
	o.tombstones.declared, o.tombstones.looked = declared, true
	o.tombstones.err, o.watchedAt = d.checkTombstones(ctx, o, proj), time.Now()
	found := ""
	if errors.Is(o.tombstones.err, protocol.ErrTombstones) {
		found = reason(o.tombstones.err)
	}
	o.mu.Lock()
	o.tombstoneReason = found
	o.mu.Unlock()
}

// tombstonesFound is why the owner's watch blocks deletion ("" when it does not).
func (o *owner) tombstonesFound() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.tombstoneReason
}

// tombstonesAbove says, per control topic this replica owns, why its
// tombstone watch blocks deletion (/readyz, metrics).
func (d *Daemon) tombstonesAbove() map[string]string {
	out := map[string]string{}
	for _, t := range d.ownedTopics() {
		if o := d.owned(t); o != nil {
			if why := o.tombstonesFound(); why != "" {
				out[t] = why
			}
		}
	}
	return out
}

// reason is what /readyz says of the tombstone watch: the error and its hint, since the
// operator's fix is not a retry.
func reason(err error) string {
	return err.Error() + "\nhint: " + strings.Join(errors.GetAllHints(err), "\nhint: ")
}

// dueNow makes every waiting operation due at once.
func (o *owner) dueNow() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, a := range o.attempts {
		a.next = time.Time{}
	}
}
