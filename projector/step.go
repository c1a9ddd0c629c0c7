package projector

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
)

// Step folds one control-topic record into the state and returns the
// verdict. It never performs I/O, reads no clock and never panics.
//
// Records must come in increasing offset order (gaps are normal: compaction
// leaves them). A record at or below an offset already folded is answered
// with a ReasonOutOfOrder rejection and otherwise ignored: it is not
// recorded, so the state stays a function of the log alone, whatever the
// reader re-delivers.
func (s *State) Step(r Record) Verdict {
	if r.Offset < s.next {
		return s.outOfOrder(r)
	}
	if s.decoder == nil {
		s.decoder = events.NewDecoder()
	}
	env, err := s.decoder.Decode(r.Key, r.Value)
	return s.fold(r, env, err)
}

// Decoded is a record with events.Decode already applied. Decoding is pure
// and most of a fold's cost, so a reader may decode on other goroutines,
// ahead of the fold, and hand the results to StepDecoded in offset order.
type Decoded struct {
	Record
	Envelope events.Envelope
	Err      error
}

// Decode decodes a record for StepDecoded. It is safe for concurrent use.
func Decode(r Record) Decoded {
	env, err := events.Decode(r.Key, r.Value)
	return Decoded{Record: r, Envelope: env, Err: err}
}

// DecodeWith is Decode with an events.Decoder, which checks each distinct
// plan once (every record of an operation carries the same plan). A
// Decoder serves one goroutine: give each decoding goroutine its own.
func DecodeWith(d *events.Decoder, r Record) Decoded {
	env, err := d.Decode(r.Key, r.Value)
	return Decoded{Record: r, Envelope: env, Err: err}
}

// StepDecoded is Step for a record decoded by Decode: the same verdict, the
// same state. The State keeps the envelope's boundary and logStart maps as
// they are: they must not be modified afterwards.
func (s *State) StepDecoded(d Decoded) Verdict {
	if d.Offset < s.next {
		return s.outOfOrder(d.Record)
	}
	return s.fold(d.Record, d.Envelope, d.Err)
}

// StepDecodedLean is StepDecoded for a reader that keeps no verdicts: the
// same state, and the same verdict except that an accepted record's has no
// Key and no Detail (building them costs as much as the rest of the fold;
// Audit and Operations still say them). Rejected and duplicate verdicts are
// StepDecoded's.
func (s *State) StepDecodedLean(d Decoded) Verdict {
	if d.Offset < s.next {
		return s.outOfOrder(d.Record)
	}
	s.lean = true
	defer func() { s.lean = false }()
	return s.fold(d.Record, d.Envelope, d.Err)
}

func (s *State) outOfOrder(r Record) Verdict {
	detail := fmt.Sprintf("offset %d is at or below offset %d, already folded; ignored", r.Offset, s.next-1)
	if r.Offset < 0 {
		detail = fmt.Sprintf("offset %d is negative: Kafka offsets start at 0; ignored", r.Offset)
	}
	v := Verdict{Offset: r.Offset, Key: string(r.Key), Outcome: Rejected, Reason: ReasonOutOfOrder, At: r.Timestamp, Detail: detail}
	v.PlanID, v.Event = keyParts(r.Key)
	return v
}

