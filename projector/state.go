package projector

import (
	"encoding/binary"
	"maps"
	"slices"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
)

// State is the projection of one control topic. It is built by folding
// records with Step, one goroutine at a time; reads return copies.
type State struct {
	next int64 // offset after the last record folded

	bound          bool
	topic, topicID string

	boundary events.Offsets  // replaced, never mutated: Operation.Boundary may share it
	setBy    map[int32]int32 // partition → index in ops of the plan that set it

	ops    []*op
	byPlan opIndex

	// audit has one compact entry per folded record. Accepted records point
	// at their step in an operation's history; the others at a full
	// Verdict in others. This keeps a million-record audit small.
	// Without KeepAudit there is no audit, and others holds only rejections.
	audited bool
	audit   []auditEntry
	others  []Verdict

	degraded       bool
	degradedReason string

	// overwritten holds the keys whose accepted record was overwritten and
	// not yet repaired.
	overwritten map[string]overwrite

	// commits lists the operations in the order their COMMITTED was
	// accepted. reorderFrom is the first index of commits whose latest copy
	// is not in that order (len(commits) when all are): a later copy of an
	// earlier COMMITTED moved past it. Repairs re-appends commits from there
	// on, so that a compacted log keeps the commits in acceptance order.
	commits     []int32
	reorderFrom int
	// risen is the index in commits of the last COMMITTED that raised the
	// boundary (CommittedSinceRise).
	risen int
	// misordered holds operations whose latest COMMITTED copy is after the
	// latest copy of their DELETING or APPLIED (Repairs re-appends those).
	misordered map[int32]bool

	// rejectedOnly holds every non-empty key under which every record so far
	// was rejected (Retractions).
	rejectedOnly map[string]retraction

	// unconfirmed holds the operations with evidence of an erased COMMITTED
	// (op.evidence) and no accepted COMMITTED: AtRisk names them.
	// maintained counts maintenance records by kind (MaintenanceCounts).
	maintained map[string]int

	unconfirmed map[int32]bool

	// conflicts holds, for every COMMITTED key rejected as a boundary
	// regression, the operations whose commits defeated it (Disputed).
	// Allocated with the first conflict.
	conflicts map[string][]int32

	// actors numbers the actor names history steps refer to: few writers,
	// many records.
	actors     map[string]uint32
	actorNames []string
	lastActor  uint32 // the actor actorIndex returned last
	// reasons holds the operator's reason of each accepted step that has
	// one (events.Envelope.Reason, apply --reason), by its offset: few
	// records carry one, so steps stay small.
	reasons map[int64]string

	decoder *events.Decoder // Step's: it checks each distinct plan once

	lean bool // within StepDecodedLean

	mirror mirrors      // the Flink Agents mirror events (mirror.go)
	pin    pins         // the pinned recovery points (pins.go)
	decl   *Declaration // the latest no-tombstones declaration (declaration.go)
	policy *Policy      // the latest retention policy (retention.go)
	clock  clock        // the broker's clock as the records show it (clock.go)
}

// op is the internal form of an Operation, kept small: a projection holds
// every operation of its control topic (B5 in docs/benchmarks.md), so it
// is 80 bytes and one allocation of data. The plan's topic and topic ID are
// the State's binding (every accepted plan has them).
type op struct {
	id planID // 32 bytes, where its text takes 80
	// data holds, in one allocation, the plan's offsets (parts entries of
	// offs), the source recovery point (its length as a uvarint, then its
	// bytes) and the history, whose steps are appended at its end.
	data  []byte
	extra *opExtra // what few operations have: nil for most
	parts int32    // partitions in the plan
	seq   int32    // index in State.commits once COMMITTED
	// boundaryIsPlan and logStartIsPlan: what its COMMITTED and APPLIED
	// said equals the plan's offsets (the usual case, which then costs
	// nothing); otherwise it is in extra.
	boundaryIsPlan bool
	logStartIsPlan bool
	accepted       uint8 // bit per event (eventBit) whose key holds an accepted record
	implied        uint8 // bit per event implied by a later transition, never accepted
	held           uint8 // bit per event whose key holds an accepted or duplicate record
	covered        bool  // its COMMITTED raised nothing
	// evidence is a bit per event (DELETING, APPLIED) whose key holds a
	// record of this plan although no COMMITTED was accepted: proof is the
	// first such record, re-encoded by Repairs when overwritten.
	evidence uint8
	stage    uint8 // index in stages: an fsm.State is a 16-byte string
}

