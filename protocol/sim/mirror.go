package sim

import (
	"encoding/base64"
	"fmt"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/projector/invariant"
	"github.com/kcleanup/kcleanup/protocol"
)

// The mirror's own fault kinds (the request faults Fail, TimeoutAfter and
// Delayed meet its requests too).
const (
	// MirrorPaused: a mirror writer stops between its produce and its
	// commit, its transaction open, for some ticks.
	MirrorPaused Fault = "mirror-writer-paused"
	// MirrorKilled: a mirror writer dies inside its transaction, leaving it
	// open until a newer writer's fence or the transaction timeout aborts it.
	MirrorKilled Fault = "mirror-writer-killed-in-txn"
	// MirrorFenced: a writer's commit is refused because a newer writer
	// fenced it (PRODUCER_FENCED); it re-runs from its own fence.
	MirrorFenced Fault = "mirror-writer-fenced"
	// MirrorLSO: a read_committed read of the mirror cannot reach its end
	// offset because a transaction is open (the last stable offset is
	// pinned below it).
	MirrorLSO Fault = "mirror-read-pinned-by-open-txn"
)

// mirrorFaults are the fault kinds only a mirror meets.
func mirrorFaults() []Fault { return []Fault{MirrorPaused, MirrorKilled, MirrorFenced, MirrorLSO} }

const (
	mirrorTopicName = "action-state.flink-agents"
	// mirrorTxnTimeout is the mirror writer's transaction.timeout.ms in
	// ticks: the broker aborts a transaction left open this long.
	mirrorTxnTimeout = 15
	// mirrorWriteAttempts is worker.mirrorWriteAttempts.
	mirrorWriteAttempts = 8
)

// mirrorTopic is the simulated Flink Agents mirror: one partition, written
// only in transactions of the one transactional ID every kcleanup process
// shares, so that a writer's fence (InitProducerID) bumps the epoch and
// aborts whatever an older writer left open.
type mirrorTopic struct {
	id      string
	entries []mirrorEntry
	next    int64
	epoch   int
	// attachAt is the tick MIRROR_ATTACHED is appended; attachOffset its
	// control offset (-1 before).
	attachAt     int
	attachOffset int64
	// grace is the restore grace the processes run with (0: off), in
	// ticks; untimed: every other committed record's time is not known to
	// a reader (a foreign writer's record without a timestamp), so the
	// grace runs from when a process first saw it.
	grace   int
	untimed bool
}

type txnState int

const (
	txnOpen txnState = iota
	txnCommitted
	txnAborted
)

type mirrorEntry struct {
	rec    flinkagents.Record
	epoch  int
	state  txnState
	opened int
	// committed is when its commit made it readable (the commit marker's
	// time).
	committed time.Time
}

// mirrorWrite is a process's WriteMirror under way: worker.WriteMirror's
// loop of attempts, each fence, read, check, produce, commit.
type mirrorWrite struct {
	rec     protocol.MirrorRecord
	attempt int
	epoch   int
	// open: produced, not yet committed (the writer paused there).
	open bool
	err  error
}

// newMirror draws whether this seed has a mirror, and when it is attached:
// half the seeds, half of those before the first plan. The draw has its
// own generator, so a seed without a mirror runs as it did before the
// mirror was modelled.
func newMirror(seed uint64, cfg Config) *mirrorTopic {
	r := uint64(seed*0x2545f4914f6cdd1d) >> 33
	if r%2 == 0 {
		return nil
	}
	var id [16]byte
	id[0], id[7], id[15] = byte(seed), 0x3c, byte(seed>>8)
	m := &mirrorTopic{id: base64.RawURLEncoding.EncodeToString(id[:]), attachOffset: -1}
	if (r/2)%2 == 1 {
		m.attachAt = 1 + int(r/4)%(cfg.Ticks/2)
	}
	// The restore grace: off in a quarter of the seeds, else 1 to 90 ticks;
	// a third of those with record times a reader cannot know.
	g := (r >> 12) % 1024
	if g%4 != 0 {
		m.grace = 1 + int(g/4)%90
		m.untimed = (g/4)%3 == 0
	}
	return m
}

