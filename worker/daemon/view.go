package daemon

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
)

// view is a replica's read-only projection of one control topic it serves,
// owned or not: it answers /v1/status, /v1/validate, /readyz and /metrics.
// Only one goroutine at a time may touch the projection: the holder of lock
// (the refresh loop, or a validate request). HTTP handlers that only report
// read the snapshot published after each read, and never wait for Kafka.
type view struct {
	d     *Daemon
	topic string
	proj  *worker.Projection
	lock  chan struct{} // capacity 1: send to acquire, receive to release
	snap  atomic.Pointer[snapshot]
	// mirror is the last check of the attached Flink Agents mirror
	// (mirror.go), kept apart from snap: it is made without the lock.
	mirror atomic.Pointer[mirrorState]

	lastErr string    // last read error logged, to log each new one once
	opened  time.Time // when proj was opened (reread)

	// listed is the control topic's high watermark as watchEnds last
	// listed it (nil before, or when the listing failed).
	listed atomic.Pointer[listedEnd]
}

// listedEnd is a high watermark and when it was listed.
type listedEnd struct {
	hw int64
	at time.Time
}

// snapshot is what a view knew after its last read.
type snapshot struct {
	status     report.Status // complete
	summary    report.Status // the default view
	summaryAt  time.Time     // when summary was built: it ages (report.StalePlanned)
	caughtUpAt time.Time     // end of the last read that reached the end
	err        error         // the last read's error; nil when it reached the end
	lag        int64         // records between the projection and the end seen
	byState    map[fsm.State]int
	rejected   map[projector.Reason]int
	data       *report.DataTopicOffsets // nil until listed once
}

// summaryEvery is how often an idle view rebuilds its default view, so that
// it ages without a new record (report.StalePlanned is days).
const summaryEvery = time.Minute

// dataOffsetsEvery is how often a view lists the data topic's log starts
// and high watermarks for /v1/status (two ListOffsets requests).
const dataOffsetsEvery = 2 * time.Second

func newView(d *Daemon, topic string) *view {
	v := &view{d: d, topic: topic, lock: make(chan struct{}, 1)}
	empty := &worker.Projection{Topic: topic, View: projector.NewView()}
	v.snap.Store(&snapshot{status: report.StatusOf(empty.Source()), summary: report.SummaryOf(empty.Source())})
	return v
}

// open and close take the lock: a validate request may be served before
// Run opened the projection, or while shutdown closes it.
func (v *view) open() error {
	p, err := v.d.cluster.OpenProjection(v.topic)
	if err != nil {
		return err
	}
	p.PauseWhenIdle() // a replica may serve a thousand idle control topics
	p.AheadTolerance = v.d.cfg.clockTolerance
	v.lock <- struct{}{}
	v.proj, v.opened = p, time.Now()
	v.release()
	return nil
}

func (v *view) close() {
	v.lock <- struct{}{}
	defer v.release()
	if v.proj != nil {
		v.proj.Close()
		v.proj = nil
	}
}

