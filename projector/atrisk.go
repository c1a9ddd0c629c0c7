package projector

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
)

// AtRisk reports whether the projection holds evidence that accepted history
// is missing from the control topic, or may be erased by the log cleaner,
// and says so in a sentence an operator can act on. The recovery gate treats
// true as "cannot tell" (contract C3): a boundary read from such a log may
// be lower than the one that was committed.
//
// It is true while
//   - a key whose record was accepted (or that holds evidence, below) holds
//     a later record with other content, an overwrite or a tombstone, that
//     no repair has re-appended over yet: once the cleaner runs, the
//     accepted record is gone;
//   - a DELETING or APPLIED of a plan survives without its COMMITTED
//     (Operation.Evidence): a worker writes those only after reading its
//     COMMITTED back, so the COMMITTED was accepted and then erased.
//
// (A COMMITTED that defeated a conflicting commit and was then retracted by
// a worker is such an overwrite too, one that is not repaired: the conflict
// is disputed, see conflicts.go.)
//
// AtRisk is pure and cheap: it reads what the fold already keeps.
func (s *State) AtRisk() (bool, string) {
	var risks []string
	for _, k := range slices.Sorted(maps.Keys(s.overwritten)) {
		w := s.overwritten[k]
		o := s.ops[w.op]
		if w.evidence {
			risks = append(risks, fmt.Sprintf(
				"key %s holds the evidence (offset %d) that plan %s's COMMITTED was accepted and erased, and was overwritten at offset %d: if the log cleaner runs before a worker re-appends it, the boundary read from this control topic falls below the plan %s",
				k, o.proofStep(eventIndex(w.event)).Offset, o.id.String(), w.at, o.offs().offsets()))
			continue
		}
		if w.event == events.Committed && s.disputed(w.op) {
			risks = append(risks, fmt.Sprintf(
				"key %s holds the COMMITTED accepted at offset %d, which defeated %s, and a worker's retraction tombstone at offset %d says another reader judged that conflict the other way: the log cleaner may have removed an earlier copy of the other commit, so this reader cannot tell which the full log accepted first; it repairs neither and deletes nothing (read the control topic afresh, e.g. restart the worker, once the cleaner has removed the retracted record)",
				k, o.acceptedOffset(w.event), strings.Join(s.disputedBy(w.op), ", "), w.at))
			continue
		}
		risks = append(risks, fmt.Sprintf(
			"key %s holds the record accepted at offset %d, overwritten at offset %d and not repaired yet: if the log cleaner runs first, that accepted record is erased (a running worker re-appends it; check that one owns the control topic)",
			k, o.acceptedOffset(w.event), w.at))
	}
	for _, oi := range slices.Sorted(maps.Keys(s.unconfirmed)) {
		o := s.ops[oi]
		e, off := o.firstEvidence()
		risks = append(risks, fmt.Sprintf(
			"plan %s has a %s at offset %d but no COMMITTED: workers write it only after reading the COMMITTED back, so that COMMITTED was accepted and then erased (overwritten, then compacted); the boundary keeps the plan %s and nothing is deleted for it; a worker re-appends the COMMITTED once the data topic's log start is at or above the plan on every partition (nothing left to delete), otherwise check the plan and re-apply it with kcleanup apply",
			o.id.String(), e, off, o.offs().offsets()))
	}
	risks = append(risks, s.mirrorAtRisk()...)
	risks = append(risks, s.pinAtRisk()...)
	switch len(risks) {
	case 0:
		return false, ""
	case 1:
		return true, risks[0]
	}
	return true, fmt.Sprintf("%s (and %d more)", risks[0], len(risks)-1)
}

// Unconfirmed returns the operations whose DELETING or APPLIED survives
// without their COMMITTED (Operation.Evidence), in the order the fold first
// saw them. A worker may append a COMMITTED for one only where nothing more
// would be deleted: every log start of the live topic (same topic ID) at or
// above the plan.
func (s *State) Unconfirmed() []Operation {
	out := make([]Operation, 0, len(s.unconfirmed))
	for _, oi := range slices.Sorted(maps.Keys(s.unconfirmed)) {
		out = append(out, s.export(s.ops[oi]))
	}
	return out
}

