package projector

import (
	"fmt"
	"maps"
	"slices"

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
//   - a key whose record was accepted holds a later record with other
//     content (an overwrite or a tombstone) that no repair has re-appended
//     over yet: once the cleaner runs, the accepted record is gone;
//   - a DELETING or APPLIED of a plan survives without its COMMITTED: a
//     worker writes them only after reading its COMMITTED back, so the
//     COMMITTED was accepted and then erased (overwritten, then compacted).
//
// AtRisk is pure and cheap: it reads what the fold already keeps.
func (s *State) AtRisk() (bool, string) {
	var risks []string
	for _, k := range slices.Sorted(maps.Keys(s.overwritten)) {
		w := s.overwritten[k]
		o := s.ops[w.op]
		risks = append(risks, fmt.Sprintf(
			"key %s holds the record accepted at offset %d, overwritten at offset %d and not repaired yet: if the log cleaner runs first, that accepted record is erased (a running worker re-appends it; check that one owns the control topic)",
			k, o.acceptedOffset(w.event), w.at))
	}
	seen := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(s.evidence)) {
		e := s.evidence[k]
		id := e.planID
		if seen[id] {
			continue
		}
		seen[id] = true
		if i, ok := s.byPlan[id]; ok {
			switch s.ops[i].state {
			case fsm.Committed, fsm.Deleting, fsm.Applied:
				continue // its COMMITTED is in the log after all
			}
		}
		risks = append(risks, fmt.Sprintf(
			"plan %s has a %s at offset %d but no accepted COMMITTED: workers write it only after reading the COMMITTED back, so that COMMITTED was erased (overwritten, then compacted) and the boundary read from this control topic may be lower than the one committed; check the data topic's log start against the plan %s before trusting any recovery point",
			id, e.event, e.offset, formatOffsets(e.plan)))
	}
	switch len(risks) {
	case 0:
		return false, ""
	case 1:
		return true, risks[0]
	}
	return true, fmt.Sprintf("%s (and %d more)", risks[0], len(risks)-1)
}

// evidence is the latest DELETING or APPLIED under its key, of a plan
// whose COMMITTED the fold had not accepted.
type evidence struct {
	planID string
	event  events.Event
	offset int64
	plan   events.Offsets
}

// noteEvidence remembers a DELETING or APPLIED that was rejected because its
// operation has no accepted COMMITTED.
func (s *State) noteEvidence(v Verdict, env *events.Envelope) {
	if v.Outcome != Rejected || (v.Reason != ReasonInvalidTransition && v.Reason != ReasonUnknownOperation) {
		return
	}
	if env.Event != events.Deleting && env.Event != events.Applied {
		return
	}
	s.evidence[v.Key] = evidence{planID: env.PlanID, event: env.Event, offset: v.Offset, plan: env.Plan.Offsets}
}

// isEvidence reports whether a verdict is that of the evidence AtRisk keeps
// for its plan: such a record must not be retracted.
func (s *State) isEvidence(v Verdict) bool {
	e, ok := s.evidence[v.Key]
	return ok && e.offset == v.Offset
}
