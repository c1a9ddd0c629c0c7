package projector

import (
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
)

// Record is one control-topic record as the reader delivers it. A nil Value is
// a tombstone; an empty non-nil Value is not (it is malformed).
type Record struct {
	Offset    int64
	Key       []byte
	Value     []byte
	Timestamp time.Time
	// LogAppendTime: Timestamp is the broker's, set when it appended the
	// record (the topic's message.timestamp.type=LogAppendTime, which the
	// record batch's attributes say), not a writer's. Only such a time
	// advances BrokerTime (docs/design.md §12, "The two clocks").
	LogAppendTime bool
	// Headers are the record's Kafka headers. The fold reads only the
	// maintenance headers (HeaderMaintenance, HeaderActor, HeaderReason),
	// to describe a record and, for a retraction tombstone over an accepted
	// COMMITTED, to tell a disputed conflict (State.Disputed), and for a
	// repair of a PINNED after a commit that pin rejected, a pin dispute
	// (pins.go), which change only what Repairs and Retractions list, AtRisk
	// and Disputed: they never change a verdict's outcome, the boundary or an
	// operation's state.
	Headers []Header
}

// Header is one Kafka record header.
type Header struct {
	Key   string
	Value []byte
}

// The headers a kcleanup worker puts on the records it writes to keep the
// log safe to compact (repairs, retraction tombstones, re-commits): a
// tombstone has no value to say who wrote it and why.
const (
	HeaderMaintenance = "kcleanup-maintenance" // MaintenanceRepair, MaintenanceRetraction, ...
	HeaderActor       = "kcleanup-actor"       // the worker that wrote it
	HeaderReason      = "kcleanup-reason"      // why, for a person
	// HeaderRead is the offset (decimal) below which the writer had folded
	// the log when it listed the record: a repair of a PINNED says which of
	// the commits that pin rejected its writer had read and not retracted
	// (a pin dispute, pins.go).
	HeaderRead = "kcleanup-read"
)

// The kinds of maintenance record (HeaderMaintenance).
const (
	// MaintenanceRepair: an accepted record (or evidence) re-appended
	// (Repairs).
	MaintenanceRepair = "repair"
	// MaintenanceRetraction: a tombstone for a key that holds only rejected
	// records (Retractions).
	MaintenanceRetraction = "retraction"
	// MaintenanceRecommit: a COMMITTED re-appended for an operation whose
	// COMMITTED was erased, where nothing more is deleted.
	MaintenanceRecommit = "recommit"
)

// Maintenance is what a record's maintenance headers say: the fleet's own
// upkeep of the log, not another writer's record.
type Maintenance struct {
	Kind   string `json:"kind"`
	Actor  string `json:"actor"`
	Reason string `json:"reason"`
}

// Outcome is what the fold made of one record. Its values are stable words,
// fit for JSON output and metrics labels.
type Outcome string

const (
	// Accepted: the record moved an operation through its lifecycle (or, for
	// a DELETING retry, recorded another attempt).
	Accepted Outcome = "accepted"
	// Duplicate: the key already holds an accepted record with the same
	// content (event, planId, plan, boundary, logStart; not at or actor).
	// Nothing changes. A repair re-append is a duplicate too.
	Duplicate Outcome = "duplicate"
	// Rejected: nothing changes except that the rejection is recorded.
	Rejected Outcome = "rejected"
)

// Reason says why a record was rejected. The values are stable: they appear
// in audits, status output and metrics labels.
type Reason string

