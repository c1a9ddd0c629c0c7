package events

import (
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
)

// SubtasksUnchecked is what callers warn when markers do not say which checkpoint, operator
// and subtask they are from (CheckSubtasks' checked is false).
const SubtasksUnchecked = "the markers do not say which checkpoint, operator and subtask they are from " +
	"(checkpointId, operator, parallelism, subtask): kcleanup cannot check that they are every subtask's markers of one checkpoint, " +
	"and a plan from some subtasks' markers deletes records the others still need. kcleanup markers --checkpoint writes markers that say it."

// CheckSubtasks checks that markers which say where they were read (Marker.Source) are
// every subtask's of one checkpoint and one operator, each exactly once: a plan from some
// subtasks' markers would keep only what those subtasks need, and markers of two
// checkpoints describe no recovery point. checked is false when the markers do not say
// (hand-written, or from older tools): then completeness cannot be checked, and the caller
// warns. Markers of which some say and some do not are refused.
func CheckSubtasks(markers []Marker) (checked bool, err error) {
	var s subtasks
	for i, m := range markers {
		if err := s.add(i, m.Source); err != nil {
			return false, errors.Wrap(err, "invalid markers")
		}
	}
	if err := s.complete(); err != nil {
		return false, errors.Wrap(err, "invalid markers")
	}
	return s.checked(), nil
}

// subtasks is CheckSubtasks one marker at a time (PlanBuilder holds one); its errors are
// worded without a prefix, which each caller gives.
type subtasks struct {
	n     int
	first *MarkerSource // marker 0's
	seen  []int32       // seen[subtask] is 1 + the index of its marker; 0 when none yet
	count int           // subtasks seen
}

func (s *subtasks) checked() bool { return s.first != nil }

// add takes marker i's source. On an error it changes nothing, so that the same marker can
// be added again and get the same error (AddMarkers' fast path relies on it).
func (s *subtasks) add(i int, src *MarkerSource) error {
	if src != nil {
		if ferr := src.check(); ferr != nil {
			return errors.Newf("marker %d: %s", i, ferr.Error())
		}
	}
	if s.n == 0 {
		if src != nil {
			s.first = src
			s.seen = make([]int32, src.Parallelism)
			s.seen[src.Subtask] = int32(i) + 1
			s.count = 1
		}
		s.n++
		return nil
	}
	first := s.first
	switch {
	case src == nil && first == nil:
		s.n++
		return nil
	case src == nil:
		return errors.Newf("marker %d does not say which checkpoint and subtask it is from, but marker 0 does (checkpoint %d): expected every marker from the same kcleanup markers run", i, first.CheckpointID)
	case first == nil:
		return errors.Newf("marker %d says it is from checkpoint %d, subtask %d, but marker 0 does not say where it is from: expected every marker from the same kcleanup markers run", i, src.CheckpointID, src.Subtask)
	case src.CheckpointID != first.CheckpointID:
		return errors.Newf("marker %d is from checkpoint %d but marker 0 from checkpoint %d: expected the markers of one checkpoint", i, src.CheckpointID, first.CheckpointID)
	case src.OperatorUID != first.OperatorUID || src.OperatorUIDHash != first.OperatorUIDHash:
		return errors.Newf("marker %d is from operator %s but marker 0 from operator %s: expected the markers of one operator", i, operatorName(src), operatorName(first))
	case src.Parallelism != first.Parallelism:
		return errors.Newf("marker %d says parallelism %d but marker 0 says %d: expected the markers of one checkpoint", i, src.Parallelism, first.Parallelism)
	case s.seen[src.Subtask] != 0:
		return errors.Newf("marker %d is subtask %d, as marker %d is: expected each subtask's marker once", i, src.Subtask, s.seen[src.Subtask]-1)
	}
	s.seen[src.Subtask] = int32(i) + 1
	s.count++
	s.n++
	return nil
}

// complete names the subtasks without a marker, when the markers say where they are from.
func (s *subtasks) complete() error {
	if s.first == nil || s.count == len(s.seen) {
		return nil
	}
	var missing []int32
	for st, at := range s.seen {
		if at == 0 {
			missing = append(missing, int32(st))
		}
	}
	word := "subtask"
	if len(missing) > 1 {
		word = "subtasks"
	}
	return errors.Newf("the markers of checkpoint %d, operator %s, lack %s %s of its %d: expected every subtask 0 to %d exactly once (kcleanup markers --checkpoint writes them all)",
		s.first.CheckpointID, operatorName(s.first), word, listPartitions(missing), s.first.Parallelism, s.first.Parallelism-1)
}

// operatorName names an operator by uid and hash, as far as known.
func operatorName(s *MarkerSource) string {
	var parts []string
	if s.OperatorUID != "" {
		parts = append(parts, "uid "+strconv.Quote(s.OperatorUID))
	}
	if s.OperatorUIDHash != "" {
		parts = append(parts, "uidHash "+s.OperatorUIDHash)
	}
	return strings.Join(parts, " ")
}