// fold is Step after decoding: Decode's result is passed in so that the
// benchmark can tell the fold's cost from the decoder's.
func (s *State) fold(r Record, env events.Envelope, decodeErr error) Verdict {
	s.observeClock(r, env, decodeErr)
	if events.IsMirrorKey(r.Key) {
		return s.foldMirror(r, env, decodeErr)
	}
	if events.IsPinKey(r.Key) {
		return s.foldPin(r, env, decodeErr)
	}
	if events.IsDeclarationKey(r.Key) {
		return s.foldDeclaration(r, env, decodeErr)
	}
	if events.IsRetentionKey(r.Key) {
		return s.foldRetention(r, env, decodeErr)
	}
	s.next = r.Offset + 1
	v, step := s.decide(r, env, decodeErr)
	oi := int32(-1)
	if v.Outcome == Accepted {
		e := s.apply(r.Offset, step)
		if s.audited {
			s.audit = append(s.audit, e)
		}
		if s.lean {
			o := s.ops[e.op]
			v = Verdict{Offset: r.Offset, Event: step.env.Event, PlanID: step.env.PlanID, Outcome: Accepted,
				At: step.env.At, Actor: s.intern(step.env.Actor), Covered: step.env.Event == events.Committed && o.covered,
				OperatorReason: step.env.Reason}
		} else {
			v = s.verdictOf(e)
		}
		oi = e.op
	} else {
		if len(r.Headers) > 0 {
			if v.Maintenance = maintenance(r, v); v.Maintenance != nil {
				if s.maintained == nil {
					s.maintained = map[string]int{}
				}
				s.maintained[v.Maintenance.Kind]++
			}
		}
		if s.audited || v.Outcome == Rejected {
			if s.audited {
				s.audit = append(s.audit, auditEntry{offset: r.Offset, op: -1, idx: int32(len(s.others))})
			}
			s.others = append(s.others, v)
		}
		if step.evidence {
			s.applyEvidence(r.Offset, step)
		}
	}
	s.track(r, v, oi)
	if v.Outcome == Duplicate && v.Event == events.Committed && len(s.pin.list) > 0 {
		s.commitCopied(v.PlanID, r.Offset, v.At)
	}
	return v
}

// change is an accepted record's effect, computed by decide and applied by
// apply, so that a rejection provably changes nothing.
type change struct {
	env      events.Envelope
	op       int32 // -1 for a new operation (PLANNED, or COMMITTED implying it)
	to       fsm.State
	implied  uint8          // events this record implies (eventBit)
	boundary events.Offsets // COMMITTED: the new boundary
	covered  bool           // COMMITTED: raised nothing
	// evidence: a DELETING or APPLIED rejected as ReasonCommitMissing, kept
	// as evidence (applyEvidence); boundary as for a COMMITTED.
	evidence bool
}

// decide judges a record against the current state. An accepted record's
// effect is returned for apply; decide itself changes only what a record
// that is not accepted may change (Degraded, Repairs).
func (s *State) decide(r Record, env events.Envelope, err error) (Verdict, change) {
	// The key's text is made only for a verdict that is not a plain
	// acceptance (one allocation a record, and StepDecodedLean's accepted
	// verdicts have no Key).
	v := Verdict{Offset: r.Offset, At: r.Timestamp}
	if err == nil && r.Value != nil {
		v.PlanID, v.Event = env.PlanID, env.Event // Decode checked them against the key
	} else {
		v.Key = string(r.Key)
		v.PlanID, v.Event = keyParts(r.Key)
	}
	// The operation and whether this key already holds an accepted record
	// come from the key alone, so even an undecodable value or a tombstone
	// on an accepted key is caught as an overwrite.
	id, isID := parsePlanID(v.PlanID)
	oi, known := s.byPlan.find(s.ops, id)
	known = known && isID
	var o *op
	if known {
		o = s.ops[oi]
	}
	acceptedKey := o != nil && o.accepted&eventBit(v.Event) != 0
	// A key holding evidence of an erased COMMITTED is protected like an
	// accepted one: erasing it too would let the boundary fall.
	evidenceKey := o != nil && o.evidence&eventBit(v.Event) != 0

	if r.Value == nil {
		if acceptedKey || evidenceKey {
			v = s.overwrite(v, oi, "a tombstone")
			if isRetraction(r) {
				s.markRetracted(v.Key)
			}
			return v, change{}
		}
		return reject(v, ReasonTombstone, "a tombstone (nil value) is never a valid control record"), change{}
	}

	if err != nil {
		reason := decodeReason(err)
		if reason == ReasonNewerSchema || reason == ReasonUnknownEvent {
			s.degrade(r.Offset, v.Key, err)
		}
		if acceptedKey || evidenceKey {
			if reason == ReasonNewerSchema || reason == ReasonUnknownEvent {
				// Degraded is the louder flag; the key still needs repair.
				s.markOverwritten(v.Key, oi, v.Event, r.Offset, !acceptedKey)
				return reject(v, reason, fmt.Sprintf("%v; it also overwrites the record accepted under this key", err)), change{}
			}
			return s.overwrite(v, oi, fmt.Sprintf("an undecodable value (%v)", err)), change{}
		}
		return reject(v, reason, err.Error()), change{}
	}
	v.At, v.Actor, v.Event, v.PlanID = verdictAt(&env, r), env.Actor, env.Event, env.PlanID
	v.OperatorReason = env.Reason
	if !isID {
		// Decode never returns one; a Decoded built by hand may.
		return reject(v, ReasonMalformed, fmt.Sprintf("planId %q is not 64 lowercase hex digits", env.PlanID)), change{}
	}

	if evidenceKey || acceptedKey {
		v.Key = string(r.Key)
	}
	if evidenceKey && !s.sameEvidence(o, &env) {
		return s.overwrite(v, oi, "other content (plan or logStart differ)"), change{}
	}

	if acceptedKey {
		if !s.sameContent(o, &env) {
			return s.overwrite(v, oi, "other content ("+contentDiff(o, &env)+")"), change{}
		}
		repairs, wasOverwritten := s.overwritten[v.Key]
		delete(s.overwritten, v.Key)
		if env.Event == events.Deleting && o.state() == fsm.Deleting && !s.hasStep(o, &env) {
			// A worker retrying DeleteRecords announces the attempt again.
			// The same at and actor as an accepted attempt is that attempt
			// re-appended (a repair, a producer retry), not a new one.
			return Verdict{Outcome: Accepted}, change{env: env, op: oi, to: fsm.Deleting}
		}
		v.Outcome = Duplicate
		v.Detail = fmt.Sprintf("same content as the record accepted at offset %d; no change", o.acceptedOffset(env.Event))
		if wasOverwritten {
			v.Detail += fmt.Sprintf("; repairs the key, overwritten at offset %d", repairs.at)
		}
		return v, change{}
	}

	var c change
	switch env.Event {
	case events.Planned:
		v, c = s.decidePlanned(v, env, o)
	case events.Committed:
		v, c = s.decideCommitted(v, env, oi, o)
	case events.Deleting:
		v, c = s.decideDeleting(v, env, oi, o)
	case events.Applied:
		v, c = s.decideApplied(v, env, oi, o)
	default:
		// Decode returns only the four events; anything else is a newer build's.
		v.Key = string(r.Key)
		s.degrade(r.Offset, v.Key, errors.Newf("event %q", env.Event))
		return reject(v, ReasonUnknownEvent, fmt.Sprintf("event %q is unknown to this build", env.Event)), change{}
	}
	if v.Outcome != Accepted {
		v.Key = string(r.Key)
	}
	return v, c
}

