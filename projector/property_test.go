package projector

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
)

// The property tests fold random control logs that mix valid lifecycles with
// everything a shared topic can hold: garbage bytes, bad keys, tampered plans,
// tombstones, duplicates, overwrites, stale and regressing commits, events out
// of lifecycle, plans for other topics, records from newer builds.
//
// generator writes a log the way writers would: it keeps a projection of what
// it wrote (view) and computes COMMITTED boundaries from it, sometimes from
// an older view (a concurrent writer), sometimes wrongly. Nothing restricts
// where a record is re-appended: duplicates copy any earlier record, repairs
// and retractions land whenever a worker pass happens to run.
type generator struct {
	r    *rand.Rand
	view *State
	log  []Record
	off  int64

	plans       []events.Plan // every plan made, any topic
	stale       []events.Offsets
	actors      []string
	newerSchema bool // allow records that degrade the projection
}

func newGenerator(seed uint64) *generator {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &generator{
		r:           r,
		view:        New(KeepAudit()),
		off:         int64(r.IntN(3)),
		actors:      []string{"worker-1", "worker-2", "host-a/4711"},
		newerSchema: r.IntN(4) == 0,
	}
}

// run appends n records.
func (g *generator) run(n int) []Record {
	for len(g.log) < n {
		g.stepOnce()
	}
	return g.log
}

func (g *generator) stepOnce() {
	switch x := g.r.IntN(100); {
	case x < 14:
		g.planned(g.newPlan(testTopic, testTopicID(1)))
	case x < 16:
		if g.r.IntN(2) == 0 {
			g.planned(g.newPlan("orders", testTopicID(1)))
		} else {
			g.planned(g.newPlan(testTopic, testTopicID(2)))
		}
	case x < 34:
		g.commit()
	case x < 46:
		g.finish(events.Deleting)
	case x < 56:
		g.finish(events.Applied)
	case x < 62:
		g.outOfLifecycle()
	case x < 72:
		g.garbage()
	case x < 76:
		g.tombstone()
	case x < 86:
		g.duplicate()
	case x < 91:
		g.overwrite()
	case x < 92:
		if g.newerSchema {
			g.newer()
		}
	case x < 95:
		g.workerPass()
	case x < 97:
		g.pinEvent()
	default:
		g.gap()
	}
}

// pinEvent pins a recovery point around the boundary (some partitions
// already below it: partial or void pins), with or without an expiry, or
// unpins a pin (sometimes one the log does not hold).
func (g *generator) pinEvent() {
	at := testEpoch.Add(time.Duration(g.off) * time.Second)
	if pins := g.view.Pins(); len(pins) > 0 && g.r.IntN(3) == 0 {
		id := pins[g.r.IntN(len(pins))].PinID
		if g.r.IntN(4) == 0 {
			id = fmt.Sprintf("%016x", g.r.Uint64())
		}
		g.appendEnv(events.NewUnpin(id, "done", at, g.actor()))
		return
	}
	offsets := events.Offsets{}
	b := g.view.Boundary()
	for p := int32(0); p < 3; p++ {
		offsets[p] = max(0, b[p]+int64(g.r.IntN(200))-30)
	}
	var expires time.Time
	if g.r.IntN(2) == 0 {
		expires = at.Add(time.Duration(1+g.r.IntN(60)) * time.Second)
	}
	g.appendEnv(events.NewPin(fmt.Sprintf("sp-%d", g.off), testTopic, testTopicID(1), offsets, expires, "rollback", at, g.actor()))
}

// newPlan makes a plan around the current boundary, so that some commits
// raise it and some regress.
func (g *generator) newPlan(topic, topicID string) events.Plan {
	offsets := events.Offsets{}
	b := g.view.Boundary()
	for p := int32(0); p < 3; p++ {
		if len(offsets) > 0 && g.r.IntN(3) == 0 {
			continue
		}
		offsets[p] = max(0, b[p]+int64(g.r.IntN(250))-50)
	}
	p := newPlan(fmt.Sprintf("chk-%d", len(g.plans)), topic, topicID, offsets)
	g.plans = append(g.plans, p)
	return p
}

func (g *generator) actor() string { return g.actors[g.r.IntN(len(g.actors))] }

func (g *generator) env(p events.Plan, e events.Event) events.Envelope {
	return envelope(p, e, g.off, g.actor())
}