// attachMirror is `kcleanup mirror attach`: MIRROR_ATTACHED on the
// control topic, then a mirror sync run by its own process.
func (w *world) attachMirror() {
	// The grace travels with the attachment (schema version 4): no
	// process is told it otherwise (finishConfig).
	env := events.NewMirrorEvent(events.MirrorAttached, events.Mirror{Topic: mirrorTopicName, TopicID: w.mirror.id, Reason: "simulated attach",
		HasGrace: true, RestoreGrace: secs(w.mirror.grace)}, w.now(), "operator@sim")
	key, value := env.Encode()
	w.mirror.attachOffset = w.appendRecord(key, value)
	w.procs = append(w.procs, &process{index: len(w.procs), sync: true, proj: projector.New(), actor: fmt.Sprintf("attach@%d", w.tick)})
}

// expire aborts a transaction left open past the timeout (the broker's
// transaction coordinator).
func (m *mirrorTopic) expire(tick int) {
	for i := range m.entries {
		if e := &m.entries[i]; e.state == txnOpen && tick-e.opened >= mirrorTxnTimeout {
			e.state = txnAborted
		}
	}
}

// fence is InitProducerID: a new epoch; an older writer's open
// transaction is aborted.
func (m *mirrorTopic) fence() int {
	m.epoch++
	for i := range m.entries {
		if m.entries[i].state == txnOpen {
			m.entries[i].state = txnAborted
		}
	}
	return m.epoch
}

// commit is EndTxn(commit) of the writer with epoch at now: refused when
// a newer writer fenced it.
func (m *mirrorTopic) commit(epoch int, now time.Time) error {
	if epoch != m.epoch {
		return errors.New("sim: PRODUCER_FENCED: a newer writer of the mirror fenced this one")
	}
	for i := range m.entries {
		if e := &m.entries[i]; e.state == txnOpen && e.epoch == epoch {
			e.state, e.committed = txnCommitted, now
		}
	}
	return nil
}

// pinned: an open transaction holds the last stable offset below the end.
func (m *mirrorTopic) pinned() bool {
	for _, e := range m.entries {
		if e.state == txnOpen {
			return true
		}
	}
	return false
}

// fold is the Flink Agents job's fold of the committed records.
func (m *mirrorTopic) fold() *flinkagents.Fold {
	f := flinkagents.New()
	for _, e := range m.entries {
		if e.state == txnCommitted {
			f.Step(e.rec)
		}
	}
	return f
}

func (m *mirrorTopic) view() protocol.MirrorView {
	visible := map[int64]time.Time{}
	for _, e := range m.entries {
		if e.state == txnCommitted && !(m.untimed && e.rec.Offset%2 == 0) {
			visible[e.rec.Offset] = e.committed
		}
	}
	return protocol.MirrorView{Topic: mirrorTopicName, TopicID: m.id, Partitions: []int32{0}, CleanupPolicy: "compact",
		MaxMessageBytes: 1 << 20, Fold: m.fold(), Visible: visible}
}

// coveredAt is when the mirror first showed plan covered: the commit time
// of the first committed record, in offset order, whose plan is at or
// above it on every partition (the true time, known or not to readers).
func (m *mirrorTopic) coveredAt(plan events.Plan) (time.Time, bool) {
	for _, e := range m.entries {
		if e.state != txnCommitted {
			continue
		}
		_, p, err := flinkagents.ParseValue(e.rec.Value)
		if err != nil {
			continue
		}
		covers := true
		for part, off := range plan.Offsets {
			if got, ok := p.Offsets[part]; !ok || got < off {
				covers = false
			}
		}
		if covers {
			return e.committed, true
		}
	}
	return time.Time{}, false
}

