package report

import (
	"slices"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
)

// StatusSchemaVersion versions the status document (docs/schema/status.schema.json).
// A field may be added without a new version; renaming or removing one, or
// changing what it holds, needs a new version. Version 2: by default
// operations and rejected list a view, not everything (Complete says which),
// with counts of everything.
const StatusSchemaVersion = 2

// The default view of the status document lists every operation that is not
// APPLIED and, of the others, the RecentOperations most recent; and the
// RecentRejected most recent rejected records. Counts cover everything.
const (
	RecentOperations = 20
	RecentRejected   = 20
)

// StalePlanned is how long a PLANNED operation stays in the default view
// after its last record. A PLANNED commits nothing and deletes nothing: it
// is an apply interrupted before its commit, or a submitted plan nobody
// applied, and past this age it only hides what needs attention. The
// complete document (status --all, /v1/status?all=true) and history keep
// it, and `kcleanup apply` of its plan file still continues it; nothing is
// written to the control topic to age it out.
const StalePlanned = 7 * 24 * time.Hour

// Status is the state of one control topic as `kcleanup status -o json`
// prints it and a worker serves it at /v1/status: one document, one shape,
// built by StatusOf for both.
type Status struct {
	SchemaVersion int    `json:"schemaVersion"`
	ControlTopic  string `json:"controlTopic"`
	// Topic and TopicID are the data topic this control topic governs (empty
	// until the first PLANNED is accepted).
	Topic   string `json:"topic,omitempty"`
	TopicID string `json:"topicId,omitempty"`
	// ReadTo is the offset after the last control record folded.
	ReadTo         int64  `json:"readTo"`
	Degraded       bool   `json:"degraded"`
	DegradedReason string `json:"degradedReason,omitempty"`
	// Boundary is the committed boundary per partition, and BoundarySetBy
	// the plan whose commit last raised each partition.
	Boundary      events.Offsets   `json:"boundary"`
	BoundarySetBy map[int32]string `json:"boundarySetBy"`
	// Complete is true when Operations and Rejected list everything
	// (status --all, /v1/status?all=true). In the default view it is false:
	// Operations lists every operation not APPLIED and the RecentOperations
	// most recent others, Rejected the RecentRejected most recent rejected
	// records, and the Omitted counts say how many are left out.
	Complete          bool              `json:"complete"`
	Operations        []OperationStatus `json:"operations"`
	OperationCounts   map[fsm.State]int `json:"operationCounts"`
	OperationsOmitted int               `json:"operationsOmitted"`
	// StalePlanned counts the PLANNED operations the default view leaves
	// out because their last record is older than StalePlanned (they are
	// in OperationsOmitted too).
	StalePlanned int              `json:"stalePlanned,omitempty"`
	Rejected     []RejectedRecord `json:"rejected"`
	// RejectedCounts counts every rejected record by reason.
	RejectedCounts  map[projector.Reason]int `json:"rejectedCounts"`
	RejectedOmitted int                      `json:"rejectedOmitted"`
	// Maintenance lists the records the fleet wrote to keep the log safe to
	// compact (retraction tombstones, re-appended evidence; repairs that are
	// duplicates only where the projection keeps its audit), with the
	// worker and why, from their record headers. They are not in Rejected.
	// MaintenanceCounts counts them all by kind (repair, retraction,
	// recommit), duplicates included.
	Maintenance       []MaintenanceRecord `json:"maintenance"`
	MaintenanceCounts map[string]int      `json:"maintenanceCounts"`
	// AtRisk says that accepted history is missing from the control topic
	// or may be erased by the log cleaner (projector.State.AtRisk): the
	// recovery gate cannot tell while it is set. AtRiskReason says what.
	AtRisk       bool   `json:"atRisk"`
	AtRiskReason string `json:"atRiskReason,omitempty"`
	// Blocked lists the operations a worker stopped retrying for a cause an
	// operator must remove, each with its fix (Hints). Only the worker that
	// owns the control topic knows them all; `kcleanup status` lists those
	// the control topic's unsafe settings block (BlockedBySettings).
	Blocked []BlockedOperation `json:"blocked"`
	// RestoreGrace lists the operations the owning worker holds back until
	// the restore grace is out (worker only: protocol.RestoreGrace).
	RestoreGrace []GraceOperation `json:"restoreGrace,omitempty"`
	// Retrying lists the operations the owning worker retries on its own
	// schedule, for a cause that may pass by itself (a request that failed, a
	// tombstone watch or a settings read that cannot tell yet), each with the
	// last reason and when it retries (worker only). Without it a plan held
	// that way showed as COMMITTED with no word of why.
	Retrying []BlockedOperation `json:"retrying,omitempty"`
	// UnrepairedKeys counts accepted records listed for repair (key overwritten, or out of order) and
	// not yet re-appended (a worker repairs them).
	UnrepairedKeys int `json:"unrepairedKeys"`
	// Repairs lists those records: the key and the offset of the accepted
	// record a worker re-appends, oldest first.
	Repairs []PendingRepair `json:"repairs"`
	// Retractions lists the keys whose every record was rejected: a worker
	// tombstones each once RetractionGrace has passed since its record.
	Retractions []PendingRetraction `json:"retractions"`
	// Format is the control format of the records read: "kcleanup",
	// "flink-agents" or "mixed" (absent while the topic is empty).
	Format projector.Format `json:"format,omitempty"`
	// FlinkAgents is the topic folded by Flink Agents' own rules, when it is
	// in that format (docs/flink-agents.md): the rest of the document is
	// kcleanup's fold, which rejects every such record.
	FlinkAgents *FlinkStatus `json:"flinkAgents,omitempty"`
	// MirrorOf names the kcleanup control topics that keep this topic as
	// their Flink Agents mirror (their MIRROR_ATTACHED names it): the
	// topic a job reads, written by kcleanup, whose decisions are those
	// control topics'. StatusOf cannot fill it (it needs other topics'
	// reads): the reader sets it.
	MirrorOf []string `json:"mirrorOf,omitempty"`
	// Mirror is how the attached Flink Agents mirror stands against the
	// boundary (absent when none is attached). StatusOf cannot fill it (it
	// needs a read of the mirror topic): the reader that built the status
	// sets it (worker.Cluster.AssessMirror).
	Mirror *protocol.MirrorAssessment `json:"mirror,omitempty"`
	// Pins lists every pinned recovery point, in log order (PinsOf).
	Pins []PinStatus `json:"pins"`
	// NoTombstones is the operator's no-tombstones declaration, in force or
	// withdrawn (DeclarationOf; absent when the log holds none).
	NoTombstones *DeclarationStatus `json:"noTombstones,omitempty"`
	// RetentionPolicy is the latest retention policy the log holds, active
	// or cleared (absent when none was ever set); what the owner's last
	// round of it decided is the worker's (TopicStatus.Retention).
	RetentionPolicy *RetentionStatus `json:"retentionPolicy,omitempty"`
	// PinHolds lists the operations whose deletion a pin holds back by the
	// broker's clock (PinHoldsOf; absent when none).
	PinHolds []PinHoldStatus `json:"pinHolds,omitempty"`
	// ClockAhead lists the COMMITTED records stamped ahead of the broker's
	// time by more than the tolerance (ClockAheadOf; absent when none).
	ClockAhead []ClockAheadRecord `json:"clockAhead,omitempty"`
	// MirrorGrace is the restore grace the attached mirror's attachment
	// carries (absent with no mirror attached).
	MirrorGrace *MirrorGraceStatus `json:"mirrorGrace,omitempty"`
}