// wrongTopic rejects a plan for another data topic than the binding's; the
// first accepted PLANNED or COMMITTED sets the binding.
func (s *State) wrongTopic(v Verdict, p events.Plan) (Verdict, bool) {
	if s.bound && (p.Topic != s.topic || p.TopicID != s.topicID) {
		return reject(v, ReasonWrongTopic, fmt.Sprintf(
			"the plan is for topic %s (ID %s) but this control topic governs %s (ID %s)",
			p.Topic, p.TopicID, s.topic, s.topicID)), true
	}
	return v, false
}

func (s *State) decidePlanned(v Verdict, env events.Envelope, o *op) (Verdict, change) {
	if o != nil {
		// The operation exists but its PLANNED key holds no accepted record:
		// a COMMITTED came first and implied it (in a compacted log, a later
		// copy of PLANNED lands after its COMMITTED). The plan is the same:
		// the plan ID is the hash of its content.
		v.Outcome = Duplicate
		if o.accepted&eventBit(events.Committed) == 0 {
			e, off := o.firstEvidence()
			v.Detail = fmt.Sprintf("plan %s is already %s (its PLANNED was implied by the %s at offset %d, evidence of an erased COMMITTED); no change",
				o.id.String(), o.state(), e, off)
			return v, change{}
		}
		v.Detail = fmt.Sprintf("plan %s is already %s (its PLANNED was implied by the COMMITTED at offset %d); no change",
			o.id.String(), o.state(), o.acceptedOffset(events.Committed))
		return v, change{}
	}
	if v, wrong := s.wrongTopic(v, env.Plan); wrong {
		return v, change{}
	}
	to, err := fsm.Next(fsm.None, env.Event)
	if err != nil {
		return reject(v, ReasonInvalidTransition, err.Error()), change{}
	}
	return Verdict{Outcome: Accepted}, change{env: env, op: -1, to: to}
}