// opExtra is the part of an operation few have, allocated with the first
// of it.
type opExtra struct {
	// boundary and logStart are what its COMMITTED and APPLIED said when
	// that is not the plan's offsets (nil before, and when it is).
	boundary events.Offsets
	logStart events.Offsets
	// copies is, per event (eventIndex), the offset of the latest duplicate
	// of its accepted record (0 for none: a duplicate follows the record).
	copies [4]int64
	// proof is allocated with the first evidence.
	proof *proof
}

// more returns the operation's extra part, allocating it.
func (o *op) more() *opExtra {
	if o.extra == nil {
		o.extra = new(opExtra)
	}
	return o.extra
}

// offs is the plan's offsets.
func (o *op) offs() offs { return offs(o.data[:partOffsetSize*int(o.parts)]) }

// srpBytes is the source recovery point, as bytes of data.
func (o *op) srpBytes() []byte {
	b := o.data[partOffsetSize*int(o.parts):]
	n, k := binary.Uvarint(b)
	return b[k : k+int(n)]
}

// srp is the source recovery point.
func (o *op) srp() string { return string(o.srpBytes()) }

// history is the accepted steps.
func (o *op) history() history {
	b := o.data[partOffsetSize*int(o.parts):]
	n, k := binary.Uvarint(b)
	return history(b[k+int(n):])
}

// latest is, per event (eventIndex), the offset of the latest record under
// its key with the accepted content: where compaction keeps it (0 for an
// event never accepted).
func (o *op) latest() [4]int64 {
	out := o.history().latest()
	if o.extra != nil {
		for i, c := range o.extra.copies {
			out[i] = max(out[i], c)
		}
	}
	return out
}

// deletes counts the accepted DELETING records.
func (o *op) deletes() int { return o.history().count(events.Deleting) }

// stages are the states an operation can be in, as op.stage numbers them:
// fsm's, in lifecycle order (None first).
var stages = fsm.States()

func (o *op) state() fsm.State { return stages[o.stage] }

// setState records a state fsm.Next returned: always one of stages.
func (o *op) setState(st fsm.State) {
	for i, s := range stages {
		if s == st {
			o.stage = uint8(i)
			return
		}
	}
}

// proof is an operation's evidence of an erased COMMITTED.
type proof struct {
	steps    [4]Step
	logStart events.Offsets
}

// boundaryOffsets is what its COMMITTED said (nil before); a new map when
// it equals the plan.
func (o *op) boundaryOffsets() events.Offsets {
	if o.boundaryIsPlan {
		return o.offs().offsets()
	}
	if o.extra == nil {
		return nil
	}
	return o.extra.boundary
}

// logStartOffsets is what its APPLIED said (nil before); a new map when it
// equals the plan.
func (o *op) logStartOffsets() events.Offsets {
	if o.logStartIsPlan {
		return o.offs().offsets()
	}
	if o.extra == nil {
		return nil
	}
	return o.extra.logStart
}

// sameBoundary and sameLogStart compare without building a map.
func (o *op) sameBoundary(m events.Offsets) bool {
	if o.boundaryIsPlan {
		return o.offs().equal(m)
	}
	return o.boundaryOffsets().Equal(m)
}

func (o *op) sameLogStart(m events.Offsets) bool {
	if o.logStartIsPlan {
		return o.offs().equal(m)
	}
	return o.logStartOffsets().Equal(m)
}

