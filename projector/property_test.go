package projector

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

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
// an older view (a concurrent writer), sometimes wrongly.
type generator struct {
	r    *rand.Rand
	view *State
	log  []Record
	off  int64

	plans  []events.Plan // every plan made, any topic
	stale  []events.Offsets
	actors []string

	// disciplined restricts re-appended records so that I5 holds (see
	// doc.go, "Compaction"): a duplicate or an overwrite (then at once its
	// repair) only of the latest accepted key, while nothing but
	// state-independent garbage was appended after it; a DELETING retry only
	// while the operation is DELETING.
	disciplined  bool
	lastAccepted string
	clean        bool
	newerSchema  bool // allow records that degrade the projection
}

func newGenerator(seed uint64, disciplined bool) *generator {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &generator{
		r:           r,
		view:        New(),
		off:         int64(r.IntN(3)),
		actors:      []string{"worker-1", "worker-2", "host-a/4711"},
		disciplined: disciplined,
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
	case x < 92:
		g.overwrite()
	case x < 93:
		if g.newerSchema {
			g.newer()
		}
	default:
		g.gap()
	}
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
	g.appendRecord(Record{Key: key, Value: value}, false)
}

func (g *generator) tombstone() {
	g.appendRecord(Record{Key: g.someKey()}, false)
}

func (g *generator) newer() {
	p, ok := g.anyPlan()
	if !ok {
		return
	}
	g.appendRecord(Record{Key: []byte(events.Key(p.PlanID, "PAUSED")),
		Value: []byte(`{"schemaVersion":1,"event":"PAUSED","planId":"` + p.PlanID + `"}`)}, false)
}

// duplicate re-appends an earlier record, as a retrying writer would: same
// content, maybe another actor and time.
func (g *generator) duplicate() {
	var src Record
	if g.disciplined {
		if !g.clean || g.lastAccepted == "" {
			return
		}
		src = g.lastRecord(g.lastAccepted)
	} else {
		if len(g.log) == 0 {
			return
		}
		src = g.log[g.r.IntN(len(g.log))]
	}
	if env, err := events.Decode(src.Key, src.Value); err == nil && g.r.IntN(2) == 0 {
		env.Actor = g.actor()
		g.appendEnv(env)
		return
	}
	g.appendRecord(Record{Key: src.Key, Value: src.Value}, true)
}

// overwrite writes other content under an accepted key, then (always when
// disciplined, often otherwise) the repairs a worker appends on reading it.
func (g *generator) overwrite() {
	key := ""
	if g.disciplined {
		if !g.clean || g.lastAccepted == "" {
			return
		}
		key = g.lastAccepted
	} else {
		ops := g.view.Operations()
		if len(ops) == 0 {
			return
		}
		o := ops[g.r.IntN(len(ops))]
		key = events.Key(o.PlanID, o.History[g.r.IntN(len(o.History))].Event)
	}
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
	g.appendRecord(Record{Key: []byte(key), Value: value}, true)
	if g.disciplined || g.r.IntN(2) == 0 {
		g.repair()
	}
}

func (g *generator) repair() {
	for _, r := range g.view.Repairs() {
		g.appendRecord(Record{Key: r.Key, Value: r.Value}, true)
	}
}

// gap skips offsets, as compaction or transaction markers do.
func (g *generator) gap() { g.off += int64(g.r.IntN(5)) }

func (g *generator) lastRecord(key string) Record {
	for i := len(g.log) - 1; i >= 0; i-- {
		if string(g.log[i].Key) == key {
			return g.log[i]
		}
	}
	return Record{}
}

func (g *generator) appendEnv(env events.Envelope) {
	k, v := env.Encode()
	g.appendRecord(Record{Key: k, Value: v, Timestamp: env.At}, false)
}

// appendRecord folds the record into the writers' view and keeps it, unless
// the discipline forbids it. reappend marks the records the discipline
// itself chose (duplicates, overwrites and repairs of the latest key).
func (g *generator) appendRecord(r Record, reappend bool) {
	if g.disciplined && !reappend && !g.allowed(r) {
		return
	}
	r.Offset = g.off
	g.off++
	g.log = append(g.log, r)
	v := g.view.Step(r)
	if !g.disciplined {
		return
	}
	switch {
	case v.Outcome == Accepted:
		g.lastAccepted, g.clean = v.Key, true
	case v.Outcome == Duplicate && v.Key == g.lastAccepted:
	case v.Reason == ReasonOverwritesAccepted && v.Key == g.lastAccepted:
	case v.Outcome == Rejected && stateIndependent(v.Reason):
	default:
		g.clean = false
	}
}

// allowed reports whether a record the generator did not choose as a
// re-append keeps the discipline: it must not re-append an accepted key,
// except a DELETING retry while the operation is DELETING.
func (g *generator) allowed(r Record) bool {
	planID, e, err := events.ParseKey(r.Key)
	if err != nil {
		return true
	}
	o, ok := g.view.Operation(planID)
	if !ok {
		return true
	}
	for _, st := range o.History {
		if st.Event == e {
			_, err := events.Decode(r.Key, r.Value)
			return err == nil && e == events.Deleting && o.State == fsm.Deleting
		}
	}
	return true
}

// stateIndependent reasons reject a record whatever the state, so moving an
// accepted record past it under compaction cannot change its verdict.
func stateIndependent(r Reason) bool {
	switch r {
	case ReasonMalformed, ReasonBadKey, ReasonTampered, ReasonTombstone, ReasonNewerSchema, ReasonUnknownEvent:
		return true
	}
	return false
}

