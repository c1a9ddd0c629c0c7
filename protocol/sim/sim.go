package sim

import (
	"encoding/base64"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/projector/invariant"
	"github.com/kcleanup/kcleanup/protocol"
)

// Fault is a kind of fault the scheduler injects.
type Fault string

// Every fault kind. Faults lists them for coverage.
const (
	Kill          Fault = "kill"
	Freeze        Fault = "freeze-resume"
	Fail          Fault = "request-fails"
	TimeoutAfter  Fault = "timeout-after-effect"
	Delayed       Fault = "request-delayed"
	Denied        Fault = "access-denied"
	PartTransient Fault = "partition-fails-transient"
	PartPermanent Fault = "partition-fails-permanent"
	Duplicated    Fault = "delivery-duplicated"
	Reordered     Fault = "delivery-reordered"
	Compacted     Fault = "control-topic-compacted"
	Conflicting   Fault = "conflicting-commit-superseded"
)

// Faults lists every fault kind.
func Faults() []Fault {
	return append([]Fault{Kill, Freeze, Fail, TimeoutAfter, Delayed, Denied, PartTransient, PartPermanent,
		Duplicated, Reordered, Compacted, Conflicting}, mirrorFaults()...)
}

// Config shapes one simulated fleet.
type Config struct {
	Workers    int     // worker replicas
	Plans      int     // plans applied, each by its own apply process
	Partitions int     // of the data topic
	FaultRate  float64 // chance that a step meets a fault
	Ticks      int     // scheduler ticks with faults; then the fleet settles
	// CompactionLag is min.compaction.lag in ticks: a record is removed only
	// when the record with its key that supersedes it is at least this old.
	CompactionLag int
	// Grace is the retraction grace in ticks (protocol.RetractionGrace).
	Grace int
}

// DefaultConfig is what `make sim` and `make test` run.
func DefaultConfig() Config {
	return Config{Workers: 3, Plans: 6, Partitions: 3, FaultRate: 0.15, Ticks: 600, CompactionLag: 40, Grace: 10}
}

// Result is what one seed did.
type Result struct {
	Seed   uint64
	Errors []error
	Faults map[Fault]int
	// MirrorFaults counts the faults met by mirror requests (in Faults too).
	MirrorFaults map[Fault]int
	// Mirrored: the seed attaches a mirror; MirrorPlans is how many plans
	// the mirror holds at the end.
	Mirrored    bool
	MirrorPlans int
	Steps       map[protocol.Kind]int
	Ticks       int
	// Records is the control topic's length (offsets appended).
	Records int64
	// Disputed counts the worker passes that found their projection
	// disputed (projector.State.Disputed: the log cleaner showed a
	// conflict the other way): the window docs/design.md §5 describes.
	Disputed int
	// Pins counts the PINNED and UNPINNED records appended (PINNED by the
	// pin mode, protocol.NewPin), PinRejected the COMMITTED records the
	// fold rejected for a pin.
	Pins, PinRejected int
	// StaleByBinding and StaleByIdentify count the pin runs, with markers
	// of the data topic's previous incarnation, refused by the control
	// topic's binding and by Identify's topic ID (the control topic still
	// unbound).
	StaleByBinding, StaleByIdentify int
	// Grace is the seed's restore grace in ticks (0: off); GraceWaits
	// counts the runs that stopped to wait it out, GraceKills the processes
	// killed while waiting.
	Grace, GraceWaits, GraceKills int
	// Skewed counts the processes (and pin writers) whose clock ran off
	// the broker's; PinHolds the runs a pin the broker's clock still held
	// stopped before DeleteRecords.
	Skewed, PinHolds int
	// AtRiskLower, AtRiskHigher and AtRiskStates count the compactions
	// after which a fresh fold of the control topic as it is had a lower
	// boundary, a higher one, or other operation states than the full
	// history's while it was at risk (State.AtRisk: the gate says "cannot
	// tell", no worker deletes on it). Not at risk, each is a violation.
	AtRiskLower, AtRiskHigher, AtRiskStates int
}

// entry is one record on the simulated control topic.
type entry struct {
	rec  projector.Record
	tick int
}

type delayed struct {
	due   int
	apply func()
}

