package gate

// Reason says why the gate did not allow a recovery point. The values are
// stable words: they are the "reason" of `kcleanup validate -o json` and of
// POST /v1/validate, and scripts match on them. This file is the only place
// kcleanup defines them.
type Reason string

// Class is what a refusal proves, and so what a pipeline should do next.
type Class string

const (
	// Allowed: every check passed. Exit code 0, HTTP 200.
	Allowed Class = "allowed"
	// Refused: restoring is proved unsafe (records the recovery point needs
	// are deleted, or may be deleted at any moment). Pick another recovery
	// point. Exit code 3, HTTP 409.
	Refused Class = "refused"
	// CannotTell: the gate could not prove safety (the cluster did not
	// answer, the control topic is unreadable or unsafe, the projection is
	// not caught up, degraded or at risk). Fix the cause and ask again; the
	// recovery point itself may be fine. Exit code 4, HTTP 503.
	CannotTell Class = "cannot-tell"
	// Invalid: the question was malformed (HTTP 400) or about a control
	// topic the worker does not serve (HTTP 404). Never a verdict.
	Invalid Class = "invalid"
)

// The control-topic check: what the verdict rests on must be a control topic.
const (
	// ControlTopicMissing: the control topic named explicitly (flag,
	// environment, query) does not exist; a misspelt name proves nothing.
	ControlTopicMissing Reason = "control-topic-missing"
	// ControlTopicUnreadable: the control topic could not be described or
	// read (unreachable cluster, denied ACL, another broker error).
	ControlTopicUnreadable Reason = "control-topic-unreadable"
	// ControlTopicPartitions: the control topic does not have exactly one
	// partition, so it holds no single order of decisions.
	ControlTopicPartitions Reason = "control-topic-partitions"
	// ControlTopicSettings: a setting lets the log cleaner erase decisions or
	// outrun repairs (cleanup.policy, min.compaction.lag.ms,
	// delete.retention.ms; see Settings).
	ControlTopicSettings Reason = "control-topic-settings"
	// TopicMismatch: the control topic governs another data topic than the
	// markers name.
	TopicMismatch Reason = "topic-mismatch"
	// TopicIDMismatch: the control topic governs another incarnation (topic
	// ID) of the markers' topic.
	TopicIDMismatch Reason = "topic-id-mismatch"
	// GovernedElsewhere: another control topic governs the markers' topic
	// incarnation, while this one governs no topic yet (its emptiness proves
	// nothing) or governs the same incarnation (each is blind to the other's
	// boundary).
	GovernedElsewhere Reason = "governed-elsewhere"
)

// The logical check: the committed boundary.
const (
	// BelowBoundary: a marker needs records below the committed boundary.
	BelowBoundary Reason = "below-boundary"
	// MissingPartition: a partition of the committed boundary has no offset
	// in a marker.
	MissingPartition Reason = "missing-partition"
	// NoMarkers: there is no marker to compare with the boundary.
	NoMarkers Reason = "no-markers"
	// UnconfirmedBoundary: a marker is below a part of the boundary that only
	// evidence holds up (a DELETING or APPLIED whose COMMITTED is not in the
	// log: projector.State.Unconfirmed). An erased commit and a record nobody
	// committed look the same, so the gate cannot tell.
	UnconfirmedBoundary Reason = "unconfirmed-boundary"
)

// The physical check: the live data topic still holds every record.
const (
	// DataTopicMissing: the markers' data topic does not exist.
	DataTopicMissing Reason = "data-topic-missing"
	// DataTopicUnreadable: the data topic's metadata or offsets could not be
	// read.
	DataTopicUnreadable Reason = "data-topic-unreadable"
	// TopicRecreated: the live topic ID is not the markers' (the topic was
	// deleted and recreated).
	TopicRecreated Reason = "topic-recreated"
	// UnknownPartition: a marker names a partition the topic does not have.
	UnknownPartition Reason = "unknown-partition"
	// UncoveredPartition: the topic has a partition no marker has an offset
	// for.
	UncoveredPartition Reason = "uncovered-partition"
	// OutOfRange: a marker offset is outside the partition's live
	// [log start, high watermark].
	OutOfRange Reason = "out-of-range"
)