// plan is the operation's plan in its exported form (a new map).
func (s *State) plan(o *op) events.Plan {
	return events.Plan{PlanID: o.id.String(), SourceRecoveryPoint: o.srp(), Topic: s.topic, TopicID: s.topicID, Offsets: o.offs().offsets()}
}

// samePlan reports whether p is the operation's plan.
func (s *State) samePlan(o *op, p events.Plan) bool {
	return o.id.is(p.PlanID) && string(o.srpBytes()) == p.SourceRecoveryPoint && s.topic == p.Topic && s.topicID == p.TopicID && o.offs().equal(p.Offsets)
}

// auditEntry is one folded record. op ≥ 0: accepted, idx indexes the
// operation's history; op < 0: idx indexes State.others.
type auditEntry struct {
	offset int64
	op     int32
	idx    int32
}

// retraction is the latest record of a key whose every record was rejected.
type retraction struct {
	offset    int64
	timestamp time.Time
}

// overwrite remembers an accepted key (or, with evidence, a key holding
// evidence of an erased COMMITTED) that a later record overwrote.
type overwrite struct {
	op       int32
	event    events.Event
	at       int64 // offset of the first overwriting record
	evidence bool
	// retracted: one of the overwriting records is a worker's retraction
	// tombstone: another view rejected every record under the key.
	retracted bool
}

