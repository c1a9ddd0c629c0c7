// Package consoletest is the fixed story the console's pages are tested on
// (report/page's goldens, worker/console's handler and browser tests, the
// screenshots in docs/images): the C0/C1 example with one of everything a
// page shows.
package consoletest

import (
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
)

// The fixed story the golden files render: the C0/C1 example of docs/design.md §1
// on a data topic of two partitions, with one of everything a page shows.
const (
	Topic        = "action-state"
	TopicID      = "b3bvWsPXRsmVE0xrjM3xJA"
	ControlTopic = "action-state.kcleanup"
)

var T0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func Plan(t *testing.T, rp string, offsets events.Offsets) events.Plan {
	t.Helper()
	p := events.Plan{SourceRecoveryPoint: rp, Topic: Topic, TopicID: TopicID, Offsets: offsets}
	p.PlanID = events.ComputePlanID(rp, Topic, TopicID, offsets)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

// LogBuilder appends control records at increasing offsets.
type LogBuilder struct {
	T    *testing.T
	Recs []projector.Record
}

func (b *LogBuilder) Raw(key string, value []byte, at time.Time) {
	var k []byte
	if key != "" {
		k = []byte(key)
	}
	b.Recs = append(b.Recs, projector.Record{Offset: int64(len(b.Recs)), Key: k, Value: value, Timestamp: at})
}

// Env appends a plan event's record.
func (b *LogBuilder) Env(p events.Plan, e events.Event, at time.Duration, actor string, boundary, logStart events.Offsets) {
	b.EnvWhy(p, e, at, actor, "", boundary, logStart)
}

// EnvWhy is Env with the operator's reason (apply --reason).
func (b *LogBuilder) EnvWhy(p events.Plan, e events.Event, at time.Duration, actor, reason string, boundary, logStart events.Offsets) {
	env := events.Envelope{SchemaVersion: events.SchemaVersion, Event: e, PlanID: p.PlanID, Plan: p,
		At: T0.Add(at), Actor: actor, Reason: reason, Boundary: boundary, LogStart: logStart}
	k, v := env.Encode()
	b.Raw(string(k), v, T0.Add(at))
}

// repair appends what a worker appends: every repair, then a tombstone for
// every retraction, as the owner's pass does.
func (b *LogBuilder) Repair(s *projector.State) {
	for _, r := range s.Repairs() {
		b.Raw(string(r.Key), r.Value, r.Timestamp)
		s.Step(b.Recs[len(b.Recs)-1])
	}
	for _, r := range s.Retractions() {
		b.Raw(string(r.Key), nil, r.Timestamp.Add(protocol.RetractionGrace))
		s.Step(b.Recs[len(b.Recs)-1])
	}
}

func Fold(recs []projector.Record) *projector.View {
	v := projector.NewView(projector.KeepAudit())
	for _, r := range recs {
		v.Step(r)
	}
	return v
}

// story is the fixed log: C1 applied, C2 committed and not finished (its
// commit retried by another writer, its delete attempted twice), a
// conflicting commit of C0 rejected, a record that overwrote C1's APPLIED
// (repaired) and a malformed record (retracted).
func Story(t *testing.T) (recs []projector.Record, c1, c2 events.Plan) {
	b := &LogBuilder{T: t}
	c1 = Plan(t, "chk-1", events.Offsets{0: 150, 1: 120})
	c2 = Plan(t, "chk-2", events.Offsets{0: 180, 1: 160})
	c0 := Plan(t, "chk-0", events.Offsets{0: 100, 1: 200})
	cli, w1 := "ops-laptop/4242", "worker/kc-1/17"
	b.Env(c1, events.Planned, 0, cli, nil, nil)
	b.EnvWhy(c1, events.Committed, 1200*time.Millisecond, cli, "reclaim disk before the quarter close (OPS-1234)", events.Offsets{0: 150, 1: 120}, nil)
	b.Env(c1, events.Deleting, 1500*time.Millisecond, cli, nil, nil)
	b.Env(c1, events.Applied, 2100*time.Millisecond, cli, nil, events.Offsets{0: 150, 1: 120})
	b.Raw("oops", []byte(`{"not":"an envelope"}`), T0.Add(time.Minute))
	b.Raw(events.Key(c1.PlanID, events.Applied), []byte(`{"schemaVersion":1}`), T0.Add(2*time.Minute))
	b.Env(c2, events.Planned, 10*time.Minute, cli, nil, nil)
	b.Env(c0, events.Planned, 10*time.Minute+5*time.Second, "ops-desktop/99", nil, nil)
	b.Env(c2, events.Committed, 10*time.Minute+800*time.Millisecond, cli, events.Offsets{0: 180, 1: 160}, nil)
	b.Env(c0, events.Committed, 10*time.Minute+6*time.Second, "ops-desktop/99", events.Offsets{0: 180, 1: 200}, nil)
	b.Env(c2, events.Deleting, 10*time.Minute+2*time.Second, w1, nil, nil)
	// Another writer's retry of C2's commit (a duplicate) and a second
	// delete attempt: compaction keeps only the latest copy of each.
	b.Env(c2, events.Committed, 10*time.Minute+1500*time.Millisecond, "ci-runner/7", events.Offsets{0: 180, 1: 160}, nil)
	b.Env(c2, events.Deleting, 12*time.Minute, w1, nil, nil)
	s := Fold(b.Recs)
	b.Repair(s.State)
	return b.Recs, c1, c2
}

// projection folds records into what a worker or `kcleanup history` holds.
func Projection(recs []projector.Record) report.Source {
	s := Fold(recs)
	next := int64(0)
	if n := len(recs); n > 0 {
		next = recs[n-1].Offset + 1
	}
	return report.Source{ControlTopic: ControlTopic, View: s, ReadTo: next}
}

// fleetStatus is the /v1/status document of a replica that owns the story's
// control topic and serves a second one it cannot read.
func FleetStatus(t *testing.T) (report.WorkerStatus, time.Time) {
	recs, _, c2 := Story(t)
	st := report.StatusOf(Projection(recs))
	caught := T0.Add(20 * time.Minute)
	owned := report.TopicStatus{Status: st, Owned: true, CaughtUp: true, CaughtUpAt: &caught,
		DataTopic: &report.DataTopicOffsets{LogStart: events.Offsets{0: 150, 1: 120},
			HighWatermark: events.Offsets{0: 200, 1: 200}, ListedAt: caught}}
	owned.Blocked = []report.BlockedOperation{{PlanID: c2.PlanID,
		Reason: "topic action-state was recreated: its topic ID is now Zm9vYmFyYmF6cXV4cXV1eA, the plan's is b3bvWsPXRsmVE0xrjM3xJA",
		Hints: []string{"the plan's records are gone with the old topic: plan again from the new topic's markers (kcleanup plan), then apply that plan",
			"kcleanup history --control-topic action-state.kcleanup shows what was committed"},
		Since: T0.Add(10*time.Minute + 3*time.Second), RetryAt: T0.Add(22 * time.Minute)}}
	other := report.StatusOf(report.Source{ControlTopic: "payments.kcleanup", View: projector.NewView()})
	unread := report.TopicStatus{Status: other, ReadError: "unable to dial: dial tcp 10.0.0.7:9092: connect: connection refused", LagRecords: 0}
	started1, started2 := T0.Add(-5*time.Minute), T0.Add(-3*time.Minute-50*time.Second)
	fleet := &report.FleetStatus{DescribedAt: caught, Members: []report.FleetMember{
		{MemberID: "kcleanup-worker/kc-1@2026-12-01T08:55:00Z-3f1c2a9e-5b7d-4c1e-9a2b-1d0e8f7a6b5c", ClientID: "kcleanup-worker/kc-1@2026-12-01T08:55:00Z",
			Replica: "kc-1", StartedAt: &started1, Host: "/10.0.0.11", ControlTopics: []string{"action-state.kcleanup"}, Self: true},
		{MemberID: "kcleanup-worker/kc-2@2026-12-01T08:56:10Z-8a4b6c2d-1e3f-4a5b-8c7d-9e0f1a2b3c4d", ClientID: "kcleanup-worker/kc-2@2026-12-01T08:56:10Z",
			Replica: "kc-2", StartedAt: &started2, Host: "/10.0.0.12", ControlTopics: []string{"payments.kcleanup"}},
		// A replica of an older kcleanup: named by its client ID.
		{MemberID: "kcleanup-c5d6e7f8-9a0b-4c1d-8e2f-3a4b5c6d7e8f", ClientID: "kcleanup", Host: "/10.0.0.13", ControlTopics: []string{}},
	}}
	return report.WorkerStatus{SchemaVersion: report.StatusSchemaVersion, Group: "kcleanup-worker.action-state.kcleanup",
		Actor: "worker/kc-1/17", ControlTopics: []report.TopicStatus{owned, unread}, Fleet: fleet}, caught
}