// evidenceOf judges a DELETING or APPLIED for a plan with no accepted
// COMMITTED (PLANNED, or not even that). A kcleanup worker writes one only
// after reading its COMMITTED back, so it is evidence that the COMMITTED
// was accepted and erased (the log cleaner ran over an overwrite before a
// repair). It is rejected, so it moves no operation (a forged DELETING must
// never cause a deletion), but while it is unconfirmed the boundary readers
// see (Boundary, and so the recovery gate) stays at or above its plan, as the erased
// COMMITTED made it. The commit rules do not see it (see Boundary).
func (s *State) evidenceOf(v Verdict, env events.Envelope, oi int32, o *op) (Verdict, change) {
	if o == nil {
		if v, wrong := s.wrongTopic(v, env.Plan); wrong {
			return v, change{}
		}
		oi = -1
	}
	before := s.Boundary()
	after := nextBoundary(before, env.Plan.Offsets)
	what := "the boundary already covers the plan"
	if !after.Equal(before) {
		what = "the boundary now includes the plan: " + after.String()
	}
	return reject(v, ReasonCommitMissing, fmt.Sprintf(
		"%s for plan %s, which has no COMMITTED in the log: a worker writes it only after reading the COMMITTED back, so that COMMITTED was accepted and erased; kept as evidence (%s); nothing is deleted for the plan until a COMMITTED is read back",
		env.Event, env.PlanID, what)), change{env: env, op: oi, evidence: true}
}

// applyEvidence performs what a ReasonCommitMissing record changes: the
// operation (created PLANNED if the log holds nothing else of it, binding
// the control topic like the COMMITTED it proves) records the evidence and
// is unconfirmed, so Boundary includes its plan. The lifecycle state does
// not move.
func (s *State) applyEvidence(offset int64, c change) {
	env := c.env
	oi := c.op
	if oi < 0 {
		oi = s.newOp(env.Plan)
		o := s.ops[oi]
		o.setState(fsm.Planned)
		o.implied |= eventBit(events.Planned)
	}
	o := s.ops[oi]
	bit, i := eventBit(env.Event), eventIndex(env.Event)
	if o.evidence&bit == 0 {
		o.evidence |= bit
		x := o.more()
		if x.proof == nil {
			x.proof = new(proof)
		}
		x.proof.steps[i] = Step{Offset: offset, Event: env.Event, At: env.At, Actor: s.intern(env.Actor)}
		if env.Event == events.Applied {
			x.proof.logStart = env.LogStart
		}
	}
	key := events.Key(o.id.String(), env.Event)
	if w, ok := s.overwritten[key]; ok && w.evidence {
		delete(s.overwritten, key) // a repair re-appended the evidence
	}
	s.unconfirmed[oi] = true
}

// confirm forgets the evidence of an operation whose COMMITTED was accepted:
// the log holds its COMMITTED again, and the committed boundary is at or
// above its plan (an accepted commit's field is), so Boundary does not fall.
func (s *State) confirm(oi int32) {
	o := s.ops[oi]
	if o.evidence == 0 {
		return
	}
	for _, e := range []events.Event{events.Deleting, events.Applied} {
		key := events.Key(o.id.String(), e)
		if w, ok := s.overwritten[key]; ok && w.evidence {
			delete(s.overwritten, key)
		}
	}
	o.evidence = 0
	if o.extra != nil {
		o.extra.proof = nil
	}
	delete(s.unconfirmed, oi)
}

// sameEvidence reports whether env says what the evidence under its key
// said: the same plan, and for APPLIED the same log start.
func (s *State) sameEvidence(o *op, env *events.Envelope) bool {
	if !s.samePlan(o, env.Plan) || !o.id.is(env.PlanID) {
		return false
	}
	return env.Event != events.Applied || env.LogStart.Equal(o.proofLogStart())
}

// firstEvidence is the earliest evidence record of the operation.
func (o *op) firstEvidence() (events.Event, int64) {
	var e events.Event
	off := int64(-1)
	for _, ev := range []events.Event{events.Deleting, events.Applied} {
		if st := o.proofStep(eventIndex(ev)); o.evidence&eventBit(ev) != 0 && (off < 0 || st.Offset < off) {
			e, off = ev, st.Offset
		}
	}
	return e, off
}

// reencodeEvidence rebuilds the evidence record of event e of operation oi,
// for Repairs.
func (s *State) reencodeEvidence(oi int32, e events.Event) (Record, bool) {
	o := s.ops[oi]
	if o.evidence&eventBit(e) == 0 {
		return Record{}, false
	}
	st := o.proofStep(eventIndex(e))
	env := events.Envelope{
		SchemaVersion: events.SchemaVersion,
		Event:         e,
		PlanID:        o.id.String(),
		Plan:          s.plan(o),
		At:            st.At,
		Actor:         st.Actor,
	}
	if e == events.Applied {
		env.LogStart = o.proofLogStart().Clone()
	}
	key, value := env.Encode()
	return Record{Offset: st.Offset, Key: key, Value: value, Timestamp: st.At}, true
}

