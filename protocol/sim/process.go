package sim

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
)

// process is one worker replica or one apply process: its own projection
// of the control topic, read from the start, and at most one protocol run.
type process struct {
	index  int
	worker bool
	plan   events.Plan // apply: the plan it applies
	noWait bool
	tries  int // apply: runs started

	proj *projector.State
	read int64 // the next offset the reader asks for

	run  *protocol.Run
	rep  protocol.Report
	step protocol.Step
	// backoff: a worker waits until this tick before its next pass.
	backoff     int
	frozenUntil int
	opened      int // worker: the tick its projection was started from the log's start
	dead        bool
	diedAt      int
	replaced    bool
	done        bool // apply: finished for good
	actor       string
	// sync: the process of `kcleanup mirror attach`, a mirror sync run.
	sync bool
	// mw is the WriteMirror under way (it may span turns: a writer paused
	// inside its transaction).
	mw *mirrorWrite
	// worker: the mirror sync under way (syncKey), the last that succeeded
	// (mirrorSynced), and when a failed one may be retried.
	syncKey, mirrorSynced string
	mirrorRetryAt         int
	// graceSeen: when this process first saw the mirror show a plan with
	// no known time (protocol.Config.GraceSeen), by plan; waiting: it waits
	// out a restore grace (until backoff).
	graceSeen map[string]time.Time
	waiting   bool
	// paused: an apply process sleeps through its run's Pause step (until
	// backoff), as kcleanup apply does, and the same run goes on.
	paused bool
	// skew is how far this process's clock runs ahead of the broker's: the
	// "at" it stamps (a host off NTP, a frozen container).
	skew time.Duration
	// pin: the process is `kcleanup pin` (protocol.NewPin), pinning this;
	// identified: its run's Identify answered.
	pin        *pinOrder
	identified bool
}

func (w *world) newWorker(i int) *process {
	return &process{index: i, worker: true, proj: projector.New(), opened: w.tick, actor: fmt.Sprintf("worker-%d@%d", i, w.tick), skew: w.drawSkew()}
}

func (w *world) newApply(plan events.Plan, i int) *process {
	return &process{index: i, plan: plan, noWait: w.rng.IntN(3) == 0, proj: projector.New(), actor: fmt.Sprintf("apply-%d@%d", i, w.tick), skew: w.drawSkew()}
}

func (p *process) config(w *world) protocol.Config {
	return protocol.Config{ControlTopic: dataTopic + ".kcleanup", Bootstrap: "sim:9092", NoWait: p.noWait, Now: w.now().Add(p.skew)}
}

// finishConfig is config for a run that may delete plan: when this
// process first saw the plan on the mirror, and a --restore-grace of its
// own that is no longer than the attachment's (none, or shorter: a
// replica started without the flag, or with a stale one). The grace the
// log holds must win (the invariant checks the attachment's).
func (p *process) finishConfig(w *world, planID string) protocol.Config {
	cfg := p.config(w)
	if w.mirror != nil {
		cfg.GraceSeen = p.graceSeen[planID]
		if w.mirror.grace > 1 && p.index%3 == 1 {
			cfg.RestoreGrace = secs(w.mirror.grace / 2)
		}
	}
	return cfg
}

// act is one scheduler turn of p: start a run, or take its next step.
func (p *process) act(w *world) {
	if p.mw != nil { // a mirror writer resumed inside its transaction
		if rep, ok := p.writeMirror(w); ok {
			p.rep = rep
			p.step = p.run.Next(p.proj, p.rep)
		}
		return
	}
	if p.paused {
		if p.backoff > w.tick {
			return
		}
		p.paused, p.waiting = false, false
		p.rep = protocol.Report{}
		p.step = p.run.Next(p.proj, p.rep)
	}
	if p.run == nil && !p.start(w) {
		return
	}
	if p.step.Kind == "" {
		p.step = p.run.Next(p.proj, p.rep)
	}
	s := p.step
	w.res.Steps[s.Kind]++
	if s.Kind == protocol.Pause && !p.worker {
		p.sleep(w, s)
		return
	}
	// A worker's executor ends its run on a Pause and hands it to the
	// owner's schedule (worker/daemon does the same).
	if s.Kind.Terminal() || s.Kind == protocol.Pause {
		p.end(w, s)
		return
	}
	if s.Kind == protocol.WriteMirror {
		p.mw = &mirrorWrite{rec: s.Mirror}
		rep, ok := p.writeMirror(w)
		if !ok {
			return
		}
		p.rep = rep
	} else {
		p.rep = p.execute(w, s)
	}
	p.step = p.run.Next(p.proj, p.rep)
}