// PendingRepair is an accepted record a worker will append again, so that
// compaction keeps it (docs/design.md §5).
type PendingRepair struct {
	Key string `json:"key"`
	// KeyBytes is the length of a key the default view cut at TextLimit
	// bytes (absent when whole).
	KeyBytes int `json:"keyBytes,omitempty"`
	// Offset is that of the accepted record being repaired.
	Offset int64 `json:"offset"`
}

// PendingRetraction is a key holding only rejected records, which a worker
// will tombstone.
type PendingRetraction struct {
	Key      string `json:"key"`
	KeyBytes int    `json:"keyBytes,omitempty"` // as PendingRepair's
	// Offset and At are those of the latest record under the key (At is its
	// Kafka timestamp: the grace is counted from it).
	Offset int64     `json:"offset"`
	At     time.Time `json:"at"`
}

// OperationStatus is one plan's life on the control topic.
type OperationStatus struct {
	PlanID              string         `json:"planId"`
	State               fsm.State      `json:"state"`
	SourceRecoveryPoint string         `json:"sourceRecoveryPoint"`
	Offsets             events.Offsets `json:"offsets"`
	// Boundary is the cumulative boundary its COMMITTED set.
	Boundary events.Offsets `json:"boundary,omitempty"`
	// LogStart holds the verified log-start offsets its APPLIED reported.
	LogStart       events.Offsets `json:"logStart,omitempty"`
	DeleteAttempts int            `json:"deleteAttempts"`
	// UpdatedAt and UpdatedBy are the "at" and "actor" of its last accepted record.
	UpdatedAt time.Time `json:"updatedAt"`
	UpdatedBy string    `json:"updatedBy"`
	// Offset is the control-topic offset of its last accepted record.
	Offset int64 `json:"offset"`
	// History is every accepted record of the operation in log order (a
	// DELETING retry is one more step); Implied, the steps no record was
	// accepted for because a later one implied them (projector.Operation).
	History []StepStatus   `json:"history"`
	Implied []events.Event `json:"implied,omitempty"`
}