// anyPlan picks a plan made earlier, or nil.
func (g *generator) anyPlan() (events.Plan, bool) {
	if len(g.plans) == 0 {
		return events.Plan{}, false
	}
	return g.plans[g.r.IntN(len(g.plans))], true
}

// inState picks a plan whose operation is in one of the states.
func (g *generator) inState(states ...fsm.State) (events.Plan, bool) {
	var found []events.Plan
	for _, o := range g.view.Operations() {
		for _, s := range states {
			if o.State == s {
				found = append(found, o.Plan)
			}
		}
	}
	if len(found) == 0 {
		return events.Plan{}, false
	}
	return found[g.r.IntN(len(found))], true
}

func (g *generator) planned(p events.Plan) {
	g.appendEnv(g.env(p, events.Planned))
}

func (g *generator) commit() {
	p, ok := g.inState(fsm.Planned)
	if !ok {
		p, ok = g.anyPlan() // unknown operation or a late commit
		if !ok {
			return
		}
	}
	env := g.env(p, events.Committed)
	switch x := g.r.IntN(10); {
	case x < 7:
		env.Boundary = nextBoundary(g.view.Boundary(), p.Offsets)
	case x < 9 && len(g.stale) > 0: // a writer that read an older view
		env.Boundary = nextBoundary(g.stale[g.r.IntN(len(g.stale))], p.Offsets)
	default:
		env.Boundary = nextBoundary(nil, p.Offsets)
		env.Boundary[int32(g.r.IntN(3))] += int64(g.r.IntN(3)) - 1
	}
	g.stale = append(g.stale, g.view.Boundary())
	g.appendEnv(env)
}

func (g *generator) finish(e events.Event) {
	from := fsm.Committed
	if e == events.Applied {
		from = fsm.Deleting
	}
	p, ok := g.inState(from, fsm.Deleting)
	if !ok {
		return
	}
	env := g.env(p, e)
	if e == events.Applied {
		env.LogStart = p.Offsets.Clone()
		for q := range env.LogStart {
			env.LogStart[q] += int64(g.r.IntN(20))
		}
		if g.r.IntN(5) == 0 { // a deletion that did not reach the plan
			q := p.Offsets.Partitions()[0]
			env.LogStart[q] = p.Offsets[q] - 1
		}
	}
	g.appendEnv(env)
}

// outOfLifecycle writes a random event for a random plan: mostly invalid.
func (g *generator) outOfLifecycle() {
	p, ok := g.anyPlan()
	if !ok {
		return
	}
	e := []events.Event{events.Planned, events.Committed, events.Deleting, events.Applied}[g.r.IntN(4)]
	env := g.env(p, e)
	switch e {
	case events.Committed:
		env.Boundary = nextBoundary(g.view.Boundary(), p.Offsets)
	case events.Applied:
		env.LogStart = p.Offsets.Clone()
	}
	g.appendEnv(env)
}

// someKey is a key of a known plan (any event), or garbage.
func (g *generator) someKey() []byte {
	if p, ok := g.anyPlan(); ok && g.r.IntN(4) != 0 {
		e := []events.Event{events.Planned, events.Committed, events.Deleting, events.Applied}[g.r.IntN(4)]
		return []byte(events.Key(p.PlanID, e))
	}
	return randomBytes(g.r, g.r.IntN(80))
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return b
}

func (g *generator) garbage() {
	key := g.someKey()
	var value []byte
	switch g.r.IntN(4) {
	case 0:
		value = randomBytes(g.r, g.r.IntN(200))
	case 1: // a valid envelope under another key
		if p, ok := g.anyPlan(); ok {
			_, value = g.env(p, events.Planned).Encode()
		}
	case 2: // a tampered plan
		if p, ok := g.anyPlan(); ok {
			env := g.env(p, events.Planned)
			env.Plan.Offsets = p.Offsets.Clone()
			env.Plan.Offsets[p.Offsets.Partitions()[0]]++
			key, value = env.Encode()
		}
	default:
		value = []byte(`{"schemaVersion":1,"event":"PLANNED"}`)
	}
	if value == nil {
		value = []byte{}
	}
	g.appendRecord(Record{Key: key, Value: value})
}

func (g *generator) tombstone() {
	g.appendRecord(Record{Key: g.someKey()})
}