// Every reason a record can be rejected for.
const (
	// ReasonMalformed: the value is not a valid schema-1 envelope.
	ReasonMalformed Reason = "malformed"
	// ReasonBadKey: the key is not "<planId>/<EVENT>" or does not match the body.
	ReasonBadKey Reason = "bad-key"
	// ReasonTampered: the plan's content does not hash to its planId.
	ReasonTampered Reason = "tampered"
	// ReasonTombstone: a nil value on a key that holds no accepted record.
	ReasonTombstone Reason = "tombstone"
	// ReasonWrongTopic: a plan for a topic name or topic ID other than the one
	// this control topic is bound to.
	ReasonWrongTopic Reason = "wrong-topic"
	// ReasonUnknownOperation was DELETING or APPLIED for a plan with no
	// operation. This build no longer produces it: such a record is
	// ReasonCommitMissing (evidence of an erased COMMITTED), or
	// ReasonWrongTopic for a plan of another topic. The word stays for
	// readers of older audits and metrics.
	ReasonUnknownOperation Reason = "unknown-operation"
	// ReasonInvalidTransition: the lifecycle (fsm.Next) does not allow the
	// event in the operation's state, even through the steps it implies.
	// DELETING or APPLIED for a PLANNED operation is ReasonCommitMissing
	// instead, so this build produces it only if fsm's table and the fold
	// disagree (a bug); the word stays for readers of older audits.
	ReasonInvalidTransition Reason = "invalid-transition"
	// ReasonBoundaryRegression: a COMMITTED whose plan is below the current
	// boundary on some partition while it would raise another (typically
	// the loser of two conflicting concurrent commits). A commit that raises
	// nothing is not a regression (see Verdict.Covered).
	ReasonBoundaryRegression Reason = "boundary-regression"
	// ReasonBoundaryMismatch: a COMMITTED whose boundary field is below its
	// own plan, or raises the boundary while below it somewhere (typically a
	// concurrent commit computed on an older view: the writer retries).
	ReasonBoundaryMismatch Reason = "boundary-mismatch"
	// ReasonLogStartBelowPlan: an APPLIED whose log-start offsets do not prove
	// that every plan partition was deleted up to the plan offset.
	ReasonLogStartBelowPlan Reason = "log-start-below-plan"
	// ReasonOverwritesAccepted: a record (or tombstone) with the key of an
	// accepted record but other content. Compaction would erase the accepted
	// record, so the key is listed in Repairs until the accepted content is
	// appended again.
	ReasonOverwritesAccepted Reason = "overwrites-accepted"
	// ReasonCommitMissing: a DELETING or APPLIED for a plan whose COMMITTED
	// the log does not hold. Workers write those only after reading the
	// COMMITTED back, so it was accepted and later erased (overwritten, then
	// compacted). The record is kept as evidence: the boundary includes its
	// plan, AtRisk is true, and nothing is deleted for the plan until a
	// COMMITTED is read back (see Operation.Evidence).
	ReasonCommitMissing Reason = "commit-missing"
	// ReasonNewerSchema: a well-formed envelope of a newer schema version;
	// the projection is degraded.
	ReasonNewerSchema Reason = "newer-schema"
	// ReasonUnknownEvent: a schema-1 envelope with an event this build does
	// not know; the projection is degraded.
	ReasonUnknownEvent Reason = "unknown-event"
	// ReasonPinned: a COMMITTED whose plan is above an active pin on a
	// partition the pin protects (rule P4): nothing a pinned recovery point
	// needs is condemned. Detail names the pin and how to unpin it.
	ReasonPinned Reason = "pinned"
	// ReasonUnknownPin: an UNPINNED for a pin the log does not hold.
	ReasonUnknownPin Reason = "unknown-pin"
	// ReasonOutOfOrder: an offset at or below one already folded. The record
	// is ignored and not recorded (see Step).
	ReasonOutOfOrder Reason = "out-of-order"
)

// Reasons lists every rejection reason this build produces, for
// documentation and metrics (not ReasonUnknownOperation or
// ReasonInvalidTransition, which it no longer does).
func Reasons() []Reason {
	return []Reason{
		ReasonMalformed, ReasonBadKey, ReasonTampered, ReasonTombstone,
		ReasonWrongTopic,
		ReasonBoundaryRegression, ReasonBoundaryMismatch, ReasonLogStartBelowPlan,
		ReasonOverwritesAccepted, ReasonCommitMissing, ReasonNewerSchema, ReasonUnknownEvent,
		ReasonPinned, ReasonUnknownPin, ReasonOutOfOrder,
	}
}