// start begins a run: an apply process applies its plan (again after a
// failed attempt); a worker catches up, repairs, and finishes the first
// pending operation.
func (p *process) start(w *world) bool {
	if p.pin != nil {
		return p.startPin(w)
	}
	if !p.worker {
		if p.backoff > w.tick {
			return false // apply waits out the restore grace in-process
		}
		if p.tries >= 4 && !w.quiet {
			p.done = true
			return false
		}
		p.tries++
		p.waiting = false
		p.run = protocol.NewApply(p.plan, p.finishConfig(w, p.plan.PlanID))
		if p.sync {
			p.deliver(w, w.next)
			p.run = protocol.NewMirrorSync(p.config(w))
		}
		p.rep, p.step = protocol.Report{}, protocol.Step{}
		return true
	}
	if p.backoff > w.tick {
		return false
	}
	p.waiting = false
	p.deliver(w, w.next)
	p.repair(w)
	if len(p.proj.Disputed()) > 0 {
		w.res.Disputed++
		if w.tick-p.opened >= w.cfg.Grace {
			// The daemon's reread: a fresh projection from the start of
			// the log as it is now.
			p.proj, p.read, p.opened = projector.New(), 0, w.tick
			p.deliver(w, w.next)
			p.repair(w)
		}
	}
	// The owner's mirror sync (worker/daemon syncMirror): whenever the
	// attachment or the boundary's plan changed since the last success.
	if key, ok := mirrorKey(p.proj); ok && key != p.mirrorSynced && w.tick >= p.mirrorRetryAt {
		p.syncKey = key
		p.run = protocol.NewMirrorSync(p.config(w))
		p.rep, p.step = protocol.Report{}, protocol.Step{}
		return true
	}
	pending := p.proj.Pending()
	if len(pending) == 0 {
		p.backoff = w.tick + 5
		return false
	}
	// The daemon's gate (protocol.OwnerFacts.Gate). The modelled cluster
	// has sound control-topic settings, one control topic and no
	// tombstones on the data topic (their rules have transcripts), so every
	// fact is nil; a gate that held an operation without a cause would
	// leave it pending, and the seed would not settle.
	if v, _ := (protocol.OwnerFacts{}).Gate(); v != protocol.Drive {
		p.backoff = w.tick + ticks(ownerRetry.Gated(v, 1, w.now()).Next.Sub(w.now()))
		return false
	}
	op := pending[w.rng.IntN(len(pending))]
	p.run = protocol.NewFinish(op.PlanID, p.finishConfig(w, op.PlanID))
	p.rep, p.step = protocol.Report{}, protocol.Step{}
	return true
}

// ownerRetry is the simulated owner's retry schedule, in seconds (ticks):
// the daemon's decision, shortened so that a run of a few hundred ticks
// sees retries.
var ownerRetry = protocol.OwnerRetry{BackoffMin: 3 * time.Second, BackoffMax: 3 * time.Second, Blocked: 30 * time.Second, PinMargin: time.Second}

// ticks is d in whole ticks, rounded up.
func ticks(d time.Duration) int { return int(max(d+time.Second-1, 0) / time.Second) }

// sleep is kcleanup apply's executor for a Pause: it waits, in-process,
// as long as the pause says (protocol.Paused.Wait), then reports back.
func (p *process) sleep(w *world, s protocol.Step) {
	if s.Pause.Grace != nil {
		w.res.GraceWaits++
		p.waiting = true
	} else {
		w.res.PinHolds++
	}
	p.paused = true
	p.backoff = w.tick + ticks(s.Pause.Wait(w.now()))
}