// acquire takes the projection, or gives up when ctx ends.
func (v *view) acquire(ctx context.Context) bool {
	select {
	case v.lock <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (v *view) release() { <-v.lock }

// run reads the control topic to its end every poll interval until ctx ends.
func (v *view) run(ctx context.Context) {
	for ctx.Err() == nil {
		if v.acquire(ctx) {
			idle := v.stillCaughtUp()
			v.release()
			// The read slot first, then the projection: a validate
			// request never waits for another topic's read.
			if !idle && v.d.readSlot(ctx) {
				if v.acquire(ctx) {
					v.refresh(ctx)
					v.release()
				}
				v.d.releaseRead()
			}
		}
		if v.acquire(ctx) {
			ctl, readTo, due := v.mirrorControl()
			v.release()
			if due {
				v.checkMirror(ctx, ctl, readTo)
			}
		}
		v.reread(ctx)
		sleep(ctx, v.d.cfg.pollInterval)
	}
}

// reread replaces a projection that shows a disputed conflict with one read
// afresh to the end, as the owner does (Daemon.reread): until then the
// view's gate answers "cannot tell" (AtRisk).
func (v *view) reread(ctx context.Context) {
	if !v.acquire(ctx) {
		return
	}
	disputed := v.proj != nil && len(v.proj.State.Disputed()) > 0 && time.Since(v.opened) >= v.d.cfg.rereadAfter
	v.release()
	if !disputed {
		return
	}
	fresh, err := v.d.cluster.OpenProjection(v.topic)
	if err != nil {
		return // the next round tries again
	}
	fresh.PauseWhenIdle()
	fresh.AheadTolerance = v.d.cfg.clockTolerance
	rctx, cancel := context.WithTimeout(ctx, v.d.cfg.readTimeout)
	defer cancel()
	if err := fresh.CatchUp(rctx); err != nil {
		fresh.Close()
		return
	}
	if !v.acquire(ctx) {
		fresh.Close()
		return
	}
	old := v.proj
	v.proj, v.opened = fresh, time.Now()
	v.release()
	v.d.log.Info("status view of a disputed control topic read afresh", "control_topic", v.topic)
	if old != nil {
		old.Close()
	}
}

// refresh reads to the end and publishes a snapshot. The caller holds lock.
func (v *view) refresh(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, v.d.cfg.readTimeout)
	defer cancel()
	err := v.proj.CatchUp(rctx)
	if ctx.Err() != nil {
		return err // shutting down: keep the last snapshot
	}
	v.publish(ctx, err)
	return err
}

// stillCaughtUp publishes, without reading, that the view is still caught
// up when the high watermark watchEnds listed since its last read is the
// end that read reached: no record was appended, so the projection had
// folded everything below the end at the time of the listing. Otherwise it
// returns false and the caller reads (refresh: the end is listed again,
// with the last stable offset). Readiness and status use this; validate
// always reads. The caller holds lock.
func (v *view) stillCaughtUp() bool {
	l, old := v.listed.Load(), v.snap.Load()
	if l == nil || v.proj == nil || old.err != nil || !old.caughtUpAt.After(v.opened) || !l.at.After(old.caughtUpAt) ||
		l.hw != v.proj.End || v.proj.Next < v.proj.End {
		return false // never read this projection, a failed read, or new records
	}
	s := *old
	s.caughtUpAt, s.lag = l.at, 0
	if s.status.Topic != "" {
		v.listDataTopic(v.d.runCtxOrBackground(), &s, old)
	}
	v.snap.Store(&s)
	return true
}

// listDataTopic lists the data topic's offsets for the snapshot s being
// published: after every read that folded records (so that the offsets are
// never older than the operations beside them: an APPLIED read is shown
// with the log starts it verified, or later ones), else at most every
// dataOffsetsEvery. A failure keeps the last offsets and says why.
func (v *view) listDataTopic(ctx context.Context, s, old *snapshot) {
	topic := s.status.Topic
	folded := s.status.ReadTo != old.status.ReadTo
	if topic == "" || !folded && old.data != nil && time.Since(old.data.ListedAt) < dataOffsetsEvery {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, v.d.cfg.readTimeout)
	defer cancel()
	d := &report.DataTopicOffsets{ListedAt: time.Now().UTC()}
	start, err := v.d.cluster.StartOffsets(ctx, topic)
	var end events.Offsets
	if err == nil {
		end, err = v.d.cluster.EndOffsets(ctx, topic)
	}
	if err != nil {
		d.Error = err.Error()
		if old.data != nil {
			d.LogStart, d.HighWatermark = old.data.LogStart, old.data.HighWatermark
		}
	} else {
		d.LogStart, d.HighWatermark = start, end
	}
	s.data = d
}

// publish records the outcome of a read. The status document is rebuilt
// only when records were folded, so an idle view costs one ListOffsets per
// poll (and two more on the data topic every dataOffsetsEvery).
func (v *view) publish(ctx context.Context, readErr error) {
	old := v.snap.Load()
	s := *old
	s.err = readErr
	if readErr == nil {
		s.caughtUpAt = time.Now()
		s.lag = max(v.proj.End-v.proj.Next, 0)
		if v.lastErr != "" {
			v.d.log.Info("control topic readable again", "control_topic", v.topic, "read_to", v.proj.Next)
			v.lastErr = ""
		}
	} else {
		s.lag = v.lagAfterError(ctx, old.lag)
		if msg := readErr.Error(); msg != v.lastErr {
			v.d.log.Warn("cannot read control topic to its end", "control_topic", v.topic, errAttr(readErr), "read_to", v.proj.Next)
			v.lastErr = msg
		}
	}
	if s.byState == nil || old.status.ReadTo != v.proj.Next {
		s.status = report.StatusOf(v.proj.Source())
		s.summary, s.summaryAt = report.SummaryOf(v.proj.Source()), time.Now()
		s.byState = map[fsm.State]int{}
		for _, op := range s.status.Operations {
			s.byState[op.State]++
		}
		s.rejected = map[projector.Reason]int{}
		for _, r := range s.status.Rejected {
			s.rejected[r.Reason]++
		}
	}
	if time.Since(s.summaryAt) >= summaryEvery {
		// An idle control topic's default view still ages: a PLANNED
		// leaves it once older than report.StalePlanned.
		s.summary, s.summaryAt = report.SummaryOf(v.proj.Source()), time.Now()
	}
	if readErr == nil {
		v.listDataTopic(ctx, &s, old)
	}
	v.snap.Store(&s)
}

// lagAfterError asks for the end of the control topic after a read that did
// not reach it (best effort: when the broker is unreachable the last known
// lag stays).
func (v *view) lagAfterError(ctx context.Context, last int64) int64 {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ends, err := v.d.cluster.CommittedOffsets(ctx, v.topic)
	end, ok := ends[0]
	if err != nil || !ok {
		return last
	}
	return max(end-v.proj.Next, 0)
}

// caughtUp reports whether the view read to the end within the ready
// window, and why not.
func (s *snapshot) caughtUp(window time.Duration) (bool, string) {
	switch {
	case s.caughtUpAt.IsZero() && s.err == nil:
		return false, "not read yet"
	case s.caughtUpAt.IsZero():
		return false, "never read to the end: " + s.err.Error()
	case time.Since(s.caughtUpAt) > window:
		why := "last read to the end " + time.Since(s.caughtUpAt).Round(time.Second).String() + " ago"
		if s.err != nil {
			why += ": " + s.err.Error()
		}
		return false, why
	}
	return true, ""
}