// Verdict is the fold's decision about one record.
type Verdict struct {
	Offset int64
	Key    string
	// Event and PlanID are filled in when known, from the envelope or else
	// from the key.
	Event   events.Event
	PlanID  string
	Outcome Outcome
	// Reason is empty unless Outcome is Rejected.
	Reason Reason
	// Detail says, for a person, what was decided and why.
	Detail string
	// At is the envelope's "at", or the record timestamp when the value
	// could not be decoded.
	At    time.Time
	Actor string
	// OperatorReason is why the operator wrote the record (apply --reason,
	// submit --reason: events.Envelope.Reason); "" when it says none. Not
	// to be confused with Reason, the fold's reason for a rejection.
	OperatorReason string
	// Maintenance is set on a duplicate or rejected record that carries a
	// worker's maintenance headers and is what such a record may be: a
	// repair that is a duplicate (or re-appended evidence), a retraction
	// that is a tombstone on a key without an accepted record. Anything
	// else with those headers (an overwrite, say) is judged like any other
	// record and Maintenance stays nil: headers are not proof.
	Maintenance *Maintenance
	// Covered is true for an accepted COMMITTED that raised nothing: its
	// boundary field was at or below the current boundary on every
	// partition (a plan the boundary already covers, or a later copy of an
	// earlier commit in a compacted log). The operation is COMMITTED, the
	// boundary did not move; Detail says "covered by the current boundary".
	Covered bool
}

// Step is one accepted record in an operation's history.
type Step struct {
	Offset int64
	Event  events.Event
	At     time.Time
	Actor  string
	// Reason is why the operator wrote it (apply --reason, submit
	// --reason); "" when the record says none.
	Reason string
}

// Operation is one plan's life on the control topic.
type Operation struct {
	PlanID  string
	Plan    events.Plan
	State   fsm.State
	History []Step
	// Boundary is the cumulative boundary its COMMITTED set (nil before).
	Boundary events.Offsets
	// LogStart holds the log-start offsets its APPLIED reported (nil before).
	LogStart events.Offsets
	// DeleteAttempts counts accepted DELETING records, retries included.
	DeleteAttempts int
	// Implied lists the lifecycle steps no record was accepted for because a
	// later transition implied them: PLANNED by a COMMITTED that came first,
	// DELETING by an APPLIED for a COMMITTED operation. History holds only
	// accepted records.
	Implied []events.Event
	// Covered is true when its COMMITTED raised nothing (Verdict.Covered).
	Covered bool
	// Evidence lists the events (DELETING, APPLIED) whose records survive
	// for this plan although its COMMITTED is not in the log: evidence that
	// the COMMITTED was accepted and erased. Such an operation stays PLANNED
	// (it is never pending: a worker deletes only for a COMMITTED read
	// back), its plan is part of the boundary, and AtRisk is true. Empty
	// once a COMMITTED is accepted.
	Evidence []events.Event
}

// Retraction is a key whose every record was rejected: no record under it
// was ever accepted or a duplicate. Workers append a tombstone for it, so
// that compaction erases the rejected record (see Retractions).
type Retraction struct {
	Key []byte
	// Offset and Timestamp are those of the latest record under the key. A
	// worker waits a grace period after Timestamp before the tombstone, so
	// that a writer retrying under the same key (after a boundary-mismatch)
	// does not race it.
	Offset    int64
	Timestamp time.Time
	// Now: tombstone the key at once, before the repairs, without the
	// grace. It holds a COMMITTED that lost a conflict, and the commit that
	// defeated it has a later copy after it, or Repairs re-appends it: until
	// this tombstone is older than min.compaction.lag, the cleaner may
	// remove the winner's earlier copy and keep the loser (docs/design.md
	// §5), so the sooner it lands the shorter that window, and landing
	// before a repair's copy closes it.
	Now bool
}
