package projector

import (
	"slices"

	"github.com/kcleanup/kcleanup/events"
)

// Repairs returns, for every key whose accepted record was overwritten by a
// later record (or tombstone) and not yet repaired, the accepted record to
// append again, oldest first. Its Offset and Timestamp are those of the
// accepted record, for reference; the caller appends Key and Value.
//
// The value is re-encoded from the projection (the fold keeps no raw
// values). It has the accepted content, so folding it is a duplicate, and it
// clears the key from Repairs: once it is the latest record under its key,
// compaction keeps the accepted content.
func (s *State) Repairs() []Record {
	if len(s.overwritten) == 0 {
		return nil
	}
	out := make([]Record, 0, len(s.overwritten))
	for _, w := range s.overwritten {
		o := s.ops[w.op]
		st, ok := o.firstStep(w.event)
		if !ok {
			continue // cannot happen: only accepted keys are marked
		}
		env := events.Envelope{
			SchemaVersion: events.SchemaVersion,
			Event:         w.event,
			PlanID:        o.plan.PlanID,
			Plan:          clonePlan(o.plan),
			At:            st.At,
			Actor:         st.Actor,
		}
		switch w.event {
		case events.Committed:
			env.Boundary = o.boundary.Clone()
		case events.Applied:
			env.LogStart = o.logStart.Clone()
		}
		key, value := env.Encode()
		out = append(out, Record{Offset: st.Offset, Key: key, Value: value, Timestamp: st.At})
	}
	slices.SortFunc(out, func(a, b Record) int { return compareInt64(a.Offset, b.Offset) })
	return out
}
