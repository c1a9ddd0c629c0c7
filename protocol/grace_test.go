package protocol

import (
	"testing"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
)

// graceMirror is a mirror holding plans at offsets 0, 1, ... with the
// given visibility times (zero: not known).
func graceMirror(t *testing.T, readAt time.Time, recs ...graceRec) MirrorView {
	t.Helper()
	f := flinkagents.New()
	vis := map[int64]time.Time{}
	for i, r := range recs {
		if err := f.Step(flinkagents.Record{Offset: int64(i), Key: []byte(r.plan.PlanID), Value: flinkagents.EncodeValue(flinkagents.Committed, r.plan)}); err != nil {
			t.Fatal(err)
		}
		if !r.at.IsZero() {
			vis[int64(i)] = r.at
		}
	}
	return MirrorView{Topic: "action-state.flink", TopicID: topicID(2), Partitions: []int32{0}, CleanupPolicy: "compact", Fold: f, Visible: vis, ReadAt: readAt}
}

type graceRec struct {
	plan events.Plan
	at   time.Time
}

// TestRestoreGrace is the decision table: wait until the covering
// record's time plus the grace, judged by the reader's clock; a record's
// time decides, not when a (resuming) reader first sees it, unless the
// time cannot be known.
func TestRestoreGrace(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	low := reviewPlan("C0", events.Offsets{0: 50, 1: 50})
	p := reviewPlan("C1", events.Offsets{0: 100, 1: 100})
	high := reviewPlan("C2", events.Offsets{0: 200, 1: 200})
	const d = 10 * time.Minute
	for _, c := range []struct {
		name   string
		grace  time.Duration
		recs   []graceRec
		readAt time.Time
		seen   time.Time
		wait   bool
		from   time.Time
		known  bool
		offset int64
	}{
		{name: "off", grace: 0, recs: []graceRec{{p, t0}}, readAt: t0},
		{name: "just acknowledged", grace: d, recs: []graceRec{{p, t0}}, readAt: t0.Add(time.Second), wait: true, from: t0, known: true},
		{name: "out exactly at T+D", grace: d, recs: []graceRec{{p, t0}}, readAt: t0.Add(d), from: t0, known: true},
		{name: "resumed mid-wait: waits from the record's time, not from now", grace: d, recs: []graceRec{{p, t0}}, readAt: t0.Add(d / 2), wait: true, from: t0, known: true},
		{name: "resumed long after: the grace is out", grace: d, recs: []graceRec{{p, t0.Add(-time.Hour)}}, readAt: t0, from: t0.Add(-time.Hour), known: true},
		{name: "record time in the reader's future: waits until T+D, longer than D", grace: d, recs: []graceRec{{p, t0.Add(time.Hour)}}, readAt: t0, wait: true, from: t0.Add(time.Hour), known: true},
		{name: "a seen time does not override a known one", grace: d, recs: []graceRec{{p, t0}}, readAt: t0.Add(d), seen: t0.Add(time.Minute), from: t0, known: true},
		{name: "a lower plan does not count; the first covering one does", grace: d, recs: []graceRec{{low, t0.Add(-time.Hour)}, {high, t0}, {p, t0.Add(time.Minute)}},
			readAt: t0.Add(time.Minute), wait: true, from: t0, known: true, offset: 1},
		{name: "unknown time, first sight: the full grace from now", grace: d, recs: []graceRec{{p, time.Time{}}}, readAt: t0, wait: true, from: t0},
		{name: "unknown time, seen before: from then", grace: d, recs: []graceRec{{p, time.Time{}}}, readAt: t0.Add(d), seen: t0.Add(-time.Second), from: t0.Add(-time.Second)},
		{name: "unknown time, seen a minute ago", grace: d, recs: []graceRec{{p, time.Time{}}}, readAt: t0, seen: t0.Add(-time.Minute), wait: true, from: t0.Add(-time.Minute)},
		{name: "unknown first record: the next covering record's time bounds it", grace: d, recs: []graceRec{{p, time.Time{}}, {high, t0}}, readAt: t0.Add(time.Minute), wait: true, from: t0, known: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := graceMirror(t, c.readAt, c.recs...)
			g, wait := RestoreGrace(v, p, c.grace, c.seen)
			if wait != c.wait {
				t.Fatalf("wait = %v, want %v (%+v)", wait, c.wait, g)
			}
			if c.grace == 0 {
				return
			}
			if !g.From.Equal(c.from) || g.Known != c.known || !g.Until.Equal(c.from.Add(c.grace)) || g.Offset != c.offset {
				t.Fatalf("got from %s known %v until %s offset %d; want from %s known %v until %s offset %d",
					g.From, g.Known, g.Until, g.Offset, c.from, c.known, c.from.Add(c.grace), c.offset)
			}
		})
	}
}