// TestPropertyFold checks, over random logs with everything mixed in:
// I2 (no partition's boundary ever decreases), that a record that is not
// accepted changes neither boundary, binding nor operations, I4 (two folds
// of the same records have the same Digest, and re-delivered records change
// nothing), and that Repairs names exactly the overwritten keys and that
// appending it clears them without changing the state.
func TestPropertyFold(t *testing.T) {
	iterations := 300
	if testing.Short() {
		iterations = 60
	}
	reasons := map[Reason]int{}
	outcomes := map[Outcome]int{}
	for seed := uint64(1); seed <= uint64(iterations); seed++ {
		g := newGenerator(seed, false)
		log := g.run(40 + int(seed%80))
		s := New()
		twin := New()
		for i, r := range log {
			before := s.Boundary()
			core := s.coreDigest()
			v := s.Step(r)
			outcomes[v.Outcome]++
			reasons[v.Reason]++
			if v.Offset != r.Offset || v.Key != string(r.Key) {
				t.Fatalf("seed %d: verdict %+v is not about record at %d", seed, v, r.Offset)
			}
			if last := s.verdictOf(s.audit[len(s.audit)-1]); last != v {
				t.Fatalf("seed %d offset %d: Step said %+v, Audit says %+v", seed, r.Offset, v, last)
			}
			after := s.Boundary()
			for p, b := range before {
				if a, ok := after[p]; !ok || a < b {
					t.Fatalf("seed %d offset %d: I2: partition %d boundary went from %d to %d (present %t)", seed, r.Offset, p, b, a, ok)
				}
			}
			if v.Outcome != Accepted {
				if v.Reason == "" && v.Outcome == Rejected {
					t.Fatalf("seed %d offset %d: rejection without a reason: %+v", seed, r.Offset, v)
				}
				if s.coreDigest() != core || !maps.Equal(before, after) {
					t.Fatalf("seed %d offset %d: a %s record (%s) changed boundary or operations", seed, r.Offset, v.Outcome, v.Reason)
				}
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
		checkRepairs(t, seed, s, log)
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
	t.Logf("outcomes %v; reasons %v", outcomes, reasons)
}

// checkRepairs: Repairs lists exactly the keys whose accepted record is not
// the content of their latest record; appending them is a no-op for the
// boundary and operations and clears the list.
func checkRepairs(t *testing.T, seed uint64, s *State, log []Record) {
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
	for _, o := range s.Operations() {
		for _, st := range o.History {
			key := events.Key(o.PlanID, st.Event)
			v := last[key]
			intact := v.Outcome == Accepted || v.Outcome == Duplicate
			if intact == listed[key] {
				t.Fatalf("seed %d: key %s: latest verdict %s %s, listed in Repairs %t", seed, key, v.Outcome, v.Reason, listed[key])
			}
		}
	}
	core := s.coreDigest()
	next := log[len(log)-1].Offset + 1
	for _, r := range repairs {
		r.Offset = next
		next++
		if v := s.Step(r); v.Outcome != Duplicate {
			t.Fatalf("seed %d: repair of %s: verdict %s %s: %s", seed, r.Key, v.Outcome, v.Reason, v.Detail)
		}
	}
	if len(s.Repairs()) != 0 || s.coreDigest() != core {
		t.Fatalf("seed %d: after appending the repairs, %d remain or the state changed", seed, len(s.Repairs()))
	}
}

// TestPropertyCompaction checks I5: replaying the log compacted by key gives
// the same boundary (and the same plans setting it) and the same operation
// states as the full log, for logs written with the discipline of doc.go
// (re-appends only of the latest accepted key; overwrites repaired at once).
// The transcript testdata/compaction shows what breaks without it.
func TestPropertyCompaction(t *testing.T) {
	iterations := 300
	if testing.Short() {
		iterations = 60
	}
	var dropped, duplicates, overwrites int
	for seed := uint64(1); seed <= uint64(iterations); seed++ {
		g := newGenerator(seed, true)
		log := g.run(40 + int(seed%120))
		full := fold(log)
		if n := len(full.Repairs()); n != 0 {
			t.Fatalf("seed %d: %d keys left unrepaired by the disciplined generator", seed, n)
		}
		compacted := compact(log)
		dropped += len(log) - len(compacted)
		for _, v := range full.Audit() {
			switch {
			case v.Outcome == Duplicate:
				duplicates++
			case v.Reason == ReasonOverwritesAccepted:
				overwrites++
			}
		}
		c := fold(compacted)
		if !maps.Equal(full.Boundary(), c.Boundary()) {
			t.Fatalf("seed %d: I5: boundary %v from the full log, %v from the compacted log", seed, full.Boundary(), c.Boundary())
		}
		for _, p := range full.Boundary().Partitions() {
			if full.BoundarySetBy(p) != c.BoundarySetBy(p) {
				t.Fatalf("seed %d: I5: partition %d set by %s in the full log, by %s compacted", seed, p, full.BoundarySetBy(p), c.BoundarySetBy(p))
			}
		}
		if fs, cs := opStates(full), opStates(c); !maps.Equal(fs, cs) {
			t.Fatalf("seed %d: I5: operation states differ:\nfull      %v\ncompacted %v", seed, fs, cs)
		}
	}
	if dropped == 0 || duplicates == 0 || overwrites == 0 {
		t.Fatalf("the generator did not exercise compaction: %d records dropped, %d duplicates, %d overwrites", dropped, duplicates, overwrites)
	}
	t.Logf("compaction dropped %d records; %d duplicates, %d overwrites (repaired)", dropped, duplicates, overwrites)
}