// readMirror is ReadMirror: read_committed to the end captured first.
func (p *process) readMirror(w *world) protocol.Report {
	w.inMirror = true
	defer func() { w.inMirror = false }()
	if w.fault(Fail) == Fail {
		return protocol.Report{Err: errors.New("sim: mirror metadata request failed")}
	}
	if w.mirror.pinned() {
		w.count(MirrorLSO)
		return protocol.Report{Err: errors.New("sim: mirror read timed out: an open transaction holds its last stable offset below the end")}
	}
	v := w.mirror.view()
	v.ReadAt = w.now()
	return protocol.Report{Mirror: v}
}

// writeMirror runs p.mw on until it ends (true, with its report) or the
// writer pauses or dies inside its transaction (false).
func (p *process) writeMirror(w *world) (protocol.Report, bool) {
	mw, m := p.mw, w.mirror
	w.inMirror = true
	defer func() { w.inMirror = false }()
	for {
		if mw.open {
			mw.open = false
			switch w.fault(Fail, TimeoutAfter, Delayed) {
			case Fail:
				mw.err = errors.New("sim: mirror commit failed")
			case TimeoutAfter:
				if err := m.commit(mw.epoch, w.now()); err != nil {
					w.count(MirrorFenced)
					mw.err = err
				} else {
					w.checkMirrorFold()
					mw.err = errors.New("sim: mirror commit timed out (it took effect)")
				}
			case Delayed:
				epoch := mw.epoch
				w.later = append(w.later, delayed{due: w.tick + 1 + w.rng.IntN(30), apply: func() {
					if m.commit(epoch, w.now()) == nil {
						w.checkMirrorFold()
					}
				}})
				mw.err = errors.New("sim: mirror commit timed out (still in flight)")
			default:
				if err := m.commit(mw.epoch, w.now()); err != nil {
					w.count(MirrorFenced)
					mw.err = err
				} else {
					w.checkMirrorFold()
					return p.endWrite(protocol.Report{MirrorWrote: true})
				}
			}
		} else {
			mw.err = p.attemptWrite(w)
			if mw.open {
				switch w.fault(MirrorPaused, MirrorKilled) {
				case MirrorPaused:
					p.frozenUntil = w.tick + 1 + w.rng.IntN(3*mirrorTxnTimeout/2)
					return protocol.Report{}, false
				case MirrorKilled:
					p.dead, p.diedAt = true, w.tick
					return protocol.Report{}, false
				}
				continue // commit at once
			}
			if mw.err == nil {
				return p.endWrite(protocol.Report{}) // not needed
			}
		}
		if !protocol.MirrorWriteRetry(mw.err, 0) || mw.attempt >= mirrorWriteAttempts {
			return p.endWrite(protocol.Report{Err: mw.err})
		}
	}
}

// attemptWrite is worker.writeMirrorOnce up to its produce: fence, read,
// check, begin, produce. It sets mw.open when a record was produced.
func (p *process) attemptWrite(w *world) error {
	mw, m := p.mw, w.mirror
	mw.attempt++
	if w.fault(Fail) == Fail {
		return errors.New("sim: InitProducerID failed")
	}
	mw.epoch = m.fence()
	if w.fault(Fail) == Fail {
		return errors.New("sim: mirror read failed")
	}
	needed, err := protocol.MirrorWrite(m.view(), mw.rec)
	if err != nil || !needed {
		return err
	}
	if w.fault(Fail) == Fail {
		return errors.New("sim: mirror produce failed")
	}
	key := []byte(mw.rec.Plan.PlanID)
	m.entries = append(m.entries, mirrorEntry{rec: flinkagents.Record{Offset: m.next, Key: key,
		Value: flinkagents.EncodeValue(mw.rec.Status, mw.rec.Plan)}, epoch: mw.epoch, state: txnOpen, opened: w.tick})
	m.next++
	mw.open = true
	return nil
}

func (p *process) endWrite(rep protocol.Report) (protocol.Report, bool) {
	p.mw = nil
	return rep, true
}

