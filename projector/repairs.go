package projector

import (
	"slices"

	"github.com/kcleanup/kcleanup/events"
)

// Repairs returns the accepted records a worker must append again, oldest
// first, so that the log compacted by key replays like the full log (I5):
//
//   - every key whose accepted record a later record (or tombstone)
//     overwrote: compaction would keep the overwriting record;
//   - every COMMITTED from the first one whose latest copy is out of
//     acceptance order (a later copy of an earlier COMMITTED, a duplicate or
//     a repair, moved past it): compaction keeps latest copies, so the
//     commits are re-appended in acceptance order after the moved one;
//   - the DELETING and APPLIED of every operation whose COMMITTED is
//     re-appended, or whose latest COMMITTED copy is after them;
//   - every key holding evidence of an erased COMMITTED (rule 7 of the
//     package doc) that a later record overwrote: the evidence record is
//     re-appended, and folding it is ReasonCommitMissing again;
//   - last, when a tombstone or an undecodable value overwrote a mirror
//     event that decides which mirror is attached (rule M5 of the package
//     doc): the deciding ATTACHED, and the DETACHED after it if any.
//
// Its Offset and Timestamp are those of the accepted record, for reference;
// the caller appends Key and Value in the order returned. The value is
// re-encoded from the projection (the fold keeps no raw values) with the
// accepted content, so folding it is a duplicate, and it clears the key: once
// all are appended, Repairs is empty.
func (s *State) Repairs() []Record {
	if len(s.pin.list) == 0 {
		return append(s.planRepairs(-1), s.mirrorRepairs()...)
	}
	// Commits and pin events decide together (a pin rejects the commits
	// after it): from the first one whose copies left acceptance order on,
	// both are re-appended in acceptance order (pins.go, pinReorderFrom).
	from := s.pinReorderFrom()
	plan := s.planRepairs(from)
	earliest := int64(-1) // the first COMMITTED re-appended moves past every pin event after it
	for _, r := range plan {
		if _, e, err := events.ParseKey(r.Key); err == nil && e == events.Committed && (earliest < 0 || r.Offset < earliest) {
			earliest = r.Offset
		}
	}
	if earliest >= 0 {
		if first, ok := s.firstPinEventAfter(earliest); ok && (from < 0 || first < from) {
			from = first
		}
	}
	out := append(plan, s.pinRepairs(from)...)
	slices.SortStableFunc(out, func(a, b Record) int { return compareInt64(a.Offset, b.Offset) })
	return append(out, s.mirrorRepairs()...)
}

// planRepairs lists the plan records to re-append; fromOffset >= 0 adds
// every COMMITTED accepted at or after it (and what must follow each).
func (s *State) planRepairs(fromOffset int64) []Record {
	from := s.reorderFrom
	if fromOffset >= 0 {
		for i, oi := range s.commits {
			if s.ops[oi].acceptedOffset(events.Committed) >= fromOffset {
				from = min(from, i)
				break
			}
		}
	}
	for _, w := range s.overwritten {
		if w.event == events.Committed && !w.evidence && !s.disputed(w.op) {
			from = min(from, int(s.ops[w.op].seq))
		}
	}
	if len(s.overwritten) == 0 && len(s.misordered) == 0 && from >= len(s.commits) {
		return nil
	}
	type want struct {
		op    int32
		event events.Event
	}
	wanted := map[want]bool{}
	after := func(oi int32) { // what must follow a COMMITTED re-appended or moved
		for _, e := range []events.Event{events.Deleting, events.Applied} {
			if s.ops[oi].accepted&eventBit(e) != 0 {
				wanted[want{oi, e}] = true
			}
		}
	}
	var out []Record
	for _, w := range s.overwritten {
		if w.evidence {
			if r, ok := s.reencodeEvidence(w.op, w.event); ok {
				out = append(out, r)
			}
			continue
		}
		if w.event == events.Committed && s.disputed(w.op) {
			continue // neither side is re-appended (conflicts.go)
		}
		wanted[want{w.op, w.event}] = true
		if w.event == events.Committed {
			after(w.op)
		}
	}
	for _, oi := range s.commits[min(from, len(s.commits)):] {
		wanted[want{oi, events.Committed}] = true
		after(oi)
	}
	for oi := range s.misordered {
		after(oi)
	}
	for w := range wanted {
		if r, ok := s.reencode(w.op, w.event); ok {
			out = append(out, r)
		}
	}
	// Acceptance order: commits stay in their order, and each operation's
	// DELETING and APPLIED follow its COMMITTED.
	slices.SortFunc(out, func(a, b Record) int { return compareInt64(a.Offset, b.Offset) })
	return out
}

// reencode rebuilds the first accepted record of event e of operation oi.
func (s *State) reencode(oi int32, e events.Event) (Record, bool) {
	o := s.ops[oi]
	st, ok := o.firstStep(e)
	if !ok {
		return Record{}, false // cannot happen: only accepted events are wanted
	}
	at := st.at()
	env := events.Envelope{
		SchemaVersion: events.SchemaVersion,
		Event:         e,
		PlanID:        o.id.String(),
		Plan:          s.plan(o),
		At:            at,
		Actor:         s.actorNames[st.actor],
		Reason:        s.reasons[st.offset], // a repair keeps the operator's reason
	}
	switch e {
	case events.Committed:
		env.Boundary = o.boundaryOffsets().Clone()
	case events.Applied:
		env.LogStart = o.logStartOffsets().Clone()
	}
	key, value := env.Encode()
	return Record{Offset: st.offset, Key: key, Value: value, Timestamp: at}, true
}

// Retractions returns, oldest first, every non-empty key under which every
// record so far was rejected: no record under it was accepted or a
// duplicate, and that holds no evidence of an erased COMMITTED
// (Operation.Evidence: such a key is repaired, never retracted). Keys whose
// latest record is already a tombstone are left out,
// and so are keys whose latest record is from a newer kcleanup (not ours to
// erase). A later accepted record under a key removes it from the list.
//
// Such a record changes nothing where it is, but compaction keeps it while
// moving accepted records (later copies) past it, and then it could be
// judged differently: a PLANNED for another topic ahead of the binding one,
// a COMMITTED ahead of the commit that defeated it. Workers append a
// tombstone for each key, after a grace period counted from Timestamp (a
// writer may be about to retry under the same key); the tombstone is a
// rejected no-op for the fold, and once compaction runs the key is gone.
func (s *State) Retractions() []Retraction {
	if len(s.rejectedOnly) == 0 {
		return nil
	}
	out := make([]Retraction, 0, len(s.rejectedOnly))
	var reappended map[string]bool // losesToMoved's, computed once
	for k, r := range s.rejectedOnly {
		if s.holdsEvidence(k) {
			continue // Repairs re-appends the evidence over it
		}
		if s.defeatedByDisputed(k) || s.pin.rejectedKeys[k] && s.pinDisputed(k) {
			continue // it may be the commit the full log accepted (conflicts.go, pins.go)
		}
		out = append(out, Retraction{Key: []byte(k), Offset: r.offset, Timestamp: r.timestamp, Now: s.pin.rejectedKeys[k] || s.losesToMoved(k, r.offset, &reappended)})
	}
	slices.SortFunc(out, func(a, b Retraction) int { return compareInt64(a.Offset, b.Offset) })
	return out
}