// world is the simulated cluster and the fleet.
type world struct {
	cfg   Config
	rng   *rand.Rand
	tick  int
	log   []entry            // the control topic as it is (compaction removes entries)
	full  []projector.Record // every record ever appended
	next  int64
	topic protocol.Topic
	later []delayed
	procs []*process
	plans []events.Plan
	res   *Result
	quiet bool // faults off: the fleet settles
	errs  []error
	// mirror is the attached Flink Agents mirror (nil: the seed has none);
	// inMirror: a mirror request is under way (for MirrorFaults).
	mirror   *mirrorTopic
	inMirror bool
	// settledFold is settled's fold of the log when it had settledAt's
	// next offset and length.
	settledFold *projector.State
	settledAt   [2]int64
	// staleTopicID is the data topic's ID before it was recreated: some
	// pins are ordered with markers of that incarnation.
	staleTopicID string
	// clocks draws the processes' clock skews, apart from rng so that the
	// rest of a seed's schedule is what it was before skews were drawn.
	clocks *rand.Rand
}

const dataTopic = "action-state"

var epoch = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// Run simulates one seed.
func Run(seed uint64, cfg Config) Result {
	res := Result{Seed: seed, Faults: map[Fault]int{}, MirrorFaults: map[Fault]int{}, Steps: map[protocol.Kind]int{}}
	w := &world{cfg: cfg, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), res: &res,
		clocks: rand.New(rand.NewPCG(seed^0x5bd1e995, seed))}
	var id [16]byte
	id[0], id[7] = byte(seed), 0x5a
	w.topic = protocol.Topic{Name: dataTopic, ID: base64.RawURLEncoding.EncodeToString(id[:]), Replicas: 3,
		Configs: map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1"},
		Start:   events.Offsets{}, End: events.Offsets{}}
	id[7] = 0x5b // the incarnation before the data topic was deleted and recreated
	w.staleTopicID = base64.RawURLEncoding.EncodeToString(id[:])
	for p := int32(0); p < int32(cfg.Partitions); p++ {
		w.topic.Partitions = append(w.topic.Partitions, p)
		w.topic.Start[p], w.topic.End[p] = 0, 1000
	}
	w.plans = w.makePlans()
	w.mirror = newMirror(seed, cfg)
	res.Mirrored = w.mirror != nil
	if w.mirror != nil {
		res.Grace = w.mirror.grace
	}
	for i := 0; i < cfg.Workers; i++ {
		w.procs = append(w.procs, w.newWorker(i))
	}
	spawned := 0
	for w.tick = 0; w.tick < cfg.Ticks; w.tick++ {
		w.applyDue()
		w.mirrorTick()
		if w.rng.Float64() < 0.03 {
			w.compact()
		}
		if w.rng.Float64() < 0.01 {
			w.pinEvent()
		}
		if w.rng.Float64() < 0.002 {
			w.flinkAgentsRecord()
		}
		if spawned < len(w.plans) && w.rng.Float64() < 0.04 {
			w.procs = append(w.procs, w.newApply(w.plans[spawned], spawned))
			spawned++
		}
		w.restartDead()
		w.schedule()
	}
	// Settle: no more faults; every frozen process wakes; every plan not yet
	// submitted is; the workers finish what is pending.
	w.quiet = true
	for ; spawned < len(w.plans); spawned++ {
		w.procs = append(w.procs, w.newApply(w.plans[spawned], spawned))
	}
	for _, p := range w.procs {
		p.frozenUntil = 0
	}
	// A pin's writer whose clock runs ahead holds for longer by the
	// broker's clock (up to the expiry it wrote): settle past that too.
	settleEnd := w.tick + 4000
	for _, pin := range invariant.Fold(w.full).Pins() {
		if pin.Unpinned == nil && !pin.Expires.IsZero() {
			settleEnd = max(settleEnd, w.tick+int(pin.Expires.Sub(w.now())/time.Second)+400)
		}
	}
	for ; w.tick < settleEnd; w.tick++ {
		// The log cleaner keeps running while the fleet settles: a copy superseded
		// by a repair goes once the repair is lag-old (seed 6954 waited on it).
		if w.tick%w.cfg.CompactionLag == 0 {
			w.compact()
		}
		w.applyDue()
		w.mirrorTick()
		w.restartDead()
		w.schedule()
		if len(w.later) == 0 && w.settled() {
			break
		}
	}
	res.Ticks = w.tick
	res.Records = w.next
	res.Errors = append(w.errs, w.check()...)
	for _, pin := range invariant.Fold(w.full).Pins() {
		res.PinRejected += len(pin.Rejected)
	}
	for _, r := range w.full {
		if events.IsPinKey(r.Key) && r.Value != nil {
			res.Pins++
		}
	}
	if w.mirror != nil {
		res.MirrorPlans = len(w.mirror.fold().Operations())
	}
	return res
}

