package report

import (
	"fmt"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
)

// statusLog folds applied operations, then one committed and one planned,
// with rejected records between them, into a projection.
func statusLog(t *testing.T, applied, rejected int) Source {
	t.Helper()
	s := projector.NewView()
	off := int64(0)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	step := func(env events.Envelope) {
		k, v := env.Encode()
		s.Step(projector.Record{Offset: off, Key: k, Value: v, Timestamp: at})
		off++
	}
	op := func(i int, last events.Event) {
		o := events.Offsets{0: int64(10 * (i + 1)), 1: int64(10 * (i + 1))}
		p := events.Plan{SourceRecoveryPoint: fmt.Sprintf("chk-%d", i), Topic: "action-state", TopicID: "MTIzNDU2Nzg5MDEyMzQ1Ng", Offsets: o}
		p.PlanID = events.ComputePlanID(p.SourceRecoveryPoint, p.Topic, p.TopicID, p.Offsets)
		for _, e := range []events.Event{events.Planned, events.Committed, events.Deleting, events.Applied} {
			env := events.Envelope{SchemaVersion: 1, Event: e, PlanID: p.PlanID, Plan: p, At: at, Actor: "w/1"}
			switch e {
			case events.Committed:
				env.Boundary = o
			case events.Applied:
				env.LogStart = o
			}
			step(env)
			if e == last {
				return
			}
		}
	}
	for i := range applied {
		op(i, events.Applied)
		if i < rejected {
			s.Step(projector.Record{Offset: off, Key: []byte(fmt.Sprintf("junk-%d", i)), Value: []byte("{}"), Timestamp: at})
			off++
		}
	}
	op(applied, events.Committed)
	op(applied+1, events.Planned)
	return Source{ControlTopic: "action-state.kcleanup", View: s, ReadTo: off}
}

func TestSummaryOfStaysSmallAndCountsEverything(t *testing.T) {
	proj := statusLog(t, 30, 25)
	full, sum := StatusOf(proj), SummaryOf(proj)
	if !full.Complete || sum.Complete {
		t.Fatalf("complete: full %v, summary %v", full.Complete, sum.Complete)
	}
	if len(full.Operations) != 32 || full.OperationsOmitted != 0 || len(full.Rejected) != 25 || full.RejectedOmitted != 0 {
		t.Fatalf("full: %d operations (%d omitted), %d rejected (%d omitted)", len(full.Operations), full.OperationsOmitted, len(full.Rejected), full.RejectedOmitted)
	}
	// Every operation not APPLIED, and the most recent ones.
	if got := len(sum.Operations); got != RecentOperations {
		t.Fatalf("summary lists %d operations, want %d", got, RecentOperations)
	}
	states := map[fsm.State]int{}
	for _, op := range sum.Operations {
		states[op.State]++
	}
	if states[fsm.Committed] != 1 || states[fsm.Planned] != 1 {
		t.Fatalf("summary states %v: the COMMITTED and PLANNED operations must be listed", states)
	}
	if last := sum.Operations[len(sum.Operations)-1]; last.PlanID != full.Operations[len(full.Operations)-1].PlanID {
		t.Fatalf("summary does not end with the most recent operation")
	}
	if sum.OperationsOmitted != 32-RecentOperations || sum.OperationCounts[fsm.Applied] != 30 || full.OperationCounts[fsm.Applied] != 30 {
		t.Fatalf("summary omits %d, counts %v", sum.OperationsOmitted, sum.OperationCounts)
	}
	if len(sum.Rejected) != RecentRejected || sum.RejectedOmitted != 25-RecentRejected || sum.RejectedCounts[projector.ReasonMalformed] != 25 {
		t.Fatalf("summary rejected %d, omitted %d, counts %v", len(sum.Rejected), sum.RejectedOmitted, sum.RejectedCounts)
	}
	if sum.Rejected[len(sum.Rejected)-1] != full.Rejected[len(full.Rejected)-1] || sum.Rejected[0] != full.Rejected[25-RecentRejected] {
		t.Fatal("summary does not list the most recent rejected records in log order")
	}
	// A short history is shown whole either way.
	small := SummaryOf(statusLog(t, 3, 2))
	if len(small.Operations) != 5 || small.OperationsOmitted != 0 || len(small.Rejected) != 2 {
		t.Fatalf("small summary: %d operations, %d omitted, %d rejected", len(small.Operations), small.OperationsOmitted, len(small.Rejected))
	}
}