func (g *generator) newer() {
	p, ok := g.anyPlan()
	if !ok {
		return
	}
	g.appendRecord(Record{Key: []byte(events.Key(p.PlanID, "PAUSED")),
		Value: []byte(`{"schemaVersion":1,"event":"PAUSED","planId":"` + p.PlanID + `"}`)})
}

// duplicate re-appends any earlier record, as a retrying writer (or a
// careless script) would: same content, maybe another actor and time.
func (g *generator) duplicate() {
	if len(g.log) == 0 {
		return
	}
	src := g.log[g.r.IntN(len(g.log))]
	if env, err := events.Decode(src.Key, src.Value); err == nil && g.r.IntN(2) == 0 {
		env.Actor = g.actor()
		g.appendEnv(env)
		return
	}
	g.appendRecord(Record{Key: src.Key, Value: src.Value})
}

// overwrite writes other content under an accepted key, then often the
// repairs a worker appends on reading it.
func (g *generator) overwrite() {
	ops := g.view.Operations()
	if len(ops) == 0 {
		return
	}
	o := ops[g.r.IntN(len(ops))]
	key := events.Key(o.PlanID, o.History[g.r.IntN(len(o.History))].Event)
	var value []byte
	switch g.r.IntN(3) {
	case 0:
		value = nil // tombstone
	case 1:
		value = randomBytes(g.r, g.r.IntN(50)+1)
	default: // a well-formed envelope with other content
		planID, e, _ := events.ParseKey([]byte(key))
		o, _ := g.view.Operation(planID)
		env := g.env(o.Plan, e)
		env.Boundary = events.Offsets{0: int64(g.r.IntN(1000))}
		env.Event = events.Committed
		_, value = env.Encode()
	}
	g.appendRecord(Record{Key: []byte(key), Value: value})
	if g.r.IntN(2) == 0 {
		g.repair()
	}
}

func (g *generator) repair() {
	for _, r := range g.view.Repairs() {
		g.appendRecord(Record{Key: r.Key, Value: r.Value})
	}
}

// workerPass is what a worker does on each pass: append Repairs, and a
// tombstone for each retraction older than a grace period (here, some
// records), or for all of them.
func (g *generator) workerPass() {
	g.repair()
	grace := int64(g.r.IntN(20))
	for _, rt := range g.view.Retractions() {
		if rt.Offset < g.off-grace {
			g.appendRecord(Record{Key: rt.Key})
		}
	}
}

// gap skips offsets, as compaction or transaction markers do.
func (g *generator) gap() { g.off += int64(g.r.IntN(5)) }

func (g *generator) appendEnv(env events.Envelope) {
	k, v := env.Encode()
	g.appendRecord(Record{Key: k, Value: v, Timestamp: env.At})
}

// appendRecord gives the record the next offset, keeps it and folds it into
// the writers' view.
func (g *generator) appendRecord(r Record) {
	r.Offset = g.off
	if r.Timestamp.IsZero() {
		r.Timestamp = testEpoch.Add(time.Duration(r.Offset) * time.Second)
	}
	g.off++
	g.log = append(g.log, r)
	g.view.Step(r)
}

