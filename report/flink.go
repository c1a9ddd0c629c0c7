package report

import (
	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
)

// FlinkStatus is a control topic in Flink Agents' format as the job sees
// it: the section "flinkAgents" of the status document.
type FlinkStatus struct {
	// EffectiveBoundary is the per-partition maximum over every plan, the
	// boundary the job enforces; absent when its fold fails.
	EffectiveBoundary events.Offsets `json:"effectiveBoundary,omitempty"`
	// BoundarySetBy is the plan holding each partition's maximum.
	BoundarySetBy map[int32]string `json:"boundarySetBy,omitempty"`
	// Error is why the job's recovery fails on this control topic.
	Error *FlinkError       `json:"error,omitempty"`
	Plans []FlinkPlanStatus `json:"plans"`
}

// FlinkError is a failure of the job's fold, in the job's terms.
type FlinkError struct {
	// Reason is a flinkagents.Reason ("tombstone", "regressed-applied", ...).
	Reason string `json:"reason"`
	// Class is "job-fails" (the job cannot recover from this topic) or
	// "cannot-tell" (kcleanup cannot reproduce what the job does).
	Class   string `json:"class"`
	Offset  *int64 `json:"offset,omitempty"`
	PlanID  string `json:"planId,omitempty"`
	Message string `json:"message"`
	Hint    string `json:"hint"`
}

// FlinkPlanStatus is one plan on a Flink Agents control topic.
type FlinkPlanStatus struct {
	PlanID string             `json:"planId"`
	Status flinkagents.Status `json:"status"`
	// SourceRecoveryPoint, Topic and TopicID are as the job holds them;
	// a lone surrogate shows as U+FFFD here (flinkagents.Quote in tables).
	SourceRecoveryPoint string         `json:"sourceRecoveryPoint"`
	Topic               string         `json:"topic"`
	TopicID             string         `json:"topicId"`
	Offsets             events.Offsets `json:"offsets"`
	// First and Last are the offsets of its first and latest record.
	First int64 `json:"first"`
	Last  int64 `json:"last"`
}

// FlinkStatusOf is the job's view of a fold.
func FlinkStatusOf(fold *flinkagents.Fold) *FlinkStatus {
	out := &FlinkStatus{Plans: []FlinkPlanStatus{}}
	for _, op := range fold.Operations() {
		p := op.Plan
		out.Plans = append(out.Plans, FlinkPlanStatus{PlanID: p.PlanID, Status: op.Status, SourceRecoveryPoint: p.SourceRecoveryPoint,
			Topic: p.Topic, TopicID: p.TopicID, Offsets: p.Offsets, First: op.First, Last: op.Last})
	}
	b, err := fold.Effective()
	if err != nil {
		out.Error = FlinkErrorOf(err)
		return out
	}
	out.EffectiveBoundary, out.BoundarySetBy = b, map[int32]string{}
	for p := range b {
		out.BoundarySetBy[p] = fold.SetBy(p)
	}
	return out
}

// FlinkErrorOf words a flinkagents error for the documents.
func FlinkErrorOf(err error) *FlinkError {
	var fe *flinkagents.Error
	if !errors.As(err, &fe) {
		return &FlinkError{Reason: "unknown", Class: "cannot-tell", Message: err.Error(), Hint: "check the Flink Agents control topic"}
	}
	out := &FlinkError{Reason: string(fe.Reason), Class: "job-fails", PlanID: fe.PlanID, Message: fe.Error(), Hint: fe.Hint()}
	if errors.Is(fe, flinkagents.ErrCannotTell) {
		out.Class = "cannot-tell"
	}
	if fe.Offset >= 0 {
		out.Offset = &fe.Offset
	}
	return out
}