// decideCommitted judges a COMMITTED for a PLANNED operation, or for a plan
// never PLANNED: the record carries the full plan, so it implies PLANNED
// (with PLANNED's binding check). Then the boundary rules of commitRules.
func (s *State) decideCommitted(v Verdict, env events.Envelope, oi int32, o *op) (Verdict, change) {
	from := fsm.None
	var implied uint8
	if o == nil {
		if v, wrong := s.wrongTopic(v, env.Plan); wrong {
			return v, change{}
		}
		planned, err := fsm.Next(fsm.None, events.Planned)
		if err != nil {
			return reject(v, ReasonInvalidTransition, err.Error()), change{}
		}
		from, implied, oi = planned, eventBit(events.Planned), -1
	} else {
		from = o.state()
	}
	to, err := fsm.Next(from, env.Event)
	if err != nil {
		return reject(v, ReasonInvalidTransition, err.Error()), change{}
	}
	c, rejected, ok := s.commitRules(v, env)
	if !ok {
		return rejected, change{}
	}
	c.env, c.op, c.to, c.implied = env, oi, to, implied
	return Verdict{Outcome: Accepted}, c
}

// commitRules applies the boundary rules to a COMMITTED:
//
//   - its boundary field is at or above its own plan on every plan
//     partition (ReasonBoundaryMismatch);
//   - a field at or below the current boundary everywhere raises nothing:
//     accepted as covered, the boundary does not move;
//   - otherwise (it raises something) a plan below the boundary on some
//     partition is ReasonBoundaryRegression: it conflicts with the boundary
//     (the loser of two conflicting concurrent commits);
//   - otherwise the field must be at or above the current boundary on every
//     partition (ReasonBoundaryMismatch), and the new boundary is the max of
//     both: a field above the plan carries a commit this fold may not have
//     seen yet (in a compacted log, a later copy of it moved).
func (s *State) commitRules(v Verdict, env events.Envelope) (change, Verdict, bool) {
	plan, field := env.Plan.Offsets, env.Boundary
	// Each rule first looks for a failing partition in map order (no sort:
	// this runs for every COMMITTED) and names the lowest one only when
	// there is one, so the words do not depend on the map's order.
	if p, bad := lowest(plan, func(p int32) bool { f, ok := field[p]; return !ok || f < plan[p] }); bad {
		return change{}, reject(v, ReasonBoundaryMismatch, fmt.Sprintf(
			"boundary field is %s but the plan is %s: the boundary after a commit is never below its own plan (partition %d)",
			field.String(), plan.String(), p)), false
	}
	raises := func(p int32) bool { b, ok := s.boundary[p]; return !ok || field[p] > b }
	firstRaised, raisesAny := lowest(field, raises)
	if !raisesAny {
		return change{boundary: s.boundary, covered: true}, v, true
	}
	if len(s.pin.list) > 0 {
		if rejected, pinned := s.pinRule(v, env); pinned {
			return change{}, rejected, false
		}
	}
	if p, bad := lowest(plan, func(p int32) bool { b, ok := s.boundary[p]; return ok && plan[p] < b }); bad {
		s.noteConflict(events.Key(env.PlanID, env.Event), plan) // the record's key: Decode checked it
		return change{}, reject(v, ReasonBoundaryRegression, fmt.Sprintf(
			"partition %d: plan offset %d is below the committed boundary %d (set by plan %s), while the commit would raise partition %d; the boundary never moves backward (a plan below it is accepted only when it raises nothing)",
			p, plan[p], s.boundary[p], s.setByID(p), firstRaised)), false
	}
	if p, bad := lowest(s.boundary, func(p int32) bool { f, ok := field[p]; return !ok || f < s.boundary[p] }); bad {
		return change{}, reject(v, ReasonBoundaryMismatch, fmt.Sprintf(
			"boundary field is %s but the current boundary is %s: a commit that raises the boundary must include all of it (partition %d); was it computed on an older view?",
			field.String(), s.boundary.String(), p)), false
	}
	// The field holds every partition of the boundary at or above it (the
	// rule above), so it is the pointwise max of both: no copy to make.
	// Maps are never mutated once folded.
	return change{boundary: field}, v, true
}

// lowest returns the lowest partition of o for which bad is true, and
// whether there is one.
func lowest(o events.Offsets, bad func(p int32) bool) (int32, bool) {
	var first int32
	found := false
	for p := range o {
		if (!found || p < first) && bad(p) {
			first, found = p, true
		}
	}
	return first, found
}