// TestPropertyFold checks, over random logs with everything mixed in:
// I2 (no partition's boundary ever decreases), that a record that is not
// accepted changes neither boundary, binding nor operations, I4 (two folds
// of the same records have the same Digest, and re-delivered records change
// nothing), that Repairs names every accepted key whose latest record is
// not its accepted content and that appending it clears it without changing
// the state, and that Retractions names exactly the keys holding nothing but
// rejected records, and that a tombstone on each changes nothing.
func TestPropertyFold(t *testing.T) {
	iterations := 300
	if testing.Short() {
		iterations = 60
	}
	reasons := map[Reason]int{}
	outcomes := map[Outcome]int{}
	covered, implied := 0, 0
	for seed := uint64(1); seed <= uint64(iterations); seed++ {
		g := newGenerator(seed)
		log := g.run(40 + int(seed%80))
		s := New(KeepAudit())
		twin := New(KeepAudit())
		for i, r := range log {
			before := s.Boundary()
			core := s.coreDigest()
			var was snapshot
			if env, err := events.Decode(r.Key, r.Value); err == nil && (env.Event == events.Deleting || env.Event == events.Applied) {
				was = snap(s) // it may be evidence of an erased COMMITTED
			}
			v := s.Step(r)
			outcomes[v.Outcome]++
			reasons[v.Reason]++
			if v.Covered {
				covered++
			}
			if v.Offset != r.Offset || v.Key != string(r.Key) {
				t.Fatalf("seed %d: verdict %+v is not about record at %d", seed, v, r.Offset)
			}
			if last := s.verdictOf(s.audit[len(s.audit)-1]); last != v {
				t.Fatalf("seed %d offset %d: Step said %+v, Audit says %+v", seed, r.Offset, v, last)
			}
			after := s.Boundary()
			checkNoRegression(t, seed, r.Offset, before, after)
			if v.Outcome != Accepted {
				if v.Reason == "" && v.Outcome == Rejected {
					t.Fatalf("seed %d offset %d: rejection without a reason: %+v", seed, r.Offset, v)
				}
				if v.Reason == ReasonCommitMissing {
					if diff := was.evidenceChange(s); diff != "" {
						t.Fatalf("seed %d offset %d: evidence of an erased COMMITTED: %s", seed, r.Offset, diff)
					}
				} else if s.coreDigest() != core || !maps.Equal(before, after) {
					t.Fatalf("seed %d offset %d: a %s record (%s) changed boundary or operations", seed, r.Offset, v.Outcome, v.Reason)
				}
			}
			if v.Covered && (v.Outcome != Accepted || v.Event != events.Committed || !maps.Equal(before, after)) {
				t.Fatalf("seed %d offset %d: covered verdict %+v moved the boundary from %v to %v", seed, r.Offset, v, before, after)
			}
			twin.Step(r)
			if i > 0 && g.r.IntN(8) == 0 { // a reader re-delivers an old record
				old := log[g.r.IntN(i)]
				if v := twin.Step(old); v.Reason != ReasonOutOfOrder {
					t.Fatalf("seed %d: re-delivered offset %d: verdict %+v, want out-of-order", seed, old.Offset, v)
				}
			}
		}
		if s.Digest() != twin.Digest() {
			t.Fatalf("seed %d: I4: two folds of the same log have different digests", seed)
		}
		if s.Digest() != g.view.Digest() {
			t.Fatalf("seed %d: I4: the generator's fold and the test's differ", seed)
		}
		if got := len(s.Audit()); got != len(log) {
			t.Fatalf("seed %d: audit has %d verdicts for %d records", seed, got, len(log))
		}
		for _, o := range s.Operations() {
			implied += len(o.Implied)
		}
		next := checkRepairs(t, seed, s, log[len(log)-1].Offset+1)
		checkRetractions(t, seed, s, next)
	}
	for _, o := range []Outcome{Accepted, Duplicate, Rejected} {
		if outcomes[o] == 0 {
			t.Errorf("the generator never produced a %s record", o)
		}
	}
	for _, r := range Reasons() {
		if r != ReasonOutOfOrder && r != ReasonNewerSchema && reasons[r] == 0 {
			t.Errorf("the generator never produced a %s rejection", r)
		}
	}
	if covered == 0 || implied == 0 {
		t.Errorf("the generator produced %d covered commits and %d implied steps", covered, implied)
	}
	t.Logf("outcomes %v; reasons %v; %d covered commits, %d implied steps", outcomes, reasons, covered, implied)
}

func checkNoRegression(t *testing.T, seed uint64, offset int64, before, after events.Offsets) {
	t.Helper()
	for p, b := range before {
		if a, ok := after[p]; !ok || a < b {
			t.Fatalf("seed %d offset %d: I2: partition %d boundary went from %d to %d (present %t)", seed, offset, p, b, a, ok)
		}
	}
}

