package projector

import (
	"fmt"

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
		detail := fmt.Sprintf("offset %d is at or below offset %d, already folded; ignored", r.Offset, s.next-1)
		if r.Offset < 0 {
			detail = fmt.Sprintf("offset %d is negative: Kafka offsets start at 0; ignored", r.Offset)
		}
		v := Verdict{Offset: r.Offset, Key: string(r.Key), Outcome: Rejected, Reason: ReasonOutOfOrder, At: r.Timestamp, Detail: detail}
		v.PlanID, v.Event = keyParts(r.Key)
		return v
	}
	env, err := events.Decode(r.Key, r.Value)
	return s.fold(r, env, err)
}

// fold is Step after decoding: Decode's result is passed in so that the
// benchmark can tell the fold's cost from the decoder's.
func (s *State) fold(r Record, env events.Envelope, decodeErr error) Verdict {
	s.next = r.Offset + 1
	v, step := s.decide(r, env, decodeErr)
	if v.Outcome == Accepted {
		s.apply(r.Offset, step)
		return s.verdictOf(s.audit[len(s.audit)-1])
	}
	s.audit = append(s.audit, auditEntry{offset: r.Offset, op: -1, idx: int32(len(s.others))})
	s.others = append(s.others, v)
	return v
}

// change is an accepted record's effect, computed by decide and applied by
// apply, so that a rejection provably changes nothing.
type change struct {
	env      events.Envelope
	op       int32 // -1 for a new operation (PLANNED)
	to       fsm.State
	boundary events.Offsets // COMMITTED: the new boundary
	raised   []int32        // COMMITTED: partitions whose boundary it set
}