// makePlans draws plans with random offsets: some raise every partition,
// some conflict with others (below on one partition, above on another).
func (w *world) makePlans() []events.Plan {
	var out []events.Plan
	for i := 0; i < w.cfg.Plans; i++ {
		offs := events.Offsets{}
		for _, p := range w.topic.Partitions {
			offs[p] = int64(w.rng.IntN(900))
		}
		rp := fmt.Sprintf("chk-%d", i)
		out = append(out, events.Plan{PlanID: events.ComputePlanID(rp, dataTopic, w.topic.ID, offs),
			SourceRecoveryPoint: rp, Topic: dataTopic, TopicID: w.topic.ID, Offsets: offs})
	}
	return out
}

func (w *world) now() time.Time { return epoch.Add(time.Duration(w.tick) * time.Second) }

// appendRecord puts one record on the control topic and returns its offset.
func (w *world) appendRecord(key, value []byte, headers ...projector.Header) int64 {
	// The control topic has message.timestamp.type=LogAppendTime: each
	// record carries the broker's time, whatever its writer stamped.
	if value == nil && flinkagents.IsPlanIDKey(key) {
		w.errs = append(w.errs, errors.Newf("tick %d: a tombstone for the Flink Agents key %s: kcleanup erases only its own records", w.tick, key))
	}
	r := projector.Record{Offset: w.next, Key: key, Value: value, Timestamp: w.now(), LogAppendTime: true, Headers: headers}
	w.next++
	w.log = append(w.log, entry{rec: r, tick: w.tick})
	w.full = append(w.full, r)
	return r.Offset
}

// flinkAgentsRecord is Flink Agents' own cleanup tool writing the control
// topic: a record keyed by a bare plan ID, which kcleanup's fold rejects
// and its maintenance must never tombstone (the key is the job's).
func (w *world) flinkAgentsRecord() {
	plan := w.plans[w.rng.IntN(len(w.plans))]
	w.appendRecord([]byte(plan.PlanID), []byte(`{"status":"COMMITTED"}`))
}

func (w *world) applyDue() {
	keep := w.later[:0]
	var due []delayed
	for _, d := range w.later {
		if d.due <= w.tick {
			due = append(due, d)
		} else {
			keep = append(keep, d)
		}
	}
	w.later = keep
	for _, d := range due {
		d.apply()
	}
}

// compact is one run of the log cleaner: a record whose key a later record
// holds is removed once that later record is CompactionLag ticks old; a
// tombstone goes CompactionLag ticks after it could be removed itself.
func (w *world) compact() {
	w.count(Compacted)
	latest := map[string]int{} // key → tick of the latest record old enough to supersede
	for _, e := range w.log {
		if w.tick-e.tick >= w.cfg.CompactionLag {
			latest[string(e.rec.Key)] = e.tick
		}
	}
	last := map[string]int64{}
	for _, e := range w.log {
		if w.tick-e.tick >= w.cfg.CompactionLag {
			last[string(e.rec.Key)] = e.rec.Offset
		}
	}
	out := w.log[:0]
	for _, e := range w.log {
		k := string(e.rec.Key)
		lo, old := last[k]
		switch {
		case old && e.rec.Offset < lo:
			continue // superseded by a record old enough
		case old && e.rec.Offset == lo && e.rec.Value == nil && w.tick-latest[k] >= 2*w.cfg.CompactionLag:
			continue // a tombstone past delete.retention
		}
		out = append(out, e)
	}
	removed := len(out) < len(w.log)
	w.log = out
	if removed {
		// A fresh reader may read the log at any moment, not only once the
		// fleet settled: check it after every run that removed something.
		w.errs = append(w.errs, w.compactionAgrees(fmt.Sprintf("tick %d", w.tick), false)...)
	}
}