// StepStatus is one accepted record in an operation's history.
type StepStatus struct {
	Offset int64        `json:"offset"`
	Event  events.Event `json:"event"`
	At     time.Time    `json:"at"`
	Actor  string       `json:"actor"`
	// Reason is why the operator wrote this PLANNED or COMMITTED (apply --reason, submit
	// --reason); absent when it gave none.
	Reason string `json:"reason,omitempty"`
}

// RejectedRecord is one control record the fold rejected.
type RejectedRecord struct {
	Offset int64  `json:"offset"`
	Key    string `json:"key"`
	// KeyBytes and DetailBytes are the lengths of a key and a detail the
	// default view cut at TextLimit bytes (absent when whole): a record's
	// writer chose them, up to a megabyte.
	KeyBytes    int              `json:"keyBytes,omitempty"`
	Reason      projector.Reason `json:"reason"`
	Detail      string           `json:"detail"`
	DetailBytes int              `json:"detailBytes,omitempty"`
	At          time.Time        `json:"at"`
	Actor       string           `json:"actor,omitempty"`
}

// MaintenanceRecord is one record a worker wrote to keep the log safe to
// compact, as its headers describe it.
type MaintenanceRecord struct {
	Offset   int64             `json:"offset"`
	Key      string            `json:"key"`
	KeyBytes int               `json:"keyBytes,omitempty"` // as PendingRepair's
	Kind     string            `json:"kind"`
	Actor    string            `json:"actor"`
	Reason   string            `json:"reason"`
	Verdict  projector.Outcome `json:"verdict"`
	At       time.Time         `json:"at"`
}

// BlockedOperation is an operation a worker will not retry until RetryAt,
// because its last attempt failed for a cause retrying cannot fix.
type BlockedOperation struct {
	PlanID string `json:"planId"`
	Reason string `json:"reason"`
	// Hints are the fixes, each the exact command where there is one
	// (kafka-configs for a setting, kafka-acls for an ACL): what the
	// worker's log says beside the reason.
	Hints []string `json:"hints,omitempty"`
	// Since and RetryAt are the worker's: when the operation first failed,
	// and when it is tried again. `kcleanup status` finds a block itself
	// (BlockedBySettings), so it has neither.
	Since   time.Time `json:"since,omitzero"`
	RetryAt time.Time `json:"retryAt,omitzero"`
}

