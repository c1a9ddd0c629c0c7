package projector

import (
	"fmt"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
)

// RefusalReason says why a recovery point was refused.
type RefusalReason string

// Every reason Validate refuses for.
const (
	// RefuseDegraded: the projection saw a record from a newer kcleanup and
	// cannot say anything is safe.
	RefuseDegraded RefusalReason = "degraded"
	// RefuseNoMarkers: a boundary is committed but the recovery point has
	// no marker to compare with it.
	RefuseNoMarkers RefusalReason = "no-markers"
	// RefuseTopic: a marker names another topic than the bound one.
	RefuseTopic RefusalReason = "topic-mismatch"
	// RefuseTopicID: a marker names another incarnation of the topic.
	RefuseTopicID RefusalReason = "topic-id-mismatch"
	// RefuseMissingPartition: a partition of the boundary has no offset in a marker.
	RefuseMissingPartition RefusalReason = "missing-partition"
	// RefuseBelowBoundary: a marker needs records below the committed boundary.
	RefuseBelowBoundary RefusalReason = "below-boundary"
)

// RefusalError is why a recovery point cannot be restored. Validate returns
// it wrapped with a hint; find it with errors.As.
type RefusalError struct {
	Reason RefusalReason
	// Marker is the index of the offending marker in Validate's argument
	// (-1 when the refusal is not about one marker).
	Marker int
	// Topic is the bound data topic (or, for RefuseTopic, the marker's).
	Topic string
	// Partition, Requested, Boundary and PlanID describe an offset refusal:
	// the marker needs Requested, the boundary PlanID committed is Boundary.
	Partition int32
	Requested int64
	Boundary  int64
	PlanID    string
	// For RefuseTopic and RefuseTopicID: what the marker says and what the
	// control topic is bound to.
	MarkerTopicID, BoundTopic, BoundTopicID string
	// Degraded is the projection's degraded reason, for RefuseDegraded.
	Degraded string
}

func (e *RefusalError) Error() string {
	switch e.Reason {
	case RefuseBelowBoundary:
		return fmt.Sprintf("Cannot restore Kafka action state for %s-%d from offset %d because the committed cleanup boundary is %d (set by plan %s)",
			e.Topic, e.Partition, e.Requested, e.Boundary, e.PlanID)
	case RefuseMissingPartition:
		return fmt.Sprintf("Cannot restore Kafka action state for %s-%d: the recovery point has no offset for it, and the committed cleanup boundary is %d (set by plan %s)",
			e.Topic, e.Partition, e.Boundary, e.PlanID)
	case RefuseTopic:
		return fmt.Sprintf("Cannot restore Kafka action state for topic %s: this control topic governs topic %s", e.Topic, e.BoundTopic)
	case RefuseTopicID:
		return fmt.Sprintf("Cannot restore Kafka action state for %s: the recovery point is from topic ID %s but this control topic governs topic ID %s",
			e.Topic, e.MarkerTopicID, e.BoundTopicID)
	case RefuseNoMarkers:
		return fmt.Sprintf("Cannot restore Kafka action state for %s: the recovery point has no marker, and a cleanup boundary is committed", e.Topic)
	case RefuseDegraded:
		return "Cannot validate the recovery point: the control-topic projection is degraded: " + e.Degraded
	}
	return fmt.Sprintf("Cannot restore Kafka action state: refused (%s)", e.Reason)
}

// hint is the operator's next step for a refusal.
func (e *RefusalError) hint() string {
	switch e.Reason {
	case RefuseBelowBoundary, RefuseMissingPartition:
		return fmt.Sprintf("restore from a newer checkpoint or savepoint, taken after plan %s was committed: records of %s-%d below offset %d may already be deleted",
			e.PlanID, e.Topic, e.Partition, e.Boundary)
	case RefuseTopic, RefuseTopicID:
		return "check that the recovery point is from the job and topic incarnation this control topic governs; a recreated topic needs its own control topic"
	case RefuseNoMarkers:
		return "pass the recovery point's markers for the action-state topic"
	case RefuseDegraded:
		return "upgrade kcleanup to a version that understands the newer control record, then validate again"
	}
	return ""
}

// Validate is the recovery gate (DESIGN §7): it returns nil when the recovery
// point with these markers may be restored, else the first refusal (markers
// in the order given, partitions ascending) wrapped with a hint; Refusals
// lists them all. Validate does not know whether the projection is caught up
// with the control topic: the caller must only ask a caught-up projection.
func (s *State) Validate(markers []events.Marker) error {
	refusals := s.Refusals(markers)
	if len(refusals) == 0 {
		return nil
	}
	return errors.WithHint(refusals[0], refusals[0].hint())
}

// Refusals returns every reason to refuse the recovery point, one per marker
// and partition, in Validate's order; nil when it may be restored.
func (s *State) Refusals(markers []events.Marker) []*RefusalError {
	if s.degraded {
		return []*RefusalError{{Reason: RefuseDegraded, Marker: -1, Topic: s.topic, Degraded: s.degradedReason}}
	}
	boundary := s.Boundary()
	if len(markers) == 0 && len(boundary) > 0 {
		return []*RefusalError{{Reason: RefuseNoMarkers, Marker: -1, Topic: s.topic}}
	}
	var out []*RefusalError
	for i, m := range markers {
		if s.bound && m.Topic != s.topic {
			out = append(out, &RefusalError{Reason: RefuseTopic, Marker: i, Topic: m.Topic,
				MarkerTopicID: m.TopicID, BoundTopic: s.topic, BoundTopicID: s.topicID})
			continue
		}
		if s.bound && m.TopicID != s.topicID {
			out = append(out, &RefusalError{Reason: RefuseTopicID, Marker: i, Topic: m.Topic,
				MarkerTopicID: m.TopicID, BoundTopic: s.topic, BoundTopicID: s.topicID})
			continue
		}
		for _, p := range boundary.Partitions() {
			b := boundary[p]
			off, ok := m.Offsets[p]
			switch {
			case !ok:
				out = append(out, &RefusalError{Reason: RefuseMissingPartition, Marker: i, Topic: s.topic,
					Partition: p, Requested: -1, Boundary: b, PlanID: s.BoundarySetBy(p)})
			case off < b:
				out = append(out, &RefusalError{Reason: RefuseBelowBoundary, Marker: i, Topic: s.topic,
					Partition: p, Requested: off, Boundary: b, PlanID: s.BoundarySetBy(p)})
			}
		}
	}
	return out
}