// Boundary returns a copy of the boundary recovery must enforce: per
// partition, the highest plan offset ever committed, read from the accepted
// COMMITTED records and from the plans of unconfirmed operations (whose
// COMMITTED was erased: see Operation.Evidence). Empty before the first
// commit.
//
// The commit rules compare a COMMITTED with the committed part alone, so
// that a commit is judged the same wherever compaction moves evidence; a
// writer computes its boundary field from Boundary, so a commit it makes
// carries the evidence into the committed part.
func (s *State) Boundary() events.Offsets {
	b := s.boundary.Clone()
	if b == nil {
		b = events.Offsets{}
	}
	for oi := range s.unconfirmed {
		for po := range s.ops[oi].offs().all() {
			p, off := po.p, po.off
			if cur, ok := b[p]; !ok || off > cur {
				b[p] = off
			}
		}
	}
	return b
}

// CommittedBoundary returns a copy of the part of Boundary that accepted
// COMMITTED records hold up, without the plans of unconfirmed operations:
// what the log proves was committed. The recovery gate refuses below it
// (proved), and cannot tell between it and Boundary (only evidence of a
// commit that is no longer in the log holds that part up).
func (s *State) CommittedBoundary() events.Offsets {
	b := s.boundary.Clone()
	if b == nil {
		b = events.Offsets{}
	}
	return b
}

// CommittedBoundarySetBy returns the plan ID of the accepted commit that set
// partition p's CommittedBoundary, or "" when it has none.
func (s *State) CommittedBoundarySetBy(p int32) string {
	if _, ok := s.boundary[p]; !ok {
		return ""
	}
	if by, ok := s.setBy[p]; ok {
		return s.ops[by].id.String()
	}
	return ""
}

// Evidence returns, for an unconfirmed operation (Unconfirmed), its earliest
// evidence record: the event (DELETING or APPLIED) and its offset.
func (s *State) Evidence(planID string) (events.Event, int64, bool) {
	for oi := range s.unconfirmed {
		if o := s.ops[oi]; o.id.is(planID) {
			e, off := o.firstEvidence()
			return e, off, true
		}
	}
	return "", 0, false
}

// BoundarySetBy returns the plan ID of the commit that set partition p's
// boundary, or "" when p has none: the plan whose own offset is the boundary
// when one was committed, else the commit whose boundary field raised it;
// an unconfirmed operation whose plan is above the committed boundary names
// itself (the earliest such, when several have the same offset). In a
// compacted replay it may name another plan of the same offset.
func (s *State) BoundarySetBy(p int32) string {
	top, ok := s.boundary[p]
	first := int32(-1)
	for oi := range s.unconfirmed {
		off, has := s.ops[oi].offs().get(p)
		if !has || ok && off <= top {
			continue
		}
		firstOff, _ := s.ops[max(first, 0)].offs().get(p)
		if first < 0 || off > firstOff || off == firstOff && oi < first {
			first = oi
		}
	}
	if first >= 0 {
		return s.ops[first].id.String()
	}
	if by, ok := s.setBy[p]; ok {
		return s.ops[by].id.String()
	}
	return ""
}

// CommittedSinceRise returns the operations whose COMMITTED was accepted
// since the committed boundary last rose, in the order of Operations (their
// PLANNED's): the commit that raised it (the one BoundarySetBy names for the partitions
// it raised) and the covered commits after it. Every accepted commit leaves
// the boundary at or above its plan and the boundary never falls, so a plan
// equal to the boundary is among them (protocol.BoundaryPlan): no walk over
// every operation.
func (s *State) CommittedSinceRise() []Operation {
	if len(s.commits) == 0 {
		return nil
	}
	ois := slices.Clone(s.commits[s.risen:])
	slices.Sort(ois)
	out := make([]Operation, 0, len(ois))
	for _, oi := range ois {
		out = append(out, s.export(s.ops[oi]))
	}
	return out
}

// holdsEvidence reports whether key is the DELETING or APPLIED key of an
// unconfirmed operation that holds evidence under it.
func (s *State) holdsEvidence(key string) bool {
	if len(s.unconfirmed) == 0 {
		return false
	}
	planID, e := keyParts([]byte(key))
	oi, ok := s.lookup(planID)
	return ok && s.unconfirmed[oi] && s.ops[oi].evidence&eventBit(e) != 0
}

// proofStep is the proof of event index i (zero without evidence).
func (o *op) proofStep(i int) Step {
	if o.extra == nil || o.extra.proof == nil || i < 0 {
		return Step{}
	}
	return o.extra.proof.steps[i]
}

// proofSteps is every proof step (zero without evidence).
func (o *op) proofSteps() [4]Step {
	if o.extra == nil || o.extra.proof == nil {
		return [4]Step{}
	}
	return o.extra.proof.steps
}

// proofLogStart is the log start of the APPLIED kept as evidence (nil
// without).
func (o *op) proofLogStart() events.Offsets {
	if o.extra == nil || o.extra.proof == nil {
		return nil
	}
	return o.extra.proof.logStart
}
