package protocol

import (
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
)

// reviewLog builds a control-topic log record by record (offsets in order).
type reviewLog struct {
	recs []projector.Record
}

func (l *reviewLog) env(env events.Envelope) {
	env.At = time.Date(2026, 12, 1, 9, 0, len(l.recs), 0, time.UTC)
	env.Actor = "other"
	key, value := env.Encode()
	l.recs = append(l.recs, projector.Record{Offset: int64(len(l.recs)), Key: key, Value: value, Timestamp: env.At})
}

func (l *reviewLog) committed(p events.Plan, boundary events.Offsets) {
	l.env(events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Committed, PlanID: p.PlanID, Plan: p, Boundary: boundary})
}

// retraction: a worker's retraction tombstone over key.
func (l *reviewLog) retraction(key []byte) {
	l.recs = append(l.recs, projector.Record{Offset: int64(len(l.recs)), Key: key, Timestamp: time.Date(2026, 12, 1, 9, 0, len(l.recs), 0, time.UTC),
		Headers: []projector.Header{
			{Key: projector.HeaderMaintenance, Value: []byte(projector.MaintenanceRetraction)},
			{Key: projector.HeaderActor, Value: []byte("worker/w1")},
			{Key: projector.HeaderReason, Value: []byte("retraction")},
		}})
}

func (l *reviewLog) fold() *projector.State {
	st := projector.New()
	for _, r := range l.recs {
		st.Step(r)
	}
	return st
}

func reviewPlan(rp string, offs events.Offsets) events.Plan {
	return events.Plan{SourceRecoveryPoint: rp, Topic: dataTopic, TopicID: topicID(1), Offsets: offs,
		PlanID: events.ComputePlanID(rp, dataTopic, topicID(1), offs)}
}

// A view that shows a disputed conflict (projector/testdata/disputed: the
// cleaner removed the winner's first copy, so this reader sees the loser l
// first and accepted, then a worker's retraction of it) cannot tell which
// plan the full log committed. Its mirror sync must not write its
// "boundary plan" to the mirror: l is the full log's loser, incomparable
// with the winner w, so once l is in the mirror the winner can never be
// mirrored (MirrorWrite refuses incomparable plans), nothing is ever
// deleted for w again, and the Flink Agents job enforces l's offsets on
// partition 0 where kcleanup's gate enforces w's (outcome d). Attach
// already refuses a control topic at risk (protocol.AttachMirror); the sync
// must refuse too.
func TestReviewMirrorSyncWritesNothingWhileAtRisk(t *testing.T) {
	w := reviewPlan("CW", events.Offsets{0: 379, 1: 706})
	l := reviewPlan("CL", events.Offsets{0: 667, 1: 531})
	var log reviewLog
	log.env(events.NewMirrorEvent(events.MirrorAttached, events.Mirror{Topic: "action-state.flink", TopicID: topicID(2), Reason: "review"},
		time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), "operator"))
	// What a reader sees in the cleaner's window: l first (accepted), w's
	// later copy (rejected), the retraction of l's key.
	log.committed(l, l.Offsets)
	log.committed(w, w.Offsets)
	lKey, _ := events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Committed, PlanID: l.PlanID, Plan: l, Boundary: l.Offsets}.Encode()
	log.retraction(lKey)
	st := log.fold()
	if risk, _ := st.AtRisk(); !risk {
		t.Fatalf("setup: the disputed view is not at risk: %v", st.Disputed())
	}
	if _, ok := st.Mirror(); !ok {
		t.Fatal("setup: no mirror attached")
	}

	empty := flinkagents.New()
	view := MirrorView{Topic: "action-state.flink", TopicID: topicID(2), Partitions: []int32{0}, CleanupPolicy: "compact", Fold: empty}
	r := NewMirrorSync(Config{ControlTopic: "action-state.kcleanup", Bootstrap: "localhost:9092"})
	var rep Report
	for n := 0; n < 20; n++ {
		step := r.Next(st, rep)
		if step.Kind == WriteMirror {
			t.Fatalf("mirror sync on a view at risk writes %s %s to the mirror (the disputed plan l=%v; the full log's winner is w=%v)",
				step.Mirror.Status, step.Mirror.Plan.PlanID, l.Offsets, w.Offsets)
		}
		if step.Kind.Terminal() {
			if step.Kind == Done {
				t.Fatalf("mirror sync on a view at risk is done, not blocked: %v", step.Notes)
			}
			return
		}
		rep = Report{}
		if step.Kind == ReadMirror {
			rep.Mirror = view
		}
	}
	t.Fatal("mirror sync did not end")
}