// checkMirrorFold: the Flink Agents job's fold of the mirror never fails.
func (w *world) checkMirrorFold() {
	if err := w.mirror.fold().Err(); err != nil {
		w.errs = append(w.errs, errors.Newf("mirror: tick %d: the Flink Agents job's fold of the mirror fails: %v", w.tick, err))
	}
}

// checkMirrored is checked as a DeleteRecords is issued: once the mirror
// is attached (its ATTACHED accepted in the full history below what the
// deleting process has read), the mirror holds the plan or one at or
// above it on every partition.
func (w *world) checkMirrored(p *process, planID string) {
	if w.mirror == nil || w.mirror.attachOffset < 0 || w.mirror.attachOffset >= p.read {
		return
	}
	full := invariant.Fold(w.full)
	if att, ok := full.Mirror(); !ok || att.TopicID != w.mirror.id {
		return
	}
	op, _ := full.Operation(planID)
	if !protocol.MirrorCovers(w.mirror.view(), op.Plan) {
		b, err := protocol.MirrorEffective(w.mirror.view(), dataTopic, w.topic.ID, w.topic.Partitions)
		w.errs = append(w.errs, errors.Newf("mirror: tick %d: DeleteRecords for plan %s (%s) while the mirror's boundary is %s (%v)",
			w.tick, planID, op.Plan.Offsets, b, err))
	}
}

// checkGrace is checked as a DeleteRecords is issued, like checkMirrored:
// with a restore grace, no deletion before the grace has passed since the
// mirror first showed the plan (the commit time of its first covering
// record, whether or not a reader could know it).
func (w *world) checkGrace(p *process, planID string) {
	if w.mirror == nil || w.mirror.grace == 0 || w.mirror.attachOffset < 0 || w.mirror.attachOffset >= p.read {
		return
	}
	full := invariant.Fold(w.full)
	if att, ok := full.Mirror(); !ok || att.TopicID != w.mirror.id {
		return
	}
	op, _ := full.Operation(planID)
	at, ok := w.mirror.coveredAt(op.Plan)
	if !ok {
		return // checkMirrored reports it
	}
	if until := at.Add(secs(w.mirror.grace)); w.now().Before(until) {
		w.errs = append(w.errs, errors.Newf("grace: tick %d: DeleteRecords for plan %s at %s, before the restore grace of %d ticks was out (mirror showed it at %s, until %s)",
			w.tick, planID, w.now().Format(time.TimeOnly), w.mirror.grace, at.Format(time.TimeOnly), until.Format(time.TimeOnly)))
	}
}

// mirrorInStep: the mirror's effective boundary is the control topic's.
func (w *world) mirrorInStep(st *projector.State) error {
	if w.mirror == nil || w.mirror.attachOffset < 0 {
		return nil
	}
	if _, ok := st.Mirror(); !ok {
		return nil
	}
	want := st.Boundary()
	got, err := protocol.MirrorEffective(w.mirror.view(), dataTopic, w.topic.ID, w.topic.Partitions)
	if len(want) == 0 {
		if len(w.mirror.view().Fold.Operations()) > 0 {
			return errors.Newf("mirror: the control topic has no boundary, the mirror holds plans (%s)", got)
		}
		return nil
	}
	if err != nil {
		return errors.Newf("mirror: the control topic's boundary is %s, the mirror's cannot be read: %v", want, err)
	}
	if !got.Equal(want) {
		return errors.Newf("mirror: the control topic's boundary is %s, the mirror's %s", want, got)
	}
	return nil
}

// mirrorKey names what a worker's mirror sync brings the mirror up to (as
// worker/daemon's owner does): the attachment and the plan that sets the
// boundary, with its state.
func mirrorKey(st *projector.State) (string, bool) {
	att, ok := st.Mirror()
	if !ok {
		return "", false
	}
	key := fmt.Sprintf("%s/%s@%d", att.Topic, att.TopicID, att.Offset)
	if op, ok := protocol.BoundaryPlan(st); ok {
		key += " " + op.PlanID + "=" + string(op.State)
	}
	return key, true
}