// compactionAgrees compares a fold of the control topic as it is with a
// fold of its full history: the boundary on every partition (a lower one
// is what lets a gate allow what is deleted or about to be, a higher one
// what lets a worker delete too much) and every operation's state. After
// a compaction a difference is a violation only when that fold is not at
// risk (at risk, the gate says it cannot tell and no worker deletes on
// it: the windows of docs/design.md §5 and §12); at the end (final), once
// the fleet settled, any difference is one.
func (w *world) compactionAgrees(when string, final bool) (errs []error) {
	got, want := invariant.Fold(w.records()), invariant.Fold(w.full)
	risk, _ := got.AtRisk()
	var lower, higher, differ bool
	defer func() {
		if !risk || final {
			return
		}
		// Fail-closed: every reader of this log is told it cannot tell.
		errs = nil
		w.res.AtRiskLower += b2i(lower)
		w.res.AtRiskHigher += b2i(higher)
		w.res.AtRiskStates += b2i(differ)
	}()
	gb, wb := got.Boundary(), want.Boundary()
	parts := map[int32]bool{}
	for p := range gb {
		parts[p] = true
	}
	for p := range wb {
		parts[p] = true
	}
	for _, p := range slices.Sorted(maps.Keys(parts)) {
		g, gok := gb[p]
		f, fok := wb[p]
		switch {
		case gok == fok && g == f:
		case !gok || (fok && g < f):
			lower = true
			errs = append(errs, errors.Newf("compaction LOWER: %s: a fresh fold of the control topic as it is has partition %d's boundary at %s, its full history's at %s (%s vs %s)", when, p, offset(g, gok), offset(f, fok), gb, wb))
		default:
			higher = true
			errs = append(errs, errors.Newf("compaction HIGHER: %s: a fresh fold of the control topic as it is has partition %d's boundary at %s, its full history's at %s (%s vs %s)", when, p, offset(g, gok), offset(f, fok), gb, wb))
		}
	}
	states := map[string]fsm.State{}
	for _, op := range got.Operations() {
		states[op.PlanID] = op.State
	}
	for _, op := range want.Operations() {
		if s, ok := states[op.PlanID]; !ok || s != op.State {
			differ = true
			errs = append(errs, errors.Newf("compaction state: %s: plan %s is %s in a fresh fold of the control topic as it is (present: %t), %s in its full history's", when, op.PlanID, s, ok, op.State))
		}
		delete(states, op.PlanID)
	}
	for id, s := range states {
		differ = true
		errs = append(errs, errors.Newf("compaction state: %s: plan %s is %s in a fresh fold of the control topic as it is, absent from its full history's", when, id, s))
	}
	return errs
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func offset(o int64, ok bool) string {
	if !ok {
		return "none"
	}
	return fmt.Sprint(o)
}

func (w *world) count(f Fault) {
	w.res.Faults[f]++
	if w.inMirror {
		w.res.MirrorFaults[f]++
	}
}

// mirrorTick attaches the mirror when its tick comes, and lets the
// broker abort a mirror transaction left open too long.
func (w *world) mirrorTick() {
	if w.mirror == nil {
		return
	}
	if w.mirror.attachOffset < 0 && w.tick >= w.mirror.attachAt {
		w.attachMirror()
	}
	w.mirror.expire(w.tick)
}

// fault draws whether the step about to run meets a fault, and which.
func (w *world) fault(choices ...Fault) Fault {
	if w.quiet || w.rng.Float64() >= w.cfg.FaultRate {
		return ""
	}
	f := choices[w.rng.IntN(len(choices))]
	w.count(f)
	return f
}

// schedule gives one step to one process that can take it.
func (w *world) schedule() {
	var ready []*process
	for _, p := range w.procs {
		if !p.dead && !p.done && p.frozenUntil <= w.tick {
			ready = append(ready, p)
		}
	}
	if len(ready) == 0 {
		return
	}
	p := ready[w.rng.IntN(len(ready))]
	if !w.quiet && w.rng.Float64() < 0.01 {
		w.count(Kill)
		if p.waiting {
			w.res.GraceKills++
		}
		p.dead, p.diedAt = true, w.tick
		return
	}
	if !w.quiet && w.rng.Float64() < 0.01 {
		w.count(Freeze)
		p.frozenUntil = w.tick + 5 + w.rng.IntN(60)
		return
	}
	p.act(w)
}

// restartDead starts a new worker for each dead one, after a while (the
// replica's supervisor), and re-runs an interrupted apply sometimes (an
// operator re-running the command).
func (w *world) restartDead() {
	for i, p := range w.procs {
		if !p.dead || p.replaced || w.tick-p.diedAt < 20 {
			continue
		}
		p.replaced = true
		if p.pin != nil {
			continue // an operator whose pin command died looks at status first
		}
		if p.worker {
			w.procs[i] = w.newWorker(p.index)
		} else if w.quiet || w.rng.IntN(2) == 0 {
			w.procs[i] = w.newApply(p.plan, p.index)
			w.procs[i].sync = p.sync
		}
	}
}

// settled: no run in flight, no apply left, nothing pending in a fold of
// the whole control topic.
func (w *world) settled() bool {
	for _, p := range w.procs {
		if !p.dead && (p.run != nil || (!p.worker && !p.done)) {
			return false
		}
		if !p.dead && p.worker && len(p.proj.Disputed()) > 0 {
			return false // its next pass reads the log afresh
		}
	}
	// The fold of the log as it is, again only when the log changed: a
	// fleet held by a pin for hours of broker time waits thousands of ticks
	// on an unchanged log. Appends raise next, compaction only shortens
	// the log, so (next, length) names one log.
	if w.settledFold == nil || w.settledAt != [2]int64{w.next, int64(len(w.log))} {
		w.settledFold, w.settledAt = invariant.Fold(w.records()), [2]int64{w.next, int64(len(w.log))}
	}
	st := w.settledFold
	return len(st.Pending()) == 0 && len(st.Repairs()) == 0 && w.mirrorInStep(st) == nil
}

func (w *world) records() []projector.Record {
	out := make([]projector.Record, len(w.log))
	for i, e := range w.log {
		out[i] = e.rec
	}
	return out
}

// check is I1–I5 on the control topic as it is, plus: the compacted topic
// keeps the boundary of the full history.
func (w *world) check() []error {
	recs := w.records()
	errs := w.checkPins()
	errs = append(errs, invariant.Verify(invariant.Facts{Records: recs, Again: slices.Clone(recs), End: w.next,
		DataTopic: dataTopic, LiveTopicID: w.topic.ID, LogStart: w.topic.Start.Clone()},
		invariant.WantAllApplied())...)
	errs = append(errs, w.compactionAgrees("at the end", true)...)
	// The mirror: the job's fold never fails; once everything settled, its
	// boundary is the control topic's.
	if w.mirror != nil {
		if err := w.mirror.fold().Err(); err != nil {
			errs = append(errs, errors.Newf("mirror: the Flink Agents job's fold of the mirror fails: %v", err))
		}
		if st := invariant.Fold(recs); len(st.Pending()) == 0 && len(st.Repairs()) == 0 {
			if err := w.mirrorInStep(st); err != nil {
				errs = append(errs, err)
			}
		}
	}
	// I3 for the views: every live worker's projection names the winners
	// the log does (a disputed one would read afresh, docs/design.md §5).
	for _, p := range w.procs {
		if !p.dead && p.worker {
			if ids := p.proj.Disputed(); len(ids) > 0 {
				errs = append(errs, errors.Newf("I3: worker %d's projection still shows a disputed conflict (plans %v)", p.index, ids))
			}
		}
	}
	return errs
}

// deleteNow is a DeleteRecords taking effect: I1 is checked at that moment,
// against the full history. A partition's offset above its high watermark
// fails as Kafka fails it.
func (w *world) deleteNow(to events.Offsets, failing map[int32]protocol.Deleted) []protocol.Deleted {
	full := invariant.Fold(w.full)
	boundary := full.Boundary()
	var out []protocol.Deleted
	for _, p := range to.Partitions() {
		if d, ok := failing[p]; ok {
			out = append(out, d)
			continue
		}
		if to[p] > w.topic.End[p] {
			out = append(out, protocol.Deleted{Partition: p, Err: errors.New("OFFSET_OUT_OF_RANGE"), Code: protocol.CodeOffsetOutOfRange})
			continue
		}
		if b, ok := boundary[p]; !ok || to[p] > b {
			w.errs = append(w.errs, errors.Newf("I1: tick %d: DeleteRecords %s-%d up to %d, above the committed boundary %s of the full history", w.tick, dataTopic, p, to[p], boundary))
		}
		// No deletion above a pin that protects the partition now: a pin
		// that landed after the commit is void there (P5), one before it
		// rejected it (P4), so any such pin is a violation.
		for _, pin := range full.Pins() {
			if brokerHolds(pin, p, w.now()) && to[p] > pin.Offsets[p] {
				w.errs = append(w.errs, errors.Newf("pins: tick %d: DeleteRecords %s-%d up to %d, above pin %s (offset %d, pinned at control offset %d)", w.tick, dataTopic, p, to[p], pin.PinID, pin.Offsets[p], pin.Offset))
			}
		}
		w.topic.Start[p] = max(w.topic.Start[p], to[p])
		out = append(out, protocol.Deleted{Partition: p})
	}
	return out
}

// checkCommitted is I1's second half at the moment of a deletion: the
// plan's COMMITTED is accepted in the full history.
func (w *world) checkCommitted(planID string) {
	op, ok := invariant.Fold(w.full).Operation(planID)
	if !ok || (op.State != fsm.Committed && op.State != fsm.Deleting && op.State != fsm.Applied) {
		w.errs = append(w.errs, errors.Newf("I1: tick %d: DeleteRecords for plan %s, whose COMMITTED is not accepted in the log (state %s)", w.tick, planID, op.State))
	}
}

func secs(n int) time.Duration { return time.Duration(n) * time.Second }

// drawSkew is a process's clock against the broker's: most run on it,
// some two hours ahead (the producer), a minute ahead, or a day
// behind.
func (w *world) drawSkew() time.Duration {
	skews := []time.Duration{2 * time.Hour, time.Minute, -24 * time.Hour}
	if w.clocks.IntN(4) != 0 {
		return 0
	}
	w.res.Skewed++
	return skews[w.clocks.IntN(len(skews))]
}

// brokerHolds is the invariant's own reading of a pin at broker time now
// (the world's clock): it protects partition part while it is not
// unpinned and not void there, and until its expiry, or until its
// duration has run from when the broker appended its PINNED, whichever
// is later (a pinning host whose clock runs behind still gets the time it
// asked for). Whatever "at" a writer stamped, no DeleteRecords above it.
func brokerHolds(pin projector.Pin, part int32, now time.Time) bool {
	if _, ok := pin.Offsets[part]; !ok || pin.Unpinned != nil {
		return false
	}
	if _, void := pin.Void[part]; void {
		return false
	}
	if pin.Expires.IsZero() {
		return true
	}
	return now.Before(pin.Expires) || now.Before(pin.Appended.Add(pin.Expires.Sub(pin.At)))
}

// pinEvent is an operator pinning a recovery point around the boundary
// (some partitions below it: partial or void pins), with an expiry or
// none, by `kcleanup pin` (a process running the pin mode; a quarter of
// them with markers of the data topic's previous incarnation), or
// unpinning one (sometimes one the log does not hold).
func (w *world) pinEvent() {
	st := invariant.Fold(w.records())
	if pins := st.Pins(); len(pins) > 0 && w.rng.IntN(3) == 0 {
		id := pins[w.rng.IntN(len(pins))].PinID
		if w.rng.IntN(5) == 0 {
			id = fmt.Sprintf("%016x", w.rng.Uint64())
		}
		k, v := events.NewUnpin(id, "done", w.now(), "operator").Encode()
		w.appendRecord(k, v)
		return
	}
	offs := events.Offsets{}
	b := st.Boundary()
	for _, p := range w.topic.Partitions {
		offs[p] = max(0, b[p]+int64(w.rng.IntN(400))-50)
	}
	o := &pinOrder{recoveryPoint: fmt.Sprintf("sp-%d", w.tick), topicID: w.topic.ID, offsets: offs}
	if w.rng.IntN(2) == 0 {
		o.lasts = secs(1 + w.rng.IntN(300))
	}
	if w.rng.IntN(4) == 0 {
		o.topicID = w.staleTopicID // markers of the incarnation before the topic was recreated
	}
	w.procs = append(w.procs, w.newPinner(o))
}