// New returns the empty projection: nothing folded, no binding, no boundary.
//
// It keeps what workers, the recovery gate and status need: the binding, the
// boundary, every operation, every rejected record and what repairs need.
// The verdict of every record, Audit, is kept only with KeepAudit.
func New(opts ...Option) *State {
	s := &State{
		boundary:     events.Offsets{},
		setBy:        map[int32]int32{},
		byPlan:       newOpIndex(),
		overwritten:  map[string]overwrite{},
		misordered:   map[int32]bool{},
		rejectedOnly: map[string]retraction{},
		unconfirmed:  map[int32]bool{},
		actors:       map[string]uint32{},
		mirror:       mirrors{held: map[string]mirrorRecord{}, overwritten: map[string]int64{}},
		pin:          pins{byID: map[string]int{}, held: map[string]int64{}, overwritten: map[string]int64{}, rejectedKeys: map[string]bool{}},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Option configures New.
type Option func(*State)

// KeepAudit makes the State keep a verdict for every record folded (Audit),
// for those who show the log record by record (kcleanup history). It costs
// 16 bytes a record, and a full Verdict for every duplicate; a worker or a
// recovery gate does not need it.
func KeepAudit() Option { return func(s *State) { s.audited = true } }

// lifecycle is the known events in lifecycle order (fsm's).
var lifecycle = fsm.Events()

// eventIndex is the position of a known event in lifecycle, -1 otherwise.
func eventIndex(e events.Event) int {
	for i, l := range lifecycle {
		if l == e {
			return i
		}
	}
	return -1
}

// eventBit maps the four known events to a bit of op.accepted (and
// op.implied, op.held); 0 for any other event.
func eventBit(e events.Event) uint8 {
	if i := eventIndex(e); i >= 0 {
		return 1 << i
	}
	return 0
}

// Binding returns the data topic (name and topic ID) this control topic
// governs; ok is false until the first PLANNED is accepted.
func (s *State) Binding() (topic, topicID string, ok bool) {
	return s.topic, s.topicID, s.bound
}

// Next returns the offset after the last record folded: where the reader
// resumes. Zero before any record.
func (s *State) Next() int64 {
	return s.next
}

// Degraded reports whether a record from a newer kcleanup was seen, and which
// (offset and why). It is sticky: only an upgraded build replaying the log
// clears it. A degraded projection must not approve recovery points
// (the recovery gate cannot tell) and workers must not delete.
func (s *State) Degraded() (bool, string) {
	return s.degraded, s.degradedReason
}

// Operation returns the operation of a plan, if its PLANNED was accepted.
func (s *State) Operation(planID string) (Operation, bool) {
	i, ok := s.lookup(planID)
	if !ok {
		return Operation{}, false
	}
	return s.export(s.ops[i]), true
}

// Operations returns every operation in the order their PLANNED was accepted.
func (s *State) Operations() []Operation {
	out := make([]Operation, len(s.ops))
	for i, o := range s.ops {
		out[i] = s.export(o)
	}
	return out
}

// Pending returns the operations a worker must finish (COMMITTED or
// DELETING), oldest commit first.
func (s *State) Pending() []Operation {
	var pending []*op
	for _, o := range s.ops {
		if o.state() == fsm.Committed || o.state() == fsm.Deleting {
			pending = append(pending, o)
		}
	}
	slices.SortFunc(pending, func(a, b *op) int {
		return compareInt64(a.acceptedOffset(events.Committed), b.acceptedOffset(events.Committed))
	})
	out := make([]Operation, len(pending))
	for i, o := range pending {
		out[i] = s.export(o)
	}
	return out
}

// Audit returns a verdict for every record folded, in log order, if the State
// was made with KeepAudit; otherwise nil.
func (s *State) Audit() []Verdict {
	if !s.audited {
		return nil
	}
	out := make([]Verdict, len(s.audit))
	for i, e := range s.audit {
		out[i] = s.verdictOf(e)
	}
	return out
}

// Rejected returns the verdicts of rejected records, in log order, except
// the fleet's maintenance (see MaintenanceRecords): what other writers got
// wrong.
func (s *State) Rejected() []Verdict {
	var out []Verdict
	for _, v := range s.others {
		if v.Outcome == Rejected && v.Maintenance == nil {
			out = append(out, v)
		}
	}
	return out
}

// MaintenanceCounts counts the records workers wrote to keep the log safe to
// compact (Verdict.Maintenance), by kind, duplicates included.
func (s *State) MaintenanceCounts() map[string]int {
	return maps.Clone(s.maintained)
}

// MaintenanceRecords returns the verdicts of the records workers wrote to
// keep the log safe to compact (Verdict.Maintenance), in log order: the
// rejected ones (retraction tombstones, re-appended evidence), and the
// duplicates too when the State keeps its audit (KeepAudit).
func (s *State) MaintenanceRecords() []Verdict {
	var out []Verdict
	for _, v := range s.others {
		if v.Maintenance != nil {
			out = append(out, v)
		}
	}
	return out
}

// verdictOf rebuilds the verdict of one audit entry.
func (s *State) verdictOf(e auditEntry) Verdict {
	if e.op < 0 {
		return s.others[e.idx]
	}
	o := s.ops[e.op]
	st := s.exportStep(o.history().at(int(e.idx)))
	return Verdict{
		Offset:  e.offset,
		Key:     events.Key(o.id.String(), st.Event),
		Event:   st.Event,
		PlanID:  o.id.String(),
		Outcome: Accepted,
		Detail:  s.describe(o, int(e.idx)),
		At:      st.At,
		Actor:   st.Actor,
		Covered: st.Event == events.Committed && o.covered,
		// OperatorReason is the record's own: the step's is the first accepted.
		OperatorReason: st.Reason,
	}
}

func (s *State) export(o *op) Operation {
	return Operation{
		PlanID:         o.id.String(),
		Plan:           s.plan(o),
		State:          o.state(),
		History:        s.exportSteps(o),
		Boundary:       o.boundaryOffsets().Clone(),
		LogStart:       o.logStartOffsets().Clone(),
		DeleteAttempts: o.deletes(),
		Implied:        o.impliedEvents(),
		Covered:        o.covered,
		Evidence:       o.evidenceEvents(),
	}
}

func (o *op) evidenceEvents() []events.Event {
	var out []events.Event
	for _, e := range lifecycle {
		if o.evidence&eventBit(e) != 0 {
			out = append(out, e)
		}
	}
	return out
}

func (o *op) impliedEvents() []events.Event {
	var out []events.Event
	for _, e := range lifecycle {
		if o.implied&eventBit(e) != 0 {
			out = append(out, e)
		}
	}
	return out
}

// firstStep returns the first accepted step of event e.
func (o *op) firstStep(e events.Event) (step, bool) {
	for _, st := range o.history().all() {
		if st.event() == e {
			return st, true
		}
	}
	return step{}, false
}

// newStep is the step of an accepted record.
func (s *State) newStep(offset int64, e events.Event, at time.Time, actor string) step {
	return step{offset: offset, sec: at.Unix(), nsec: int32(at.Nanosecond()), ev: uint8(eventIndex(e)), actor: s.actorIndex(actor)}
}

// exportStep is the exported form of a step.
func (s *State) exportStep(st step) Step {
	return Step{Offset: st.offset, Event: st.event(), At: st.at(), Actor: s.actorNames[st.actor], Reason: s.reasons[st.offset]}
}

// exportSteps is the history in its exported form.
func (s *State) exportSteps(o *op) []Step {
	h := o.history()
	_, n := h.lastAndLen()
	out := make([]Step, 0, n)
	for _, st := range h.all() {
		out = append(out, s.exportStep(st))
	}
	return out
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// actorIndex numbers an actor name.
func (s *State) actorIndex(actor string) uint32 {
	// A writer writes records in a row: the last actor first, without
	// hashing (a Decoder hands over the same string, so this compares
	// pointers).
	if int(s.lastActor) < len(s.actorNames) && s.actorNames[s.lastActor] == actor {
		return s.lastActor
	}
	i, ok := s.actors[actor]
	if !ok {
		i = uint32(len(s.actorNames))
		s.actors[actor] = i
		s.actorNames = append(s.actorNames, actor)
	}
	s.lastActor = i
	return i
}

// intern returns one shared copy of an actor name.
func (s *State) intern(actor string) string {
	return s.actorNames[s.actorIndex(actor)]
}

// verdictAt is the time a verdict reports: the envelope's, else the record's.
func verdictAt(env *events.Envelope, r Record) time.Time {
	if env != nil && !env.At.IsZero() {
		return env.At
	}
	return r.Timestamp
}

// OperationCounts counts the operations in each state.
func (s *State) OperationCounts() map[fsm.State]int {
	n := map[fsm.State]int{}
	for _, o := range s.ops {
		n[o.state()]++
	}
	return n
}

// Unfinished returns every operation that is not APPLIED and, of the APPLIED
// ones, the most recent (the last PLANNED), at most recent of them, in the
// order their PLANNED was accepted: what a status view that stays readable
// after years of history shows. Operations returns them all.
func (s *State) Unfinished(recent int) []Operation {
	var keep []*op
	for i, o := range s.ops {
		if o.state() != fsm.Applied || i >= len(s.ops)-recent {
			keep = append(keep, o)
		}
	}
	out := make([]Operation, len(keep))
	for i, o := range keep {
		out[i] = s.export(o)
	}
	return out
}

// RejectedCounts counts the rejected records by reason (the fleet's
// maintenance left out, as in Rejected).
func (s *State) RejectedCounts() map[Reason]int {
	n := map[Reason]int{}
	for _, v := range s.others {
		if v.Outcome == Rejected && v.Maintenance == nil {
			n[v.Reason]++
		}
	}
	return n
}

// RecentRejected returns the verdicts of the last n rejected records, in log
// order (the fleet's maintenance left out, as in Rejected).
func (s *State) RecentRejected(n int) []Verdict {
	var out []Verdict
	for i := len(s.others) - 1; i >= 0 && len(out) < n; i-- {
		if v := s.others[i]; v.Outcome == Rejected && v.Maintenance == nil {
			out = append(out, v)
		}
	}
	slices.Reverse(out)
	return out
}