// nextBoundary is the pointwise max of two boundaries over the union of
// their partitions.
func nextBoundary(current, field events.Offsets) events.Offsets {
	next := current.Clone()
	if next == nil {
		next = events.Offsets{}
	}
	for p, off := range field {
		if b, ok := next[p]; !ok || off > b {
			next[p] = off
		}
	}
	return next
}

func (s *State) decideDeleting(v Verdict, env events.Envelope, oi int32, o *op) (Verdict, change) {
	if o == nil || o.state() == fsm.Planned {
		return s.evidenceOf(v, env, oi, o)
	}
	if o.state() == fsm.Applied {
		// Its APPLIED came first and implied DELETING (in a compacted log,
		// a later copy of DELETING lands after APPLIED).
		v.Outcome = Duplicate
		v.Detail = fmt.Sprintf("plan %s is already APPLIED (its DELETING was implied by the APPLIED at offset %d); no change",
			o.id.String(), o.acceptedOffset(events.Applied))
		return v, change{}
	}
	to, err := fsm.Next(o.state(), env.Event)
	if err != nil {
		return reject(v, ReasonInvalidTransition, err.Error()), change{}
	}
	return Verdict{Outcome: Accepted}, change{env: env, op: oi, to: to}
}

// decideApplied judges APPLIED for a DELETING operation, or for a COMMITTED
// one: its log-start offsets are the evidence that deletion happened, so it
// implies DELETING. APPLIED for a PLANNED or unknown operation stays
// rejected: COMMITTED is the point of no return and must be explicit.
func (s *State) decideApplied(v Verdict, env events.Envelope, oi int32, o *op) (Verdict, change) {
	if o == nil || o.state() == fsm.Planned {
		return s.evidenceOf(v, env, oi, o)
	}
	from := o.state()
	var implied uint8
	if from == fsm.Committed {
		deleting, err := fsm.Next(fsm.Committed, events.Deleting)
		if err != nil {
			return reject(v, ReasonInvalidTransition, err.Error()), change{}
		}
		from, implied = deleting, eventBit(events.Deleting)
	}
	to, err := fsm.Next(from, env.Event)
	if err != nil {
		return reject(v, ReasonInvalidTransition, err.Error()), change{}
	}
	// The plan's offsets are sorted: the first failing partition is the
	// lowest.
	for po := range o.offs().all() {
		ls, ok := env.LogStart[po.p]
		if !ok {
			return reject(v, ReasonLogStartBelowPlan, fmt.Sprintf(
				"partition %d: no log-start offset reported; every plan partition must be verified", po.p)), change{}
		}
		if ls < po.off {
			return reject(v, ReasonLogStartBelowPlan, fmt.Sprintf(
				"partition %d: log start %d is below the plan offset %d; records below the plan are not all deleted", po.p, ls, po.off)), change{}
		}
	}
	return Verdict{Outcome: Accepted}, change{env: env, op: oi, to: to, implied: implied}
}

// apply performs an accepted change and returns its audit entry.
func (s *State) apply(offset int64, c change) auditEntry {
	env := c.env
	oi := c.op
	if oi < 0 {
		oi = s.newOp(env.Plan)
	}
	o := s.ops[oi]
	o.setState(c.to)
	o.accepted |= eventBit(env.Event)
	o.implied |= c.implied
	switch env.Event {
	case events.Committed:
		// A commit's boundary field is usually its own plan (a plan over
		// every partition, above the boundary) or the boundary it leaves;
		// maps are never mutated, so the latter is shared.
		switch {
		case o.offs().equal(env.Boundary):
			o.boundaryIsPlan = true
		case env.Boundary.Equal(c.boundary):
			o.more().boundary = c.boundary
		default:
			o.more().boundary = env.Boundary
		}
		o.covered = c.covered
		s.raise(oi, c)
		s.confirm(oi)
		o.seq = int32(len(s.commits))
		s.commits = append(s.commits, oi)
	case events.Applied:
		if o.offs().equal(env.LogStart) {
			// DeleteRecords sets the log start to the plan offset exactly,
			// so this is the usual case.
			o.logStartIsPlan = true
		} else {
			o.more().logStart = env.LogStart
		}
	}
	// The history is at the end of data: its steps are appended to data.
	last, n := o.history().lastAndLen()
	o.data = appendStep(o.data, last, s.newStep(offset, env.Event, env.At, env.Actor))
	if env.Reason != "" {
		if s.reasons == nil {
			s.reasons = map[int64]string{}
		}
		s.reasons[offset] = env.Reason
	}
	return auditEntry{offset: offset, op: oi, idx: int32(n)}
}

