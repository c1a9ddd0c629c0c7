package events

import "time"

// SchemaVersion is the only plan, marker and envelope version this build understands.
const SchemaVersion = 1

// Offsets maps a partition number to an offset.
type Offsets map[int32]int64

// Plan is the Flink-Agents-compatible cleanup plan (docs/design.md §3).
type Plan struct {
	PlanID              string
	SourceRecoveryPoint string
	Topic               string
	TopicID             string
	Offsets             Offsets
}

// Marker is what one job subtask recorded in a recovery point (docs/design.md §2).
type Marker struct {
	Topic   string
	TopicID string
	Offsets Offsets
	// Source says which checkpoint, operator and subtask the marker was read from, when the
	// tool that read it says (kcleanup markers --checkpoint); nil for hand-written markers.
	// It never enters a plan: it lets plan, validate and pin check that the markers are every
	// subtask's of one checkpoint (CheckSubtasks).
	Source *MarkerSource
}

// MarkerSource is where in a Flink checkpoint one marker was read.
type MarkerSource struct {
	CheckpointID int64
	// The operator that holds the marker state: its uid, its uid hash (Flink's operator ID,
	// 32 lowercase hex digits), or both; at least one.
	OperatorUID     string
	OperatorUIDHash string
	Parallelism     int32 // 1 to MaxParallelism
	Subtask         int32 // 0 to Parallelism-1
}

// MaxParallelism is Flink's upper bound of an operator's (max) parallelism, 2^15.
const MaxParallelism = 1 << 15

// Event names one transition of an operation on the control topic.
type Event string

// The four transitions, in lifecycle order.
const (
	Planned   Event = "PLANNED"
	Committed Event = "COMMITTED"
	Deleting  Event = "DELETING"
	Applied   Event = "APPLIED"
)

// lifecycle is the four transitions in lifecycle order: the one list of
// them below fsm (fsm.Events, the lifecycle's owner, is checked against it
// by TestEventsAreTheLifecycle; events cannot import fsm).
var lifecycle = [...]Event{Planned, Committed, Deleting, Applied}

// Lifecycle returns the four transitions in lifecycle order.
func Lifecycle() []Event { return lifecycle[:] }

// Envelope is the value of every control-topic record: a full snapshot of the
// operation at that transition (docs/design.md §4).
type Envelope struct {
	SchemaVersion int
	Event         Event
	PlanID        string
	Plan          Plan
	At            time.Time
	Actor         string
	// Reason is why the operator wrote a PLANNED or COMMITTED (apply
	// --reason, submit --reason); "" for none, and always "" on the other
	// events. A record with one is ReasonSchemaVersion. Like At and Actor it
	// is not content: a retry with another reason is a duplicate.
	Reason string
	// Boundary is the cumulative boundary after a COMMITTED; nil for other events.
	Boundary Offsets
	// LogStart holds the log-start offsets observed before APPLIED; nil for other events.
	LogStart Offsets
	// Mirror is the body of a mirror event (MirrorAttached, MirrorDetached;
	// SchemaVersion MirrorSchemaVersion, no plan); nil for the others.
	Mirror *Mirror
	// Pin is the body of a pin event (Pinned, Unpinned; SchemaVersion
	// PinSchemaVersion, no plan); nil for the others.
	Pin *Pin
	// Declaration is the body of a no-tombstones declaration event
	// (NoTombstonesDeclared, NoTombstonesWithdrawn; SchemaVersion
	// DeclarationSchemaVersion, no plan); nil for the others.
	Declaration *Declaration
	// Retention is the body of a retention event (RetentionSet,
	// RetentionCleared; SchemaVersion RetentionSchemaVersion, no plan);
	// nil for the others.
	Retention *Retention
}