// GraceOperation is an operation whose deletion waits out the restore
// grace (--restore-grace): nothing is deleted for it before Until, Since
// plus the grace. Since is when the brokers made the mirror's record of the
// plan readable (TimeKnown), or when the worker first saw it.
type GraceOperation struct {
	PlanID    string    `json:"planId"`
	Mirror    string    `json:"mirror"`
	Since     time.Time `json:"since"`
	TimeKnown bool      `json:"timeKnown"`
	Until     time.Time `json:"until"`
}

// BlockedBySettings lists every operation of st a worker would drive
// (COMMITTED or DELETING) as blocked by the control topic's settings:
// reason and hints come from the error that refuses them (nothing when
// there is none). `kcleanup status` shows it, as the owner's /v1/status does.
func BlockedBySettings(st Status, reason string, hints []string) []BlockedOperation {
	out := []BlockedOperation{}
	if reason == "" {
		return out
	}
	for _, op := range st.Operations {
		if op.State == fsm.Committed || op.State == fsm.Deleting {
			out = append(out, BlockedOperation{PlanID: op.PlanID, Reason: reason, Hints: slices.Clone(hints)})
		}
	}
	return out
}

// Source is what a status document is built from: the pure read of one
// control topic (worker.Projection.Source).
type Source struct {
	ControlTopic string
	View         *projector.View
	// ReadTo is the offset after the last control record read.
	ReadTo int64
	// Now is the reader's clock when the document is built: the default
	// view leaves out PLANNED operations whose last record is older than
	// StalePlanned before it. Zero leaves none out.
	Now time.Time
	// AheadTolerance is how far a COMMITTED's "at" may run ahead of its
	// broker time before ClockAhead lists it (0: DefaultAheadTolerance).
	AheadTolerance time.Duration
}

// StatusOf builds the complete status document of a projection (status
// --all, /v1/status?all=true): every operation and rejected record. It reads
// the projection and must run on the goroutine that folds into it. Lists are
// never null, so a consumer can iterate them without a check.
func StatusOf(src Source) Status { return statusOf(src, true) }

// SummaryOf builds the default view of the status document, which stays
// small however long the history: the boundary, every operation not APPLIED,
// the most recent others and rejected records, and counts of everything.
func SummaryOf(src Source) Status { return statusOf(src, false) }