// Failing closed: what the gate could not read.
const (
	// NotCaughtUp: the projection could not prove it read the control topic
	// to its end.
	NotCaughtUp Reason = "not-caught-up"
	// Degraded: a record from a newer kcleanup; nothing is proved safe.
	Degraded Reason = "degraded"
	// HistoryAtRisk: accepted history is missing, or may be erased by the
	// log cleaner before it is repaired (projector.State.AtRisk).
	HistoryAtRisk Reason = "history-at-risk"
	// UnreadableRecords: the control topic holds records the fold rejects as
	// unreadable (malformed, bad key, tampered): they are evidence of
	// nothing, so "no boundary" cannot be concluded.
	UnreadableRecords Reason = "unreadable-records"
	// ForeignFormat: the control topic holds records in another tool's
	// control format (today: Flink Agents' own cleanup tool) that cannot be
	// trusted: mixed with kcleanup's records (neither fold holds), or, in a
	// topic wholly in that format, a failure of the job's own fold (the job
	// cannot recover from it either; flink.go).
	ForeignFormat Reason = "foreign-format"
	// ShuttingDown: the worker asked is shutting down (HTTP only).
	ShuttingDown Reason = "shutting-down"
	// CheckpointUnreadable: the recovery point was given as a checkpoint or
	// savepoint (--checkpoint) and its markers could not be read: a missing
	// or unreachable file, a format this reader does not know, no operator
	// or several holding the markers, a legacy or invalid marker, a subtask
	// without one. Nothing about its safety is proved.
	CheckpointUnreadable Reason = "checkpoint-unreadable"
)

// Answers that are not verdicts (HTTP only).
const (
	// BadRequest: the markers or the query are malformed (HTTP 400).
	BadRequest Reason = "bad-request"
	// UnknownControlTopic: the worker does not serve the control topic named
	// (HTTP 404).
	UnknownControlTopic Reason = "unknown-control-topic"
	// CheckpointForbidden: the checkpoint named is outside the worker's
	// --checkpoint-root locations, or the caller is not authenticated to make
	// the worker read one (HTTP 403).
	CheckpointForbidden Reason = "checkpoint-forbidden"
)

// table is the one list of reasons: each with its class, in the order the
// gate checks. Reasons, Class, the verdict schema's enum
// (TestSchemaMatchesTheDocument) and the operator guide's table of the gate
// and deploy.md's HTTP table (TestDocsListEveryReason) all follow it; a
// reason added here and nowhere else fails those tests.
var table = []struct {
	reason Reason
	class  Class
}{
	{ControlTopicMissing, CannotTell},
	{ControlTopicUnreadable, CannotTell},
	{ControlTopicPartitions, CannotTell},
	{ControlTopicSettings, CannotTell},
	{TopicMismatch, CannotTell},
	{TopicIDMismatch, CannotTell},
	{GovernedElsewhere, CannotTell},

	{BelowBoundary, Refused},
	{MissingPartition, Refused},
	{NoMarkers, Refused},
	{UnconfirmedBoundary, CannotTell},

	{DataTopicMissing, Refused},
	{DataTopicUnreadable, CannotTell},
	{TopicRecreated, Refused},
	{UnknownPartition, Refused},
	{UncoveredPartition, Refused},
	{OutOfRange, Refused},

	{NotCaughtUp, CannotTell},
	{Degraded, CannotTell},
	{HistoryAtRisk, CannotTell},
	{UnreadableRecords, CannotTell},
	{ForeignFormat, CannotTell},
	{ShuttingDown, CannotTell},
	{CheckpointUnreadable, CannotTell},

	{BadRequest, Invalid},
	{UnknownControlTopic, Invalid},
	{CheckpointForbidden, Invalid},
}

// Class is the class of a reason; an unknown reason is CannotTell, so that a
// reason added without a class still fails closed.
func (r Reason) Class() Class {
	for _, e := range table {
		if e.reason == r {
			return e.class
		}
	}
	return CannotTell
}

// Reasons lists every reason, in the order the gate checks, for docs and tests.
func Reasons() []Reason {
	out := make([]Reason, len(table))
	for i, e := range table {
		out[i] = e.reason
	}
	return out
}

// ExitCode is the process exit code of `kcleanup validate` for a class:
// 0 allowed, 3 refused, 2 invalid (the CLI's usage code), 4 cannot tell (and
// any unknown class). The CLI's only class→code map. Contract C1: never
// renumber.
func (c Class) ExitCode() int {
	switch c {
	case Allowed:
		return 0
	case Refused:
		return 3
	case Invalid:
		return 2
	}
	return 4
}

// HTTPStatus is the status of a POST /v1/validate answer for a class:
// 200 allowed, 409 refused, 503 cannot tell, 400 invalid.
func (c Class) HTTPStatus() int {
	switch c {
	case Allowed:
		return 200
	case Refused:
		return 409
	case Invalid:
		return 400
	}
	return 503
}