// checkRepairs: Repairs lists every accepted key whose latest record is not
// its accepted content (and may list more, to keep the order); appending
// them, each is a duplicate, the state does not change and Repairs is then
// empty. It returns the offset after the last record appended.
func checkRepairs(t *testing.T, seed uint64, s *State, next int64) int64 {
	t.Helper()
	repairs := s.Repairs()
	listed := map[string]bool{}
	for _, r := range repairs {
		listed[string(r.Key)] = true
	}
	last := map[string]Verdict{}
	for _, v := range s.Audit() {
		last[v.Key] = v
	}
	accepted := map[string]bool{}
	for _, o := range s.Operations() {
		for _, st := range o.History {
			key := events.Key(o.PlanID, st.Event)
			accepted[key] = true
			v := last[key]
			intact := v.Outcome == Accepted || v.Outcome == Duplicate
			if !intact && !listed[key] {
				t.Fatalf("seed %d: key %s: latest verdict %s %s, not listed in Repairs", seed, key, v.Outcome, v.Reason)
			}
		}
	}
	for _, o := range s.Operations() {
		for _, e := range o.Evidence { // re-appended over an overwrite too
			accepted[events.Key(o.PlanID, e)] = true
		}
	}
	for _, p := range s.Pins() {
		accepted[events.PinKey(p.PinID, events.Pinned)] = true
		if p.Unpinned != nil {
			accepted[events.PinKey(p.PinID, events.Unpinned)] = true
		}
	}
	for key := range listed {
		if !accepted[key] {
			t.Fatalf("seed %d: Repairs lists %s, which holds no accepted record", seed, key)
		}
	}
	core := s.coreDigest()
	for _, r := range repairs {
		r.Offset = next
		next++
		if v := s.Step(r); v.Outcome != Duplicate && v.Reason != ReasonCommitMissing { // re-appended evidence is rejected again, by design
			t.Fatalf("seed %d: repair of %s: verdict %s %s: %s", seed, r.Key, v.Outcome, v.Reason, v.Detail)
		}
	}
	if len(s.Repairs()) != 0 || s.coreDigest() != core {
		t.Fatalf("seed %d: after appending the repairs, %d remain or the state changed", seed, len(s.Repairs()))
	}
	return next
}

// checkRetractions: Retractions lists exactly the non-empty keys whose every
// record was rejected, whose latest record is neither a tombstone nor a
// newer build's; a tombstone on each is rejected, changes nothing and
// empties the list.
func checkRetractions(t *testing.T, seed uint64, s *State, next int64) {
	t.Helper()
	type keyInfo struct {
		held   bool
		latest Verdict
		record bool
	}
	keys := map[string]*keyInfo{}
	for _, v := range s.Audit() {
		k := keys[v.Key]
		if k == nil {
			k = &keyInfo{}
			keys[v.Key] = k
		}
		if v.Outcome != Rejected {
			k.held = true
		}
		k.latest = v
	}
	want := map[string]bool{}
	for key, k := range keys {
		if key != "" && !k.held && !strings.HasPrefix(k.latest.Detail, "a tombstone") && !strings.Contains(k.latest.Detail, "this record is a tombstone") &&
			k.latest.Reason != ReasonNewerSchema && k.latest.Reason != ReasonUnknownEvent && !isEvidenceVerdict(k.latest) && !s.holdsEvidence(key) {
			want[key] = true
		}
	}
	got := map[string]bool{}
	prev := int64(-1)
	for _, r := range s.Retractions() {
		got[string(r.Key)] = true
		if r.Offset <= prev || keys[string(r.Key)].latest.Offset != r.Offset {
			t.Fatalf("seed %d: retraction %q at offset %d: not the latest record, or out of order", seed, r.Key, r.Offset)
		}
		prev = r.Offset
	}
	if !maps.Equal(want, got) {
		t.Fatalf("seed %d: Retractions lists %v, want %v", seed, sortedKeys(got), sortedKeys(want))
	}
	core := s.coreDigest()
	for _, r := range s.Retractions() {
		if v := s.Step(Record{Offset: next, Key: r.Key}); v.Outcome != Rejected || v.Reason != ReasonTombstone {
			t.Fatalf("seed %d: tombstone for %q: %s %s", seed, r.Key, v.Outcome, v.Reason)
		}
		next++
	}
	if len(s.Retractions()) != 0 || s.coreDigest() != core {
		t.Fatalf("seed %d: after the tombstones, %d retractions remain or the state changed", seed, len(s.Retractions()))
	}
}

// isEvidenceVerdict: a DELETING or APPLIED kept as evidence of an erased
// COMMITTED; Retractions must leave it alone.
func isEvidenceVerdict(v Verdict) bool {
	return v.Reason == ReasonCommitMissing
}

