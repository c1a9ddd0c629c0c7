package protocol

import (
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
)

// TestReviewNoWaitApplyChecksTheMirrorBeforeCommitted: `kcleanup apply
// --no-wait` (NoWait without FinishAfter, the submit-and-let-the-workers-
// finish path) checks the attached mirror before COMMITTED like every apply.
// It once skipped it: with a mirror that cannot take the plan (here another
// writer's incomparable plan on it) the plan was committed, the workers could
// never finish it, and kcleanup's gate refused recovery points the job
// pointed at the mirror restores, until an operator detached the mirror.
func TestReviewNoWaitApplyChecksTheMirrorBeforeCommitted(t *testing.T) {
	p := reviewPlan("C1", events.Offsets{0: 150, 1: 100})
	r1 := reviewPlan("R1", events.Offsets{0: 140, 1: 130})
	var log reviewLog
	log.env(events.NewMirrorEvent(events.MirrorAttached, events.Mirror{Topic: "action-state.flink", TopicID: topicID(2), Reason: "review"},
		time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), "operator"))
	st := log.fold()
	mirror := flinkagents.New()
	_ = mirror.Step(flinkagents.Record{Offset: 0, Key: []byte(r1.PlanID), Value: flinkagents.EncodeValue(flinkagents.Committed, r1)})
	view := MirrorView{Topic: "action-state.flink", TopicID: topicID(2), Partitions: []int32{0}, CleanupPolicy: "compact", Fold: mirror}
	topic := Topic{Name: dataTopic, ID: topicID(1), Partitions: []int32{0, 1}, Replicas: 1,
		Configs: map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1"},
		Start:   events.Offsets{0: 0, 1: 0}, End: events.Offsets{0: 200, 1: 200}}
	r := NewApply(p, Config{ControlTopic: "action-state.kcleanup", Bootstrap: "localhost:9092", NoWait: true})
	var rep Report
	for n := 0; n < 20; n++ {
		step := r.Next(st, rep)
		t.Logf("step %s %v", step.Kind, step.Err)
		rep = Report{}
		switch step.Kind {
		case Append:
			if step.Record.Event == events.Committed {
				t.Fatalf("apply --no-wait commits plan %s although the mirror holds the incomparable plan %s: the workers can never mirror it", p.Offsets, r1.Offsets)
			}
			env := step.Record
			env.Actor, env.At = "test", time.Date(2026, 12, 1, 9, 1, len(log.recs), 0, time.UTC)
			key, value := env.Encode()
			rec := len(log.recs)
			log.recs = append(log.recs, recordOf(rec, key, value))
			rep.Verdict = st.Step(log.recs[rec])
		case Describe, Recheck:
			rep.Topic, rep.Tombstones = topic, noTombstones(step.ScanFrom, topic)
		case ReadMirror:
			rep.Mirror = view
		}
		if step.Kind.Terminal() {
			if step.Kind != Blocked {
				t.Fatalf("apply --no-wait ended %s (%v), want blocked by the mirror before COMMITTED", step.Kind, step.Err)
			}
			return
		}
	}
	t.Fatal("apply did not end")
}

func recordOf(off int, key, value []byte) projector.Record {
	return projector.Record{Offset: int64(off), Key: key, Value: value, Timestamp: time.Date(2026, 12, 1, 9, 1, off, 0, time.UTC)}
}