// decide judges a record against the current state. An accepted record's
// effect is returned for apply; decide itself changes only what a record
// that is not accepted may change (Degraded, Repairs).
func (s *State) decide(r Record, env events.Envelope, err error) (Verdict, change) {
	v := Verdict{Offset: r.Offset, Key: string(r.Key), At: r.Timestamp}
	v.PlanID, v.Event = keyParts(r.Key)
	// The operation and whether this key already holds an accepted record
	// come from the key alone, so even an undecodable value or a tombstone
	// on an accepted key is caught as an overwrite.
	oi, known := s.byPlan[v.PlanID]
	var o *op
	if known {
		o = s.ops[oi]
	}
	acceptedKey := o != nil && o.accepted&eventBit(v.Event) != 0

	if r.Value == nil {
		if acceptedKey {
			return s.overwrite(v, oi, "a tombstone"), change{}
		}
		return reject(v, ReasonTombstone, "a tombstone (nil value) is never a valid control record"), change{}
	}

	if err != nil {
		reason := decodeReason(err)
		if reason == ReasonNewerSchema || reason == ReasonUnknownEvent {
			s.degrade(r.Offset, v.Key, err)
		}
		if acceptedKey {
			if reason == ReasonNewerSchema || reason == ReasonUnknownEvent {
				// Degraded is the louder flag; the key still needs repair.
				s.markOverwritten(v.Key, oi, v.Event, r.Offset)
				return reject(v, reason, fmt.Sprintf("%v; it also overwrites the record accepted under this key", err)), change{}
			}
			return s.overwrite(v, oi, fmt.Sprintf("an undecodable value (%v)", err)), change{}
		}
		return reject(v, reason, err.Error()), change{}
	}
	v.At, v.Actor, v.Event, v.PlanID = verdictAt(&env, r), env.Actor, env.Event, env.PlanID

	if acceptedKey {
		if !sameContent(o, &env) {
			return s.overwrite(v, oi, "other content ("+contentDiff(o, &env)+")"), change{}
		}
		repairs, wasOverwritten := s.overwritten[v.Key]
		delete(s.overwritten, v.Key)
		if env.Event == events.Deleting && o.state == fsm.Deleting && !o.hasStep(&env) {
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

	switch env.Event {
	case events.Planned:
		return s.decidePlanned(v, env)
	case events.Committed:
		return s.decideCommitted(v, env, oi, o)
	case events.Deleting, events.Applied:
		return s.decideFinish(v, env, oi, o)
	}
	// Decode returns only the four events; anything else is a newer build's.
	s.degrade(r.Offset, v.Key, errors.Newf("event %q", env.Event))
	return reject(v, ReasonUnknownEvent, fmt.Sprintf("event %q is unknown to this build", env.Event)), change{}
}

func (s *State) decidePlanned(v Verdict, env events.Envelope) (Verdict, change) {
	p := env.Plan
	if s.bound && (p.Topic != s.topic || p.TopicID != s.topicID) {
		return reject(v, ReasonWrongTopic, fmt.Sprintf(
			"the plan is for topic %s (ID %s) but this control topic governs %s (ID %s)",
			p.Topic, p.TopicID, s.topic, s.topicID)), change{}
	}
	to, err := fsm.Next(fsm.None, env.Event)
	if err != nil {
		return reject(v, ReasonInvalidTransition, err.Error()), change{}
	}
	return Verdict{Outcome: Accepted}, change{env: env, op: -1, to: to}
}

func (s *State) decideCommitted(v Verdict, env events.Envelope, oi int32, o *op) (Verdict, change) {
	if o == nil {
		return unknownOperation(v), change{}
	}
	to, err := fsm.Next(o.state, env.Event)
	if err != nil {
		return reject(v, ReasonInvalidTransition, err.Error()), change{}
	}
	plan := o.plan.Offsets
	for _, p := range plan.Partitions() {
		if b, ok := s.boundary[p]; ok && plan[p] < b {
			return reject(v, ReasonBoundaryRegression, fmt.Sprintf(
				"partition %d: plan offset %d is below the committed boundary %d (set by plan %s); the boundary never moves backward",
				p, plan[p], b, s.setBy[p])), change{}
		}
	}
	next := s.boundary.Clone()
	var raised []int32
	for _, p := range plan.Partitions() {
		if b, ok := next[p]; !ok || plan[p] > b {
			next[p] = plan[p]
			raised = append(raised, p)
		}
	}
	if !next.Equal(env.Boundary) {
		return reject(v, ReasonBoundaryMismatch, fmt.Sprintf(
			"boundary field is %s but the boundary after this commit is %s (max of the current boundary and the plan); was it computed on an older view?",
			formatOffsets(env.Boundary), formatOffsets(next))), change{}
	}
	return Verdict{Outcome: Accepted}, change{env: env, op: oi, to: to, boundary: next, raised: raised}
}

// decideFinish judges DELETING and APPLIED.
func (s *State) decideFinish(v Verdict, env events.Envelope, oi int32, o *op) (Verdict, change) {
	if o == nil {
		return unknownOperation(v), change{}
	}
	to, err := fsm.Next(o.state, env.Event)
	if err != nil {
		return reject(v, ReasonInvalidTransition, err.Error()), change{}
	}
	if env.Event == events.Applied {
		plan := o.plan.Offsets
		for _, p := range plan.Partitions() {
			ls, ok := env.LogStart[p]
			if !ok {
				return reject(v, ReasonLogStartBelowPlan, fmt.Sprintf(
					"partition %d: no log-start offset reported; every plan partition must be verified", p)), change{}
			}
			if ls < plan[p] {
				return reject(v, ReasonLogStartBelowPlan, fmt.Sprintf(
					"partition %d: log start %d is below the plan offset %d; records below the plan are not all deleted", p, ls, plan[p])), change{}
			}
		}
	}
	return Verdict{Outcome: Accepted}, change{env: env, op: oi, to: to}
}

// apply performs an accepted change and appends its audit entry.
func (s *State) apply(offset int64, c change) {
	env := c.env
	oi := c.op
	if oi < 0 {
		p := env.Plan
		if !s.bound {
			s.bound, s.topic, s.topicID = true, p.Topic, p.TopicID
		}
		// Share the binding's strings: every plan names the same topic.
		p.Topic, p.TopicID = s.topic, s.topicID
		oi = int32(len(s.ops))
		s.ops = append(s.ops, &op{plan: p})
		s.byPlan[p.PlanID] = oi
	}
	o := s.ops[oi]
	o.state = c.to
	o.accepted |= eventBit(env.Event)
	switch env.Event {
	case events.Committed:
		o.boundary = env.Boundary
		o.commitAt = offset
		s.boundary = c.boundary
		for _, p := range c.raised {
			s.setBy[p] = o.plan.PlanID
		}
	case events.Deleting:
		o.deletes++
	case events.Applied:
		o.logStart = env.LogStart
		if env.LogStart.Equal(o.plan.Offsets) {
			// DeleteRecords sets the log start to the plan offset exactly,
			// so this is the usual case; maps are never mutated, so share.
			o.logStart = o.plan.Offsets
		}
	}
	o.history = append(o.history, Step{Offset: offset, Event: env.Event, At: env.At, Actor: s.intern(env.Actor)})
	s.audit = append(s.audit, auditEntry{offset: offset, op: oi, idx: int32(len(o.history) - 1)})
}

// sameContent reports whether env says what the accepted record of its key
// said: event, planId, plan, boundary and logStart; never at or actor, so a
// retry by another writer is a duplicate.
func sameContent(o *op, env *events.Envelope) bool {
	if !samePlan(o.plan, env.Plan) || env.PlanID != o.plan.PlanID {
		return false
	}
	var boundary, logStart events.Offsets
	switch env.Event {
	case events.Committed:
		boundary = o.boundary
	case events.Applied:
		logStart = o.logStart
	}
	return env.Boundary.Equal(boundary) && env.LogStart.Equal(logStart)
}

func samePlan(a, b events.Plan) bool {
	return a.PlanID == b.PlanID && a.SourceRecoveryPoint == b.SourceRecoveryPoint &&
		a.Topic == b.Topic && a.TopicID == b.TopicID && a.Offsets.Equal(b.Offsets)
}

// contentDiff names what differs, for the overwrite detail.
func contentDiff(o *op, env *events.Envelope) string {
	switch {
	case env.Event == events.Committed && !env.Boundary.Equal(o.boundary):
		return fmt.Sprintf("boundary %s, accepted %s", formatOffsets(env.Boundary), formatOffsets(o.boundary))
	case env.Event == events.Applied && !env.LogStart.Equal(o.logStart):
		return fmt.Sprintf("logStart %s, accepted %s", formatOffsets(env.LogStart), formatOffsets(o.logStart))
	}
	return "plan or event fields differ"
}

// overwrite rejects a record that would, once compacted, erase the accepted
// record of its key, and lists the key in Repairs.
func (s *State) overwrite(v Verdict, oi int32, what string) Verdict {
	o := s.ops[oi]
	s.markOverwritten(v.Key, oi, v.Event, v.Offset)
	return reject(v, ReasonOverwritesAccepted, fmt.Sprintf(
		"OVERWRITE: key %s holds the record accepted at offset %d, and this record is %s; compaction would erase the accepted record, so it must be re-appended (Repairs)",
		v.Key, o.acceptedOffset(v.Event), what))
}

func (s *State) markOverwritten(key string, oi int32, e events.Event, offset int64) {
	if _, ok := s.overwritten[key]; !ok {
		s.overwritten[key] = overwrite{op: oi, event: e, at: offset}
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
func (o *op) hasStep(env *events.Envelope) bool {
	for _, st := range o.history {
		if st.Event == env.Event && st.Actor == env.Actor && st.At.Equal(env.At) {
			return true
		}
	}
	return false
}

// acceptedOffset is the offset of the first accepted record of event e.
func (o *op) acceptedOffset(e events.Event) int64 {
	if st, ok := o.firstStep(e); ok {
		return st.Offset
	}
	return -1
}

// describe is the detail of the accepted verdict of history step i. It is
// derived from the state, so Step and Audit report the same words.
func (o *op) describe(i int) string {
	st := o.history[i]
	switch st.Event {
	case events.Planned:
		return fmt.Sprintf("planned %s from %s: offsets %s", o.plan.Topic, o.plan.SourceRecoveryPoint, formatOffsets(o.plan.Offsets))
	case events.Committed:
		return "committed: boundary now " + formatOffsets(o.boundary)
	case events.Deleting:
		n := 0
		for _, h := range o.history[:i+1] {
			if h.Event == events.Deleting {
				n++
			}
		}
		if n > 1 {
			return fmt.Sprintf("deleting: attempt %d (retry)", n)
		}
		return "deleting: attempt 1"
	case events.Applied:
		return "applied: log start " + formatOffsets(o.logStart)
	}
	return ""
}

func reject(v Verdict, reason Reason, detail string) Verdict {
	v.Outcome, v.Reason, v.Detail = Rejected, reason, detail
	return v
}

func unknownOperation(v Verdict) Verdict {
	return reject(v, ReasonUnknownOperation, fmt.Sprintf(
		"no PLANNED was accepted for plan %s; %s needs one first", v.PlanID, v.Event))
}

// keyParts returns what the key says: both parts for a valid key or one
// naming an unknown event, nothing for a key that does not parse.
func keyParts(key []byte) (string, events.Event) {
	planID, e, _ := events.ParseKey(key)
	return planID, e
}