// workerAppends is what a worker appends after the log: every Repairs
// record, then a tombstone for every Retractions key, until neither has
// anything to add (a worker's passes).
func workerAppends(s *State, log []Record) []Record {
	next := log[len(log)-1].Offset + 1
	for range 5 {
		reps, rets := s.Repairs(), s.Retractions()
		if len(reps) == 0 && len(rets) == 0 {
			break
		}
		for _, r := range reps {
			r.Offset, r.Timestamp = next, time.Time{}
			next++
			log = append(log, r)
			s.Step(r)
		}
		for _, rt := range rets {
			r := Record{Offset: next, Key: rt.Key}
			next++
			log = append(log, r)
			s.Step(r)
		}
	}
	return log
}

// TestPropertyCompaction checks I5 without restricting writers: random logs
// with duplicates and repairs anywhere, overwrites, garbage, tombstones,
// regressions and conflicting commits; a worker then appends Repairs and a
// tombstone for every retraction, and the log compacted by key (tombstones
// kept, as before delete.retention.ms, or gone with their keys) replays to
// the same boundary, the same plans setting it, the same binding, the same
// degraded flag and the same operation states as the full log, and its
// boundary never decreases on any prefix.
func TestPropertyCompaction(t *testing.T) {
	iterations := 1000
	if testing.Short() {
		iterations = 100
	}
	var dropped, duplicates, overwrites, repaired, retracted int
	for seed := uint64(1); seed <= uint64(iterations); seed++ {
		g := newGenerator(seed)
		log := g.run(40 + int(seed%160))
		full := fold(log)
		for _, v := range full.Audit() {
			switch {
			case v.Outcome == Duplicate:
				duplicates++
			case v.Reason == ReasonOverwritesAccepted:
				overwrites++
			}
		}
		n := len(log)
		repaired += len(full.Repairs())
		retracted += len(full.Retractions())
		log = workerAppends(full, log)
		if r, rt := len(full.Repairs()), len(full.Retractions()); r != 0 || rt != 0 {
			t.Fatalf("seed %d: after the worker's passes, %d repairs and %d retractions remain", seed, r, rt)
		}
		for _, drop := range []bool{false, true} {
			compacted := compact(log, drop)
			dropped += n - len(compacted)
			c := New(KeepAudit())
			for _, r := range compacted {
				before := c.Boundary()
				c.Step(r)
				checkNoRegression(t, seed, r.Offset, before, c.Boundary())
			}
			if diff := compareProjections(full, c); diff != "" {
				t.Fatalf("seed %d (tombstones dropped %t): I5: %s", seed, drop, diff)
			}
		}
	}
	if dropped == 0 || duplicates == 0 || overwrites == 0 || repaired == 0 || retracted == 0 {
		t.Fatalf("the generator did not exercise compaction: %d records dropped, %d duplicates, %d overwrites, %d repairs, %d retractions",
			dropped, duplicates, overwrites, repaired, retracted)
	}
	t.Logf("compaction dropped %d records; %d duplicates, %d overwrites; the worker appended %d repairs and %d retraction tombstones",
		dropped, duplicates, overwrites, repaired, retracted)
}

// compareProjections says how two projections differ in what I5 promises
// is the same, or "" when they do not.
func compareProjections(full, c *State) string {
	if !maps.Equal(full.Boundary(), c.Boundary()) {
		return fmt.Sprintf("boundary %v from the full log, %v compacted", full.Boundary(), c.Boundary())
	}
	for _, p := range full.Boundary().Partitions() {
		if full.BoundarySetBy(p) != c.BoundarySetBy(p) {
			return fmt.Sprintf("partition %d set by %s in the full log, by %s compacted", p, full.BoundarySetBy(p), c.BoundarySetBy(p))
		}
	}
	ft, fid, fok := full.Binding()
	ct, cid, cok := c.Binding()
	if ft != ct || fid != cid || fok != cok {
		return fmt.Sprintf("binding %s %s %t in the full log, %s %s %t compacted", ft, fid, fok, ct, cid, cok)
	}
	if fd, _ := full.Degraded(); func() bool { cd, _ := c.Degraded(); return cd != fd }() {
		return fmt.Sprintf("degraded %t in the full log, not compacted", fd)
	}
	if fs, cs := opStates(full), opStates(c); !maps.Equal(fs, cs) {
		return fmt.Sprintf("operation states differ:\nfull      %v\ncompacted %v", fs, cs)
	}
	return ""
}

