package flinkagents

import (
	"errors"
	"fmt"
	"strings"
)

// Reason names why a record or a control topic cannot be used, in the job's
// terms. Every reason belongs to exactly one class (see Error.Is).
type Reason string

// Reasons the job's own fold or recovery check fails: the job cannot recover
// from this control topic at all (ErrJobFails).
const (
	ReasonNoKey        Reason = "no-key"            // a record without a key
	ReasonTombstone    Reason = "tombstone"         // a record with a null value
	ReasonMalformed    Reason = "malformed"         // the value is not a control record the job parses
	ReasonKeyMismatch  Reason = "key-mismatch"      // the key is not the plan's ID
	ReasonChangedPlan  Reason = "changed-plan"      // another plan under a key already folded
	ReasonRegressed    Reason = "regressed-applied" // COMMITTED after APPLIED under one key
	ReasonEmpty        Reason = "no-boundary"       // no plan at all: the job refuses to recover
	ReasonOtherTopic   Reason = "other-topic"       // a plan for another topic or topic ID
	ReasonPartitionSet Reason = "partition-set"     // a plan for another partition set
	ReasonIncomparable Reason = "incomparable"      // two plans neither of which covers the other
)

// ReasonUnsupported: the record holds something whose meaning to the job
// kcleanup cannot reproduce exactly (bytes that are not UTF-8, which the
// job's deserializer silently replaces). Class ErrCannotTell.
const ReasonUnsupported Reason = "unsupported"

// ReasonBelowBoundary: the recovery point needs a record below the
// effective boundary. Class ErrRefused: the job refuses this recovery point.
const ReasonBelowBoundary Reason = "below-boundary"

// ReasonMarkers: the recovery point's markers do not describe one topic and
// one partition set, which the job also refuses. Class ErrRefused.
const ReasonMarkers Reason = "markers"

// The classes of Error; match them with errors.Is.
var (
	// ErrJobFails: the job's recovery fails on this control topic whatever
	// the recovery point, so nothing is safe to restore.
	ErrJobFails = errors.New("flinkagents: the job's fold of the control topic fails")
	// ErrCannotTell: kcleanup cannot tell what the job makes of the control
	// topic.
	ErrCannotTell = errors.New("flinkagents: cannot tell how the job reads the control topic")
	// ErrRefused: the job refuses this recovery point.
	ErrRefused = errors.New("flinkagents: the job refuses the recovery point")
)

// Error is a precise failure of a record, of the fold or of a recovery
// check.
type Error struct {
	Reason Reason
	// Offset is the control record at fault, -1 when none is.
	Offset int64
	// PlanID is the plan (or key) at fault; Other the second plan of an
	// incomparable pair.
	PlanID, Other string
	// Detail says what exactly is wrong.
	Detail string
	// Topic, Partition, Requested and Boundary describe ReasonBelowBoundary.
	Topic     string
	Partition int32
	Requested int64
	Boundary  int64
}

func (e *Error) Error() string {
	if e.Reason == ReasonBelowBoundary {
		// The job's own words, so operators see one message from both.
		return fmt.Sprintf("Cannot restore Kafka action state for %s-%d from offset %d because the committed cleanup boundary is %d",
			e.Topic, e.Partition, e.Requested, e.Boundary)
	}
	var b strings.Builder
	if e.Offset >= 0 {
		fmt.Fprintf(&b, "control record %d: ", e.Offset)
	}
	b.WriteString(e.Detail)
	return b.String()
}

// Is matches the error's class.
func (e *Error) Is(target error) bool {
	switch e.Reason {
	case ReasonUnsupported:
		return target == ErrCannotTell
	case ReasonBelowBoundary, ReasonMarkers:
		return target == ErrRefused
	}
	return target == ErrJobFails
}

// Hint is the operator's next step.
func (e *Error) Hint() string {
	switch e.Reason {
	case ReasonBelowBoundary:
		return "restore from a newer checkpoint or savepoint: the records this one needs may already be deleted"
	case ReasonMarkers:
		return "pass every marker of one recovery point of the action-state topic"
	case ReasonEmpty:
		return "a Flink Agents job with kafkaActionStateCleanupControlTopic refuses to recover from a control topic without a committed plan: apply a cleanup plan first, or remove the setting"
	case ReasonTopicSettings:
		return "the job refuses this control topic: give it one partition and cleanup.policy=compact (kafka-configs --alter --entity-type topics --add-config cleanup.policy=compact)"
	case ReasonUnsupported:
		return "kcleanup cannot read this record exactly as the job does; inspect it with kafka-console-consumer and have the writer fix it"
	}
	return "the Flink Agents job refuses to recover from this control topic too; a writer broke Flink Agents' rules: find the record above with kafka-console-consumer, and rebuild the control topic from the plans that were really applied"
}

func recordError(off int64, r Reason, planID, format string, args ...any) *Error {
	return &Error{Reason: r, Offset: off, PlanID: planID, Detail: fmt.Sprintf(format, args...)}
}

// ReasonTopicSettings: the control topic is not what the job accepts: it
// must exist with exactly one partition and cleanup.policy=compact exactly.
// Class ErrJobFails.
const ReasonTopicSettings Reason = "topic-settings"

// CheckTopic is the job's check of the control topic itself
// (ensureControlTopic in recovery mode): exactly partition 0, and
// cleanup.policy exactly "compact" ("compact,delete" fails it too).
func CheckTopic(topic string, partitions []int32, cleanupPolicy string) error {
	if len(partitions) != 1 || partitions[0] != 0 {
		return &Error{Reason: ReasonTopicSettings, Offset: -1,
			Detail: fmt.Sprintf("Kafka cleanup control topic %s must have exactly one partition, but has %d", topic, len(partitions))}
	}
	if cleanupPolicy != "compact" {
		return &Error{Reason: ReasonTopicSettings, Offset: -1,
			Detail: fmt.Sprintf("Kafka cleanup control topic %s must use cleanup.policy=compact without delete retention, but has cleanup.policy=%s", topic, cleanupPolicy)}
	}
	return nil
}