// newOp adds the operation of a plan (binding the control topic to the
// plan's data topic if nothing did yet) and returns its index.
func (s *State) newOp(p events.Plan) int32 {
	if !s.bound {
		s.bound, s.topic, s.topicID = true, p.Topic, p.TopicID
	}
	oi := int32(len(s.ops))
	// One allocation for the offsets, the recovery point and the usual
	// four steps (about 40 bytes), rounded up to its size class.
	srp := p.SourceRecoveryPoint
	data := slices.Grow([]byte(nil), partOffsetSize*len(p.Offsets)+binary.MaxVarintLen32+len(srp)+48)
	data = appendOffsets(data, p.Offsets)
	data = binary.AppendUvarint(data, uint64(len(srp)))
	data = append(data, srp...)
	s.ops = append(s.ops, &op{id: mustPlanID(p.PlanID), data: data, parts: int32(len(p.Offsets)), seq: -1})
	s.byPlan.add(s.ops, oi)
	return oi
}

// raise sets the boundary a COMMITTED (or evidence of one) computed, and
// the plans that set each partition.
func (s *State) raise(oi int32, c change) {
	o := s.ops[oi]
	// The partitions it raised, found here rather than listed by decide:
	// a slice less a commit.
	for p, off := range c.boundary {
		if b, ok := s.boundary[p]; !ok || off > b {
			s.setBy[p] = oi
			s.risen = len(s.commits) // where apply appends this commit
		}
	}
	s.boundary = c.boundary
	// A plan whose own offset is the boundary names it better than a
	// commit whose field carried it there.
	for po := range o.offs().all() {
		if by, ok := s.setBy[po.p]; s.boundary[po.p] == po.off && (!ok || s.planOffset(by, po.p) != po.off) {
			s.setBy[po.p] = oi
		}
	}
}

// planOffset is the offset of partition p in the plan of operation oi, -1
// when it has none.
func (s *State) planOffset(oi int32, p int32) int64 {
	if off, ok := s.ops[oi].offs().get(p); ok {
		return off
	}
	return -1
}

// setByID is BoundarySetBy without unconfirmed operations: the plan ID of
// the commit that set partition p's boundary, "" when none did.
func (s *State) setByID(p int32) string {
	if oi, ok := s.setBy[p]; ok {
		return s.ops[oi].id.String()
	}
	return ""
}

// lookup is the operation of a plan ID's text (false for no operation, or
// for text that is no plan ID).
func (s *State) lookup(id string) (int32, bool) {
	pid, ok := parsePlanID(id)
	if !ok {
		return -1, false
	}
	return s.byPlan.find(s.ops, pid)
}

// track keeps what compaction safety needs after every folded record: where
// the latest copy of each accepted record is (Repairs keeps them in order),
// and which keys hold nothing but rejected records (Retractions).
// accepted is the operation of an accepted record (-1 otherwise).
func (s *State) track(r Record, v Verdict, accepted int32) {
	var oi int32
	known := false
	if v.Outcome == Accepted {
		oi, known = accepted, true // no second map lookup
	} else {
		oi, known = s.lookup(v.PlanID)
	}
	bit := eventBit(v.Event)
	switch v.Outcome {
	case Accepted, Duplicate:
		if len(s.rejectedOnly) > 0 {
			if _, ok := s.rejectedOnly[string(r.Key)]; ok {
				delete(s.rejectedOnly, string(r.Key))
			}
		}
		if !known {
			return
		}
		o := s.ops[oi]
		o.held |= bit
		if o.accepted&bit != 0 {
			s.moved(oi, v.Event, r.Offset, v.Outcome == Duplicate)
		}
	case Rejected:
		if len(r.Key) == 0 || known && s.ops[oi].held&bit != 0 {
			return // compaction keeps this key's accepted record (or Repairs does)
		}
		if r.Value == nil || v.Reason == ReasonCommitMissing || v.Reason == ReasonNewerSchema || v.Reason == ReasonUnknownEvent {
			// A tombstone retracts itself; a newer build's record is not
			// ours to erase; evidence of an erased COMMITTED must stay.
			if _, was := s.rejectedOnly[string(r.Key)]; was && r.Value == nil && s.pin.rejectedKeys[string(r.Key)] {
				if s.pin.retracted == nil {
					s.pin.retracted = map[string]bool{}
				}
				s.pin.retracted[string(r.Key)] = true // pins.go, pinDisputes
				delete(s.pin.disputed, string(r.Key))
			}
			delete(s.rejectedOnly, string(r.Key))
			return
		}
		s.rejectedOnly[string(r.Key)] = retraction{offset: r.Offset, timestamp: r.Timestamp}
		if v.Reason == ReasonPinned && isRepair(r) {
			s.pinRepairRejected(string(r.Key), r.Offset) // pins.go
		}
	}
}