// StepDecoded over DecodeAll is Step: a reader that decodes ahead of the
// fold, on several goroutines (the replay's real decoder), computes the same
// verdicts and the same state. Run with -race, it also checks that decoding
// shares nothing.
//
// Every other seed decodes with Decoders kept across all seeds, whose
// events.Decoders remember the plans of earlier logs.
func TestPropertyStepDecodedIsStep(t *testing.T) {
	kept := NewDecoders(3)
	for seed := uint64(1); seed <= 100; seed++ {
		log := newGenerator(seed).run(40 + int(seed%80))
		workers := 2 + int(seed%7)
		decoded := DecodeAll(log, workers)
		if seed%2 == 0 {
			decoded, workers = kept.DecodeAll(log), len(kept)
		}
		if len(decoded) != len(log) {
			t.Fatalf("seed %d: DecodeAll on %d goroutines returned %d of %d records", seed, workers, len(decoded), len(log))
		}
		a, b := New(KeepAudit()), New(KeepAudit())
		for i, r := range log {
			if decoded[i].Offset != r.Offset {
				t.Fatalf("seed %d: DecodeAll put offset %d at position %d, want %d", seed, decoded[i].Offset, i, r.Offset)
			}
			va, vb := a.Step(r), b.StepDecoded(decoded[i])
			if va != vb {
				t.Fatalf("seed %d offset %d (%d goroutines): Step %+v, StepDecoded %+v", seed, r.Offset, workers, va, vb)
			}
		}
		// Re-delivered records are out of order for both.
		if len(log) > 0 {
			r := log[0]
			if va, vb := a.Step(r), b.StepDecoded(DecodeAll(log[:1], workers)[0]); va != vb || va.Reason != ReasonOutOfOrder {
				t.Fatalf("seed %d: re-delivery: Step %+v, StepDecoded %+v", seed, va, vb)
			}
		}
		if a.Digest() != b.Digest() {
			t.Fatalf("seed %d: digests differ", seed)
		}
	}
}

// StepDecodedLean is StepDecoded without an accepted verdict's Key and
// Detail: the same state, audit included, and every other verdict field.
func TestPropertyStepDecodedLean(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		log := newGenerator(seed).run(40 + int(seed%80))
		decoded := DecodeAll(log, 2)
		a, b := New(KeepAudit()), New(KeepAudit())
		accepted := 0
		for i, r := range log {
			va, vb := a.Step(r), b.StepDecodedLean(decoded[i])
			if va.Outcome == Accepted {
				accepted++
				if vb.Key != "" || vb.Detail != "" {
					t.Fatalf("seed %d offset %d: lean verdict has key %q, detail %q", seed, r.Offset, vb.Key, vb.Detail)
				}
				va.Key, va.Detail = "", ""
			}
			if va != vb {
				t.Fatalf("seed %d offset %d: Step %+v, StepDecodedLean %+v", seed, r.Offset, va, vb)
			}
		}
		if accepted == 0 {
			t.Fatalf("seed %d: no record accepted: the test checks nothing", seed)
		}
		if a.Digest() != b.Digest() || !slices.Equal(a.Audit(), b.Audit()) {
			t.Fatalf("seed %d: the lean fold's state or audit differs", seed)
		}
	}
}