func (p *process) end(w *world, s protocol.Step) {
	p.run = nil
	p.step = protocol.Step{}
	if p.pin != nil {
		p.endPin(w, s)
	}
	if errors.Is(s.Err, protocol.ErrSuperseded) {
		w.count(Conflicting)
	}
	// The owner's decision on the run's end (protocol.OwnerRetry.After),
	// which worker/daemon makes too. An apply process's run ends so on a
	// hold the broker's clock cannot judge (Blocked) or after MaxPauses:
	// it waits that out and tries again (its tries do not count).
	r := ownerRetry.After(s.Err, 0, s.Pause, 1, w.now())
	switch r.Outcome {
	case protocol.Waiting:
		w.res.GraceWaits++
		g := r.Grace
		if !g.Known {
			if p.graceSeen == nil {
				p.graceSeen = map[string]time.Time{}
			}
			if _, ok := p.graceSeen[g.PlanID]; !ok {
				p.graceSeen[g.PlanID] = g.From
			}
		}
		p.backoff = w.tick + ticks(r.Next.Sub(w.now()))
		p.waiting = true
		if !p.worker {
			p.tries--
		}
		return
	case protocol.Held:
		w.res.PinHolds++
		p.backoff = w.tick + ticks(r.Next.Sub(w.now()))
		if !p.worker {
			p.tries--
		}
		return
	}
	if p.worker && p.syncKey != "" {
		if s.Kind == protocol.Done {
			p.mirrorSynced = p.syncKey
		} else {
			p.mirrorRetryAt = w.tick + 5
		}
		p.syncKey = ""
		return
	}
	if p.worker && r.Outcome != protocol.Applied {
		p.backoff = max(p.backoff, w.tick+ticks(r.Next.Sub(w.now())))
		return
	}
	switch {
	case p.sync && s.Kind == protocol.Blocked:
		p.done = true // the owning workers retry by themselves
	case !p.worker && (s.Kind == protocol.Done || s.Kind == protocol.Refused):
		p.done = true
	case !p.worker && s.Kind == protocol.Blocked:
		p.done = !w.quiet && w.rng.IntN(2) == 0 // an operator may or may not re-run it
	}
}

// deliver reads the control topic from p.read below end, as a consumer is
// delivered it: sometimes records it already has again, sometimes a fetch
// out of order. The reader sorts each fetch by offset and skips what it
// has folded (the production reader's rule), so neither changes the fold.
func (p *process) deliver(w *world, end int64) {
	var batch []projector.Record
	for _, e := range w.log {
		if e.rec.Offset >= p.read && e.rec.Offset < end {
			batch = append(batch, e.rec)
		}
	}
	switch w.fault(Duplicated, Reordered) {
	case Duplicated:
		for _, e := range w.log {
			if e.rec.Offset < p.read && w.rng.IntN(3) == 0 {
				batch = append(batch, e.rec)
			}
		}
		batch = append(batch, batch...)
	case Reordered:
		w.rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
	}
	slices.SortStableFunc(batch, func(a, b projector.Record) int { return int(a.Offset - b.Offset) })
	for _, r := range batch {
		if r.Offset < p.read {
			continue
		}
		p.proj.Step(r)
		p.read = r.Offset + 1
	}
	p.read = max(p.read, end)
}

// repair is Projection.Repair: append what protocol.Maintenance lists, in
// its order, then read it back.
func (p *process) repair(w *world) {
	recs := protocol.Maintenance(p.proj, w.now(), secs(w.cfg.Grace))
	for _, m := range recs {
		w.appendRecord(m.Key, m.Value, p.maintenance(m.Kind)...)
	}
	if len(recs) > 0 {
		p.deliver(w, w.next)
	}
}

// maintenance is the headers a worker puts on its maintenance records
// (worker.Projection.Repair does the same).
func (p *process) maintenance(kind string) []projector.Header {
	return []projector.Header{
		{Key: projector.HeaderMaintenance, Value: []byte(kind)},
		{Key: projector.HeaderActor, Value: []byte(p.actor)},
		{Key: projector.HeaderReason, Value: []byte(kind + " by the simulated worker")},
		{Key: projector.HeaderRead, Value: []byte(strconv.FormatInt(p.read, 10))},
	}
}

// execute performs a step on the simulated cluster, with a fault drawn for it.
func (p *process) execute(w *world, s protocol.Step) protocol.Report {
	switch s.Kind {
	case protocol.CatchUp:
		switch w.fault(Fail, TimeoutAfter) {
		case Fail:
			return protocol.Report{Err: errors.New("sim: list offsets failed")}
		case TimeoutAfter:
			p.deliver(w, p.read+int64(w.rng.IntN(int(w.next-p.read)+1)))
			return protocol.Report{Err: errors.New("sim: read timed out before the end")}
		}
		p.deliver(w, w.next)
		return protocol.Report{}
	case protocol.Describe, protocol.Recheck:
		switch w.fault(Fail, Denied) {
		case Fail:
			return protocol.Report{Err: errors.New("sim: metadata request failed")}
		case Denied:
			return protocol.Report{Err: errors.New("sim: TOPIC_AUTHORIZATION_FAILED"), Code: protocol.CodeTopicAuthorizationFailed}
		}
		t := w.snapshot()
		return protocol.Report{Topic: t, Tombstones: noTombstones(s.ScanFrom, t)}
	case protocol.Permissions:
		switch w.fault(Fail, Denied) {
		case Fail:
			return protocol.Report{Err: errors.New("sim: metadata request failed")}
		case Denied:
			// The brokers say the principal lacks one of the ACLs asked for.
			return protocol.Report{Denied: s.Need[len(s.Need)-1:]}
		}
		return protocol.Report{}
	case protocol.Append:
		return p.appendStep(w, s)
	case protocol.Delete:
		return p.deleteStep(w, s)
	case protocol.ReadMirror:
		return p.readMirror(w)
	case protocol.Identify:
		return p.identify(w, s)
	case protocol.Verify:
		if w.fault(Fail) == Fail {
			return protocol.Report{Err: errors.New("sim: list offsets failed")}
		}
		return protocol.Report{Starts: w.topic.Start.Clone()}
	}
	return protocol.Report{Err: errors.Newf("sim: unknown step %s", s.Kind)}
}