// moved records that the latest copy of operation oi's accepted record of
// event e is now at offset.
func (s *State) moved(oi int32, e events.Event, offset int64, duplicate bool) {
	o := s.ops[oi]
	if duplicate {
		// An accepted record's offset is its step's, in the history.
		o.more().copies[eventIndex(e)] = offset
	}
	if e == events.Planned {
		return // a COMMITTED implies PLANNED: its place does not matter
	}
	if e == events.Committed && int(o.seq) <= s.reorderFrom {
		// Every commit after this one (in acceptance order) now has its
		// latest copy before it; the next commit starts the suffix to
		// re-append (or, for the last commit, nothing does).
		s.reorderFrom = int(o.seq) + 1
	}
	if o.commitMisplaced() {
		s.misordered[oi] = true
	} else if len(s.misordered) > 0 {
		delete(s.misordered, oi)
	}
}

// commitMisplaced reports whether the latest copy of the operation's
// COMMITTED is after the latest copy of its DELETING or APPLIED, so that a
// compacted log would show them before it.
func (o *op) commitMisplaced() bool {
	if o.accepted&eventBit(events.Committed) == 0 {
		return false
	}
	if o.extra == nil {
		// No duplicate: the latest copies are the accepted records, and a
		// DELETING or APPLIED is accepted only after the one COMMITTED.
		return false
	}
	latest := o.latest()
	c := latest[eventIndex(events.Committed)]
	for _, e := range []events.Event{events.Deleting, events.Applied} {
		if o.accepted&eventBit(e) != 0 && latest[eventIndex(e)] < c {
			return true
		}
	}
	return false
}

// sameContent reports whether env says what the accepted record of its key
// said: event, planId, plan, boundary and logStart; never at or actor, so a
// retry by another writer is a duplicate.
func (s *State) sameContent(o *op, env *events.Envelope) bool {
	if !s.samePlan(o, env.Plan) || !o.id.is(env.PlanID) {
		return false
	}
	switch env.Event {
	case events.Committed:
		return o.sameBoundary(env.Boundary) && len(env.LogStart) == 0
	case events.Applied:
		return len(env.Boundary) == 0 && o.sameLogStart(env.LogStart)
	}
	return len(env.Boundary) == 0 && len(env.LogStart) == 0
}

// contentDiff names what differs, for the overwrite detail.
func contentDiff(o *op, env *events.Envelope) string {
	switch {
	case env.Event == events.Committed && !o.sameBoundary(env.Boundary):
		return fmt.Sprintf("boundary %s, accepted %s", env.Boundary.String(), o.boundaryOffsets().String())
	case env.Event == events.Applied && !o.sameLogStart(env.LogStart):
		return fmt.Sprintf("logStart %s, accepted %s", env.LogStart.String(), o.logStartOffsets().String())
	}
	return "plan or event fields differ"
}

// overwrite rejects a record that would, once compacted, erase the accepted
// record of its key, and lists the key in Repairs.
func (s *State) overwrite(v Verdict, oi int32, what string) Verdict {
	o := s.ops[oi]
	if o.accepted&eventBit(v.Event) == 0 {
		s.markOverwritten(v.Key, oi, v.Event, v.Offset, true)
		return reject(v, ReasonOverwritesAccepted, fmt.Sprintf(
			"OVERWRITE: key %s holds, at offset %d, the evidence that plan %s's COMMITTED was accepted and erased, and this record is %s; compaction would erase the evidence, so it must be re-appended (Repairs)",
			v.Key, o.proofStep(eventIndex(v.Event)).Offset, o.id.String(), what))
	}
	s.markOverwritten(v.Key, oi, v.Event, v.Offset, false)
	return reject(v, ReasonOverwritesAccepted, fmt.Sprintf(
		"OVERWRITE: key %s holds the record accepted at offset %d, and this record is %s; compaction would erase the accepted record, so it must be re-appended (Repairs)",
		v.Key, o.acceptedOffset(v.Event), what))
}