// TestRestoreGraceHoldsTheRunBeforeDeleting drives a finishing run with a
// mirror attached that shows the plan: inside the grace it takes a Pause
// (Step.Pause.Grace: until when) before DELETING, so nothing is deleted; a run
// whose reader's clock is past the record's time plus the grace appends
// DELETING and deletes. A second run in the grace (a worker that resumed
// the operation after the first one died) waits until the same instant.
func TestRestoreGraceHoldsTheRunBeforeDeleting(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	const d = 5 * time.Minute
	p := reviewPlan("C1", events.Offsets{0: 150, 1: 100})
	var log reviewLog
	log.env(events.NewMirrorEvent(events.MirrorAttached, events.Mirror{Topic: "action-state.flink", TopicID: topicID(2), Reason: "grace"},
		t0.Add(-time.Hour), "operator"))
	log.env(events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Planned, PlanID: p.PlanID, Plan: p})
	log.committed(p, p.Offsets)
	topic := Topic{Name: dataTopic, ID: topicID(1), Partitions: []int32{0, 1}, Replicas: 1,
		Configs: map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1"},
		Start:   events.Offsets{0: 0, 1: 0}, End: events.Offsets{0: 200, 1: 200}}

	finish := func(readAt time.Time) (Step, []Kind) {
		st := log.fold()
		r := NewFinish(p.PlanID, Config{ControlTopic: "action-state.kcleanup", Bootstrap: "localhost:9092", RestoreGrace: d})
		var rep Report
		var kinds []Kind
		for n := 0; n < 30; n++ {
			step := r.Next(st, rep)
			kinds = append(kinds, step.Kind)
			rep = Report{}
			switch step.Kind {
			case Append:
				env := step.Record
				env.Actor, env.At = "test", readAt
				key, value := env.Encode()
				rep.Verdict = st.Step(recordOf(len(log.recs)+n, key, value))
			case Recheck:
				rep.Topic, rep.Tombstones = topic, noTombstones(step.ScanFrom, topic)
			case ReadMirror:
				rep.Mirror = graceMirror(t, readAt, graceRec{p, t0})
			case Delete:
				return step, kinds
			}
			if step.Kind.Terminal() || step.Kind == Pause {
				return step, kinds
			}
		}
		t.Fatal("run did not end")
		return Step{}, nil
	}

	for _, readAt := range []time.Time{t0.Add(time.Second), t0.Add(d - time.Second)} {
		step, kinds := finish(readAt)
		if step.Kind != Pause || step.Pause == nil || step.Pause.Grace == nil || !errors.Is(step.Err, ErrRestoreGrace) {
			t.Fatalf("read at %s: run ended %s (%v) after %v, want a Pause for the grace", readAt, step.Kind, step.Err, kinds)
		}
		if g := step.Pause.Grace; !g.Until.Equal(t0.Add(d)) || !g.Known {
			t.Fatalf("read at %s: waits until %s (known %v), want %s", readAt, g.Until, g.Known, t0.Add(d))
		}
		for _, k := range kinds {
			if k == Append || k == Delete {
				t.Fatalf("read at %s: the run appended or deleted in the grace: %v", readAt, kinds)
			}
		}
	}
	step, kinds := finish(t0.Add(d))
	if step.Kind != Delete {
		t.Fatalf("after the grace the run ended %s (%v) after %v, want Delete", step.Kind, step.Err, kinds)
	}
}
