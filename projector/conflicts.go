package projector

import (
	"slices"

	"github.com/kcleanup/kcleanup/events"
)

// Disputed conflicts (docs/design.md §5, "the compaction argument").
//
// Of two conflicting commits the one the log has first wins. Compaction can
// make a reader see them the other way: when a later copy of the winner's
// COMMITTED (a late duplicate from its writer, or a repair) lands after
// the loser's rejected COMMITTED, the cleaner removes the winner's first
// copy once the later one is old enough, while the loser's record stays
// until its retraction tombstone, written after the later copy, is old
// enough too. A reader in that window sees the loser first and accepted,
// the winner's copy rejected, and then the tombstone retracting the record
// it accepted (a worker's retraction: header kcleanup-maintenance:
// retraction). No kcleanup writer retracts a key its view accepted, so
// the tombstone says that another view judged the conflict the other way;
// this view cannot tell which order the full log had. Such a winner is
// disputed: its view repairs neither side (no re-append of its COMMITTED,
// no retraction of the commits it defeated), AtRisk holds (nothing is
// deleted, recovery "cannot tell"), and the views that are not disputed
// (which read the full order) retract the true loser; once the cleaner
// removed it, every fresh read names the full history's winner, and a
// worker whose view is disputed reads the log afresh (worker/daemon). A
// tombstone without that header (an operator's) is an ordinary overwrite,
// repaired as any other.
//
// Retraction.Now keeps the window short: a loser whose winner has a later
// copy after it, or is about to be re-appended by Repairs, is retracted at
// once, before the repairs.

// noteConflict records that the COMMITTED under key, with plan offsets
// plan, was rejected as a regression: the operations whose commits set the
// boundary on the partitions where plan is below it defeated it.
func (s *State) noteConflict(key string, plan events.Offsets) {
	if s.conflicts == nil {
		s.conflicts = map[string][]int32{}
	}
	winners := s.conflicts[key]
	for _, p := range plan.Partitions() {
		b, ok := s.boundary[p]
		if !ok || plan[p] >= b {
			continue
		}
		if oi, ok := s.setBy[p]; ok && !slices.Contains(winners, oi) {
			winners = append(winners, oi)
		}
	}
	s.conflicts[key] = winners
}

// markRetracted notes that an overwrite of key is a worker's retraction.
func (s *State) markRetracted(key string) {
	if w, ok := s.overwritten[key]; ok && !w.retracted {
		w.retracted = true
		s.overwritten[key] = w
	}
}

// isRetraction reports whether a tombstone carries a worker's retraction
// headers (HeaderMaintenance MaintenanceRetraction).
func isRetraction(r Record) bool {
	for _, h := range r.Headers {
		if h.Key == HeaderMaintenance {
			return string(h.Value) == MaintenanceRetraction
		}
	}
	return false
}

// disputed reports whether operation oi's accepted COMMITTED defeated a
// conflicting commit and its key was then tombstoned, not repaired since.
func (s *State) disputed(oi int32) bool {
	if len(s.conflicts) == 0 {
		return false
	}
	o := s.ops[oi]
	w, ok := s.overwritten[events.Key(o.id.String(), events.Committed)]
	if !ok || !w.retracted || w.evidence {
		return false
	}
	for _, winners := range s.conflicts {
		if slices.Contains(winners, oi) {
			return true
		}
	}
	return false
}

// defeatedByDisputed reports whether the rejected COMMITTED under key lost
// to a commit that is now disputed: retracting it could erase the commit
// the full log accepted.
func (s *State) defeatedByDisputed(key string) bool {
	for _, oi := range s.conflicts[key] {
		if s.disputed(oi) {
			return true
		}
	}
	return false
}

// disputedBy returns the keys of the commits a disputed operation defeated,
// sorted, for AtRisk's sentence.
func (s *State) disputedBy(oi int32) []string {
	var out []string
	for k, winners := range s.conflicts {
		if slices.Contains(winners, oi) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Disputed returns the plan IDs, sorted, of the accepted COMMITTEDs whose
// conflict another reader judged the other way (a worker's retraction
// tombstone over a COMMITTED that defeated another), and of the COMMITTEDs
// it rejected for a pin that another worker's view accepted (a pin
// dispute, pins.go): this projection may show a compacted order the full
// log did not have. A worker reads the control topic afresh to resolve it
// (AtRisk holds meanwhile).
func (s *State) Disputed() []string {
	var out []string
	for _, w := range s.overwritten {
		if w.event == events.Committed && s.disputed(w.op) {
			out = append(out, s.ops[w.op].id.String())
		}
	}
	for _, d := range s.pinDisputes() { // pins.go: the same window, a pin for the other commit
		if id, _, err := events.ParseKey([]byte(d.key)); err == nil && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// losesToMoved reports whether the rejected COMMITTED under key (its latest
// record at offset) lost to a commit whose COMMITTED has a copy after it or
// is re-appended by Repairs (Retraction.Now). reappended caches the
// COMMITTED keys Repairs lists.
func (s *State) losesToMoved(key string, offset int64, reappended *map[string]bool) bool {
	for _, oi := range s.conflicts[key] {
		o := s.ops[oi]
		if o.accepted&eventBit(events.Committed) == 0 {
			continue
		}
		if o.latest()[eventIndex(events.Committed)] > offset {
			return true
		}
		if *reappended == nil {
			*reappended = map[string]bool{}
			for _, r := range s.Repairs() {
				(*reappended)[string(r.Key)] = true
			}
		}
		if (*reappended)[events.Key(o.id.String(), events.Committed)] {
			return true
		}
	}
	return false
}