func (s *State) markOverwritten(key string, oi int32, e events.Event, offset int64, evidence bool) {
	if _, ok := s.overwritten[key]; !ok {
		s.overwritten[key] = overwrite{op: oi, event: e, at: offset, evidence: evidence}
	}
}

// degrade makes the projection fail closed; the first reason stays.
func (s *State) degrade(offset int64, key string, err error) {
	if s.degraded {
		return
	}
	s.degraded = true
	s.degradedReason = fmt.Sprintf("record at offset %d (key %q) is from a newer kcleanup: %v", offset, key, err)
}

// hasStep reports whether the history holds a step of env's event written
// at the same time by the same actor.
func (s *State) hasStep(o *op, env *events.Envelope) bool {
	actor, known := s.actors[env.Actor]
	if !known {
		return false
	}
	for _, st := range o.history().all() {
		if st.event() == env.Event && st.actor == actor && st.at().Equal(env.At) {
			return true
		}
	}
	return false
}

// acceptedOffset is the offset of the first accepted record of event e.
func (o *op) acceptedOffset(e events.Event) int64 {
	if st, ok := o.firstStep(e); ok {
		return st.offset
	}
	return -1
}

// describe is the detail of the accepted verdict of history step i. It is
// derived from the state, so Step and Audit report the same words.
func (s *State) describe(o *op, i int) string {
	switch o.history().at(i).event() {
	case events.Planned:
		return fmt.Sprintf("planned %s from %s: offsets %s", s.topic, o.srp(), o.offs().offsets().String())
	case events.Committed:
		what := "committed"
		if o.implied&eventBit(events.Planned) != 0 {
			what += " (PLANNED implied)"
		}
		if o.covered {
			return what + ": covered by the current boundary; raises nothing"
		}
		return what + ": boundary now " + o.boundaryOffsets().String()
	case events.Deleting:
		n := 0
		for j, h := range o.history().all() {
			if j > i {
				break
			}
			if h.event() == events.Deleting {
				n++
			}
		}
		if n > 1 {
			return fmt.Sprintf("deleting: attempt %d (retry)", n)
		}
		return "deleting: attempt 1"
	case events.Applied:
		what := "applied"
		if o.implied&eventBit(events.Deleting) != 0 {
			what += " (DELETING implied)"
		}
		return what + ": log start " + o.logStartOffsets().String()
	}
	return ""
}

func reject(v Verdict, reason Reason, detail string) Verdict {
	v.Outcome, v.Reason, v.Detail = Rejected, reason, detail
	return v
}

// keyParts returns what the key says: both parts for a valid key or one
// naming an unknown event, nothing for a key that does not parse.
func keyParts(key []byte) (string, events.Event) {
	planID, e, _ := events.ParseKey(key)
	return planID, e
}

// maintenance reads a record's maintenance headers, when the verdict is what
// such a record may be (see Verdict.Maintenance); nil otherwise.
func maintenance(r Record, v Verdict) *Maintenance {
	var m Maintenance
	for _, h := range r.Headers {
		switch h.Key {
		case HeaderMaintenance:
			m.Kind = string(h.Value)
		case HeaderActor:
			m.Actor = string(h.Value)
		case HeaderReason:
			m.Reason = string(h.Value)
		}
	}
	switch {
	case m.Kind == MaintenanceRepair && (v.Outcome == Duplicate || v.Reason == ReasonCommitMissing),
		m.Kind == MaintenanceRetraction && v.Reason == ReasonTombstone,
		m.Kind == MaintenanceRecommit && v.Outcome == Duplicate:
		return &m
	}
	return nil
}

// IsMaintenance reports whether the verdict is of a worker's maintenance
// record (Verdict.Maintenance).
func (v Verdict) IsMaintenance() bool { return v.Maintenance != nil }