// TestPropertyCleanerBeforeRepairs: the log cleaner runs at a random point,
// before the workers' repairs and retractions (a control topic whose
// min.compaction.lag.ms is too short, a fleet stopped too long). It keeps
// the latest record of every key among those it cleans (tombstones kept or
// dropped), and the records after that point are read as written. In the
// replay of that log:
//   - the boundary never decreases on any prefix (I2);
//   - for every plan whose DELETING was accepted in the full log, so that
//     records below it may be deleted, the boundary stays at or above the
//     plan as long as any record of its COMMITTED, DELETING or APPLIED
//     survives: a surviving DELETING or APPLIED is evidence of its
//     COMMITTED, and never leaves anything pending by itself;
//   - when AtRisk was false where the cleaner ran, the cleaned prefix has
//     the boundary of the full prefix: nothing the cleaner could remove
//     held boundary.
func TestPropertyCleanerBeforeRepairs(t *testing.T) {
	iterations := 300 // make test runs it under -race
	if testing.Short() {
		iterations = 100
	}
	var evidenced, checkedSafe, atRisk, flipped int
	for seed := uint64(1); seed <= uint64(iterations); seed++ {
		g := newGenerator(seed)
		log := g.run(40 + int(seed%160))
		cut := 1 + g.r.IntN(len(log))
		prefix := fold(log[:cut])
		risky, _ := prefix.AtRisk()
		full := fold(log)
		for _, drop := range []bool{false, true} {
			cleaned := append(compact(log[:cut], drop), log[cut:]...)
			c := New(KeepAudit())
			for _, r := range cleaned {
				before := c.Boundary()
				c.Step(r)
				checkNoRegression(t, seed, r.Offset, before, c.Boundary())
			}
			surviving := map[string]bool{}
			for _, r := range cleaned {
				if env, err := events.Decode(r.Key, r.Value); err == nil && env.Event != events.Planned {
					surviving[env.PlanID] = true
				}
			}
			if ft, fid, _ := full.Binding(); func() bool { ct, cid, _ := c.Binding(); return ct != ft || cid != fid }() {
				// The known residual: a PLANNED for another topic, awaiting
				// retraction, now precedes the moved binding PLANNED. Every
				// marker of the real topic is refused (topic mismatch).
				flipped++
				continue
			}
			boundary := c.Boundary()
			for _, o := range full.Operations() {
				if o.State != fsm.Deleting && o.State != fsm.Applied || !surviving[o.PlanID] {
					continue
				}
				evidenced++
				for p, off := range o.Plan.Offsets {
					if boundary[p] < off {
						t.Fatalf("seed %d (cut %d, tombstones dropped %t): plan %s was deleted up to %s and its records survive, but the cleaned log's boundary is %s",
							seed, cut, drop, o.PlanID, o.Plan.Offsets, boundary)
					}
				}
			}
			for _, o := range c.Pending() {
				if _, ok := o.firstCommitted(); !ok || len(o.Evidence) > 0 {
					t.Fatalf("seed %d: plan %s is pending without an accepted COMMITTED", seed, o.PlanID)
				}
			}
			if risky || len(prefix.Repairs()) > 0 || len(prefix.Retractions()) > 0 {
				atRisk++
				continue
			}
			checkedSafe++
			cp := fold(compact(log[:cut], drop))
			want, got := prefix.Boundary(), cp.Boundary()
			for p, off := range want {
				if got[p] < off {
					t.Fatalf("seed %d (cut %d, tombstones dropped %t): AtRisk was false, yet the cleaner lowered partition %d from %d to %d",
						seed, cut, drop, p, off, got[p])
				}
			}
		}
	}
	if evidenced == 0 || checkedSafe == 0 || atRisk == 0 {
		t.Fatalf("the generator did not exercise the cleaner: %d evidenced plans, %d safe and %d at-risk cuts", evidenced, checkedSafe, atRisk)
	}
	t.Logf("%d deleted plans with surviving records kept their boundary; %d cuts with nothing to repair kept it; %d cuts at risk or awaiting repairs; %d cleaned logs bound to another topic",
		evidenced, checkedSafe, atRisk, flipped)
}

func (o Operation) firstCommitted() (Step, bool) {
	for _, st := range o.History {
		if st.Event == events.Committed {
			return st, true
		}
	}
	return Step{}, false
}

// A projection without the audit (a worker's, the gate's) decides every
// record as one with it (history's), and holds the same state.
func TestPropertyAuditChangesNothingElse(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		log := newGenerator(seed).run(40 + int(seed%120))
		lean, full := New(), New(KeepAudit())
		for _, r := range log {
			if vl, vf := lean.Step(r), full.Step(r); vl != vf {
				t.Fatalf("seed %d offset %d: without audit %+v, with %+v", seed, r.Offset, vl, vf)
			}
		}
		if lean.Digest() != full.Digest() {
			t.Fatalf("seed %d: digests differ", seed)
		}
		if lean.Audit() != nil || len(full.Audit()) != len(log) {
			t.Fatalf("seed %d: audit %d without KeepAudit, %d with it, of %d records", seed, len(lean.Audit()), len(full.Audit()), len(log))
		}
		if !slices.Equal(lean.Rejected(), full.Rejected()) {
			t.Fatalf("seed %d: rejected records differ", seed)
		}
	}
}