func statusOf(src Source, complete bool) Status {
	s := src.View.State
	st := Status{
		SchemaVersion:   StatusSchemaVersion,
		ControlTopic:    src.ControlTopic,
		ReadTo:          src.ReadTo,
		Boundary:        s.Boundary(),
		BoundarySetBy:   map[int32]string{},
		Complete:        complete,
		Operations:      []OperationStatus{},
		OperationCounts: s.OperationCounts(),
		Rejected:        []RejectedRecord{},
		RejectedCounts:  s.RejectedCounts(),
		Blocked:         []BlockedOperation{},
		Repairs:         []PendingRepair{},
		Retractions:     []PendingRetraction{},
	}
	st.Topic, st.TopicID, _ = s.Binding()
	st.Pins = PinsOf(s)
	st.NoTombstones = DeclarationOf(s)
	if p, ok := s.Retention(); ok {
		rs := RetentionStatusOf(p)
		st.RetentionPolicy = &rs
	}
	st.PinHolds = PinHoldsOf(s)
	if ahead := ClockAheadOf(s, src.AheadTolerance); len(ahead) > 0 {
		st.ClockAhead = ahead
	}
	st.MirrorGrace = MirrorGraceOf(s)
	st.Format = src.View.Format()
	if fold := src.View.Flink(); fold != nil {
		st.FlinkAgents = FlinkStatusOf(fold)
	}
	st.Degraded, st.DegradedReason = s.Degraded()
	for p := range st.Boundary {
		st.BoundarySetBy[p] = s.BoundarySetBy(p)
	}
	// Only the view asked for is exported: exporting every operation to
	// throw most away cost the default view most of its memory.
	ops, rejected := s.Unfinished(RecentOperations), s.RecentRejected(RecentRejected)
	if complete {
		ops, rejected = s.Operations(), s.Rejected()
	} else if !src.Now.IsZero() {
		ops = slices.DeleteFunc(ops, func(op projector.Operation) bool {
			stale := op.State == fsm.Planned && len(op.History) > 0 && src.Now.Sub(op.History[len(op.History)-1].At) > StalePlanned
			if stale {
				st.StalePlanned++
			}
			return stale
		})
	}
	for _, op := range ops {
		os := OperationStatus{
			PlanID:              op.PlanID,
			State:               op.State,
			SourceRecoveryPoint: op.Plan.SourceRecoveryPoint,
			Offsets:             op.Plan.Offsets,
			Boundary:            op.Boundary,
			LogStart:            op.LogStart,
			DeleteAttempts:      op.DeleteAttempts,
			History:             make([]StepStatus, 0, len(op.History)),
			Implied:             op.Implied,
		}
		for _, h := range op.History {
			os.History = append(os.History, StepStatus{Offset: h.Offset, Event: h.Event, At: h.At, Actor: h.Actor, Reason: h.Reason})
		}
		if n := len(op.History); n > 0 {
			last := op.History[n-1]
			os.UpdatedAt, os.UpdatedBy, os.Offset = last.At, last.Actor, last.Offset
		}
		st.Operations = append(st.Operations, os)
	}
	st.Maintenance, st.MaintenanceCounts = []MaintenanceRecord{}, map[string]int{}
	for _, v := range s.MaintenanceRecords() {
		m := v.Maintenance
		rec := MaintenanceRecord{Offset: v.Offset, Kind: m.Kind, Actor: m.Actor, Reason: m.Reason, Verdict: v.Outcome, At: v.At}
		rec.Key, rec.KeyBytes = clipField(v.Key, complete) // a retraction carries the junk key it tombstones
		st.Maintenance = append(st.Maintenance, rec)
	}
	for k, n := range s.MaintenanceCounts() {
		st.MaintenanceCounts[k] = n
	}
	st.AtRisk, st.AtRiskReason = s.AtRisk()
	for _, v := range rejected {
		r := RejectedRecord{Offset: v.Offset, Reason: v.Reason, At: v.At, Actor: v.Actor}
		r.Key, r.KeyBytes = clipField(v.Key, complete)
		r.Detail, r.DetailBytes = clipField(v.Detail, complete)
		st.Rejected = append(st.Rejected, r)
	}
	for _, n := range st.OperationCounts {
		st.OperationsOmitted += n
	}
	st.OperationsOmitted -= len(st.Operations)
	for _, n := range st.RejectedCounts {
		st.RejectedOmitted += n
	}
	st.RejectedOmitted -= len(st.Rejected)
	for _, r := range s.Repairs() {
		rep := PendingRepair{Offset: r.Offset}
		rep.Key, rep.KeyBytes = clipField(string(r.Key), complete)
		st.Repairs = append(st.Repairs, rep)
	}
	st.UnrepairedKeys = len(st.Repairs)
	for _, r := range s.Retractions() {
		ret := PendingRetraction{Offset: r.Offset, At: r.Timestamp}
		ret.Key, ret.KeyBytes = clipField(string(r.Key), complete)
		st.Retractions = append(st.Retractions, ret)
	}
	return st
}

// Why is the operator's reason for the operation, as views show it: its COMMITTED's when it
// has one, else its PLANNED's ("" when neither gave one), and who wrote that record.
func (o OperationStatus) Why() (reason, by string) {
	for _, e := range []events.Event{events.Committed, events.Planned} {
		for _, h := range o.History {
			if h.Event == e {
				return h.Reason, h.Actor
			}
		}
	}
	return "", ""
}