// noTombstones answers a tombstone scan (before COMMITTED, before deleting): the modelled data
// topic holds none (the tombstone rules have their transcripts,
// protocol/testdata/tombstones); nil when no scan was asked.
func noTombstones(from events.Offsets, t protocol.Topic) *protocol.TombstoneScan {
	if from == nil {
		return nil
	}
	scan := &protocol.TombstoneScan{Partitions: map[int32]protocol.PartitionScan{}}
	for p, off := range from {
		end := t.End[p]
		scan.Partitions[p] = protocol.PartitionScan{From: off, To: end, Read: end, Latest: -1}
	}
	return scan
}

func (w *world) snapshot() protocol.Topic {
	t := w.topic
	t.Partitions = slices.Clone(t.Partitions)
	t.Start, t.End = t.Start.Clone(), t.End.Clone()
	return t
}

// appendStep is Projection.Decide: append, read back to the record, judge
// by the fold's verdict on it, then repair.
func (p *process) appendStep(w *world, s protocol.Step) protocol.Report {
	env := s.Record
	if env.At.IsZero() { // a PINNED comes stamped: its ID covers its time and actor (as worker's executor)
		env.At, env.Actor = w.now().Add(p.skew), p.actor
	}
	key, value := env.Encode()
	switch w.fault(Fail, TimeoutAfter, Delayed) {
	case Fail:
		return protocol.Report{Err: errors.New("sim: produce failed")}
	case TimeoutAfter:
		w.appendRecord(key, value)
		return protocol.Report{Err: errors.New("sim: produce timed out (the record landed)")}
	case Delayed:
		w.later = append(w.later, delayed{due: w.tick + 1 + w.rng.IntN(30), apply: func() { w.appendRecord(key, value) }})
		return protocol.Report{Err: errors.New("sim: produce timed out (the record is still in flight)")}
	}
	off := w.appendRecord(key, value)
	var got *projector.Verdict
	for _, e := range w.log {
		if e.rec.Offset >= p.read && e.rec.Offset <= off {
			v := p.proj.Step(e.rec)
			if e.rec.Offset == off {
				got = &v
			}
		}
	}
	p.read = off + 1
	if got == nil {
		return protocol.Report{Err: errors.Newf("sim: record %d was not read back", off)}
	}
	p.repair(w)
	return protocol.Report{Verdict: *got}
}

func (p *process) deleteStep(w *world, s protocol.Step) protocol.Report {
	planID := p.run.PlanID()
	failing := map[int32]protocol.Deleted{}
	f := w.fault(Fail, TimeoutAfter, Delayed, PartTransient, PartPermanent)
	if f != Fail {
		w.checkMirrored(p, planID)
		w.checkGrace(p, planID)
	}
	switch f {
	case Fail:
		return protocol.Report{Err: errors.New("sim: DeleteRecords failed")}
	case TimeoutAfter:
		w.checkCommitted(planID)
		w.deleteNow(s.Delete, nil)
		return protocol.Report{Err: errors.New("sim: DeleteRecords timed out (it took effect)")}
	case Delayed:
		to := s.Delete.Clone()
		w.later = append(w.later, delayed{due: w.tick + 1 + w.rng.IntN(30), apply: func() {
			w.checkCommitted(planID)
			w.deleteNow(to, nil)
		}})
		return protocol.Report{Err: errors.New("sim: DeleteRecords timed out (still in flight)")}
	case PartTransient, PartPermanent:
		ps := s.Delete.Partitions()
		part := ps[w.rng.IntN(len(ps))]
		code := int16(6) // NOT_LEADER_OR_FOLLOWER: a retry may pass
		if f == PartPermanent {
			code = protocol.CodePolicyViolation
		}
		failing[part] = protocol.Deleted{Partition: part, Err: errors.Newf("sim: %s", f), Code: code}
	}
	w.checkCommitted(planID)
	return protocol.Report{Deleted: w.deleteNow(s.Delete, failing)}
}
