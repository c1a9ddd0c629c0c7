package gate

import (
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"

	"github.com/kcleanup/kcleanup/topicconfig"
)

const (
	topic = "action-state"
	tid   = "Xw8WDWFFGCB7AAZnSGmHfw"
	ctl   = "action-state.kcleanup"
)

var at = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// log folds records into a projection, offsets from 0.
type log struct {
	s *projector.State
	n int64
}

func newLog() *log { return &log{s: projector.New()} }

func (l *log) raw(key, value []byte) {
	l.s.Step(projector.Record{Offset: l.n, Key: key, Value: value, Timestamp: at})
	l.n++
}

func (l *log) env(e events.Envelope) {
	e.SchemaVersion, e.At, e.Actor = events.SchemaVersion, at, "test"
	l.raw(e.Encode())
}

// commit accepts PLANNED and COMMITTED of a plan and returns it.
func (l *log) commit(t *testing.T, rp string, offs events.Offsets) events.Plan {
	t.Helper()
	plan, err := events.BuildPlan(rp, []events.Marker{{Topic: topic, TopicID: tid, Offsets: offs}})
	if err != nil {
		t.Fatal(err)
	}
	l.env(events.Envelope{Event: events.Planned, PlanID: plan.PlanID, Plan: plan})
	b := l.s.Boundary()
	for p, o := range offs {
		b[p] = max(b[p], o)
	}
	l.env(events.Envelope{Event: events.Committed, PlanID: plan.PlanID, Plan: plan, Boundary: b})
	if !l.s.Boundary().Equal(b) {
		t.Fatalf("commit of %s not accepted: %+v", rp, l.s.Rejected())
	}
	return plan
}

// facts is a healthy setup: a control topic as init makes it, read to its
// end, and a data topic of two partitions holding [0, 200).
func facts(l *log, offs ...events.Offsets) Facts {
	f := Facts{
		Control:    Control{Topic: ctl, Exists: true, Partitions: 1, Configs: topicconfig.CreateSettings()},
		Projection: &Projection{State: l.s, ReadTo: l.n},
		Data: Data{Topic: topic, Exists: true, ID: tid, Partitions: []int32{0, 1},
			Start: events.Offsets{0: 0, 1: 0}, End: events.Offsets{0: 200, 1: 200}},
		Bootstrap: "b:9092",
	}
	for _, o := range offs {
		f.Markers = append(f.Markers, events.Marker{Topic: topic, TopicID: tid, Offsets: o})
	}
	return f
}

// want checks a verdict's class, its reasons in order, and fragments of the
// top-level message.
func want(t *testing.T, v Verdict, class Class, reasons []Reason, fragments ...string) {
	t.Helper()
	var got []Reason
	for _, r := range v.Refusals {
		got = append(got, r.Reason)
		if r.Class != r.Reason.Class() || r.Hints == nil || len(r.Hints) == 0 {
			t.Errorf("refusal %+v: class or hints", r)
		}
	}
	if v.Class != class || v.Allowed != (class == Allowed) || strings.Join(reasonStrings(got), ",") != strings.Join(reasonStrings(reasons), ",") {
		t.Fatalf("verdict %s %v, want %s %v\n%+v", v.Class, got, class, reasons, v)
	}
	for _, f := range fragments {
		if !strings.Contains(v.Message+strings.Join(v.Notes, "\n"), f) {
			t.Errorf("message %q (notes %q) lacks %q", v.Message, v.Notes, f)
		}
	}
	if v.SchemaVersion != SchemaVersion || v.Hints == nil || v.Refusals == nil || v.Notes == nil {
		t.Errorf("document shape: %+v", v)
	}
	if (v.Err() == nil) != v.Allowed {
		t.Errorf("Err() = %v for allowed=%v", v.Err(), v.Allowed)
	}
}

func reasonStrings(rs []Reason) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, string(r))
	}
	return out
}

func TestDecideTheSeedExample(t *testing.T) {
	l := newLog()
	c1 := l.commit(t, "C1", events.Offsets{0: 150, 1: 120})

	v := Decide(facts(l, events.Offsets{0: 150, 1: 120}))
	want(t, v, Allowed, nil)
	if *v.ReadTo != 2 || len(v.Notes) != 0 || len(v.Checked) != 2 || *v.Checked[1].Boundary != 120 || v.Checked[1].Lowest != 120 ||
		v.Checked[1].PlanID != c1.PlanID || v.Checked[1].HighWatermark != 200 {
		t.Fatalf("allowed verdict %+v", v)
	}

	v = Decide(facts(l, events.Offsets{0: 100, 1: 90}))
	want(t, v, Refused, []Reason{BelowBoundary, BelowBoundary},
		"Cannot restore Kafka action state for action-state-0 from offset 100 because the committed cleanup boundary is 150 (set by plan "+c1.PlanID+")")
	if *v.Partition != 0 || *v.Requested != 100 || *v.Boundary != 150 || v.PlanID != c1.PlanID || *v.Marker != 0 {
		t.Fatalf("detail %+v", v.Detail)
	}
	if !strings.Contains(v.Hints[0], "restore from a newer checkpoint or savepoint") {
		t.Fatalf("hints %q", v.Hints)
	}

	f := facts(l, events.Offsets{0: 150})
	f.Data.Partitions = []int32{0}
	want(t, Decide(f), Refused, []Reason{MissingPartition}, "action-state-1: the recovery point has no offset for it")
}

func TestDecidePhysical(t *testing.T) {
	l := newLog()
	l.commit(t, "C1", events.Offsets{0: 150, 1: 120})
	ok := events.Offsets{0: 170, 1: 150}

	// Records deleted outside kcleanup: the log start moved past the marker.
	f := facts(l, ok)
	f.Data.Start = events.Offsets{0: 160, 1: 120}
	v := Decide(facts(l, ok))
	want(t, v, Allowed, nil)
	f.Markers[0].Offsets = events.Offsets{0: 150, 1: 150}
	v = Decide(f)
	want(t, v, Refused, []Reason{OutOfRange},
		"Cannot restore Kafka action state for action-state-0 from offset 150: requested offset 150 is outside the available range [160, 200]; records below offset 160 are already deleted")
	if *v.LogStart != 160 || *v.HighWatermark != 200 || *v.Requested != 150 {
		t.Fatalf("detail %+v", v.Detail)
	}

	f = facts(l, events.Offsets{0: 201, 1: 150})
	want(t, Decide(f), Refused, []Reason{OutOfRange}, "requested offset 201 is outside the available range [0, 200]; the partition ends at offset 200")
	want(t, Decide(facts(l, events.Offsets{0: 200, 1: 200})), Allowed, nil) // the high watermark itself: nothing to replay

	f = facts(l, ok)
	f.Data = Data{Topic: topic}
	want(t, Decide(f), Refused, []Reason{DataTopicMissing}, "action-state: the topic does not exist (it was deleted: control topic action-state.kcleanup governed it as topic ID "+tid+")")
	// A name no control topic knew is as likely a typo as a deleted topic: never "deleted".
	f = facts(newLog(), ok)
	f.Data = Data{Topic: topic}
	v = Decide(f)
	want(t, v, Refused, []Reason{DataTopicMissing}, "action-state: the topic does not exist, so none of the records")
	if strings.Contains(v.Message, "deleted)") || !strings.Contains(strings.Join(v.Hints, "\n"), "check the topic name the markers give") {
		t.Errorf("message %q hints %q", v.Message, v.Hints)
	}

	f = facts(l, ok)
	f.Data.ID = "AAAAAAAAAAAAAAAAAAAAAQ"
	v = Decide(f)
	want(t, v, Refused, []Reason{TopicRecreated}, "recovery point is from topic ID "+tid+" but the topic now has ID AAAAAAAAAAAAAAAAAAAAAQ")
	if v.LiveTopicID != "AAAAAAAAAAAAAAAAAAAAAQ" || v.MarkerTopicID != tid {
		t.Fatalf("detail %+v", v.Detail)
	}

	f = facts(l, events.Offsets{0: 170, 1: 150, 2: 10})
	want(t, Decide(f), Refused, []Reason{UnknownPartition}, "action-state-2: the topic has no such partition (it has partitions 0-1)")

	f = facts(l, ok)
	f.Data.Partitions = []int32{0, 1, 2}
	f.Data.Start[2], f.Data.End[2] = 0, 5
	want(t, Decide(f), Refused, []Reason{UncoveredPartition}, "action-state-2: the topic has this partition but the recovery point has no offset for it")

	f = facts(l, ok)
	f.Data = Data{Topic: topic, Err: errors.WithHint(errors.New("TOPIC_AUTHORIZATION_FAILED"), "grant DESCRIBE")}
	v = Decide(f)
	want(t, v, CannotTell, []Reason{DataTopicUnreadable}, "data topic action-state could not be read: TOPIC_AUTHORIZATION_FAILED")
	if v.Hints[0] != "grant DESCRIBE" {
		t.Fatalf("hints %q", v.Hints)
	}
}

func TestDecideControlTopic(t *testing.T) {
	l := newLog()
	ok := events.Offsets{0: 170, 1: 150}

	// A missing control topic, the default or one named: the gate has read no boundary, so it
	// cannot tell, even when every record is there (issue 20: a forgotten or blank
	// --control-topic must never approve what a boundary elsewhere condemns).
	for _, name := range []string{ctl, "action-state.kcleanpu"} {
		f := facts(l, ok)
		f.Control, f.Projection = Control{Topic: name}, nil
		v := Decide(f)
		want(t, v, CannotTell, []Reason{ControlTopicMissing}, "control topic "+name+" does not exist, so no boundary could be read for topic action-state")
		if v.ReadTo != nil {
			t.Fatalf("readTo %v without a control topic", *v.ReadTo)
		}
		if h := strings.Join(v.Refusals[0].Hints, "\n"); !strings.Contains(h, "kcleanup init --topic action-state --control-topic "+name) ||
			!strings.Contains(h, "name it: --control-topic") {
			t.Errorf("hints:\n%s", h)
		}
	}

	// An empty control topic, as init makes it: allowed together with the physical check.
	want(t, Decide(facts(l, ok)), Allowed, nil, "control topic action-state.kcleanup is empty: no cleanup boundary is committed")

	// Not a control topic at all.
	f := facts(l, ok)
	f.Control.Partitions, f.Projection = 2, nil
	f.Control.Configs["cleanup.policy"] = "delete"
	v := Decide(f)
	want(t, v, CannotTell, []Reason{ControlTopicPartitions, ControlTopicSettings}, "control topic action-state.kcleanup has 2 partitions")
	if !strings.Contains(v.Refusals[1].Message, `cleanup.policy is "delete"`) ||
		v.Refusals[1].Hints[0] != "kafka-configs --bootstrap-server b:9092 --alter --entity-type topics --entity-name action-state.kcleanup --add-config cleanup.policy=compact" {
		t.Fatalf("policy refusal %+v", v.Refusals[1])
	}

	// A control topic created with cleanup.policy=compact only: the cleaner may outrun repairs.
	f = facts(l, ok)
	f.Control.Configs["min.compaction.lag.ms"] = "0"
	v = Decide(f)
	want(t, v, CannotTell, []Reason{ControlTopicSettings}, "min.compaction.lag.ms is 0")
	if !strings.HasSuffix(v.Hints[0], "--add-config min.compaction.lag.ms=604800000") {
		t.Fatalf("hints %q", v.Hints)
	}

	f = facts(l, ok)
	f.Control, f.Projection = Control{Topic: ctl, Err: errors.New("dial tcp: connection refused")}, nil
	f.Data = Data{Topic: topic, Err: errors.New("dial tcp: connection refused")}
	want(t, Decide(f), CannotTell, []Reason{ControlTopicUnreadable, DataTopicUnreadable}, "control topic action-state.kcleanup could not be described: dial tcp")
}

func TestDecideBinding(t *testing.T) {
	l := newLog()
	l.commit(t, "C1", events.Offsets{0: 150, 1: 120})
	// Below the old incarnation's boundary: that boundary says nothing about the new one.
	f := facts(l, events.Offsets{0: 10, 1: 10})
	// The live topic is a new incarnation, and so are the markers: this control topic governs the old one.
	f.Markers[0].TopicID, f.Data.ID = "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAQ"
	v := Decide(f)
	want(t, v, CannotTell, []Reason{TopicIDMismatch}, "the recovery point is from topic ID AAAAAAAAAAAAAAAAAAAAAQ but this control topic (action-state.kcleanup) governs topic ID "+tid)
	// Markers of the old incarnation on the new topic: proved gone.
	f.Data.ID = "AAAAAAAAAAAAAAAAAAAAAg"
	want(t, Decide(f), Refused, []Reason{TopicIDMismatch, TopicRecreated}, "it was deleted and recreated")
}

// TestDecideGovernedElsewhere: an empty control topic proves "no boundary" only while no other
// control topic governs the markers' topic incarnation, and a bound one proves nothing while
// another is bound to the same incarnation (issue 35).
func TestDecideGovernedElsewhere(t *testing.T) {
	f := facts(newLog(), events.Offsets{0: 170, 1: 150})
	if v := Decide(f); !v.Allowed {
		t.Fatalf("an empty control topic, governed nowhere else: %+v", v)
	}
	f.Control.Elsewhere = []string{"ops.action-state.ctl"}
	want(t, Decide(f), CannotTell, []Reason{GovernedElsewhere},
		"control topic action-state.kcleanup governs no topic yet, but ops.action-state.ctl governs topic action-state")
	// Bound to the same incarnation as another: each is blind to the other's boundary, so even
	// a recovery point above this one's boundary cannot be allowed.
	l := newLog()
	l.commit(t, "C1", events.Offsets{0: 150, 1: 120})
	f = facts(l, events.Offsets{0: 170, 1: 150})
	if v := Decide(f); !v.Allowed {
		t.Fatalf("bound, alone: %+v", v)
	}
	f.Control.Elsewhere = []string{"ops.action-state.ctl"}
	want(t, Decide(f), CannotTell, []Reason{GovernedElsewhere},
		"control topics action-state.kcleanup and ops.action-state.ctl both govern topic action-state")
}

func TestDecideFailsClosed(t *testing.T) {
	ok := events.Offsets{0: 170, 1: 150}

	l := newLog()
	l.commit(t, "C1", events.Offsets{0: 150, 1: 120})
	f := facts(l, ok)
	f.Projection.Err = errors.New("control topic read to offset 1 of 2: context deadline exceeded")
	v := Decide(f)
	want(t, v, CannotTell, []Reason{NotCaughtUp}, "cannot prove that the view of control topic action-state.kcleanup is caught up")
	if v.ReadTo != nil {
		t.Fatal("readTo of a view that is not caught up")
	}
	// A proof of harm stands whatever else could not be read.
	f.Data.Start[0] = 180
	v = Decide(f)
	want(t, v, Refused, []Reason{OutOfRange, NotCaughtUp}, "[180, 200]")

	l.raw([]byte(strings.Repeat("a", 64)+"/COMMITTED"), []byte(`{"schemaVersion":2,"event":"COMMITTED"}`))
	want(t, Decide(facts(l, ok)), CannotTell, []Reason{Degraded}, "degraded")

	// A tombstone over the accepted COMMITTED, not repaired yet: history at risk.
	l = newLog()
	c1 := l.commit(t, "C1", events.Offsets{0: 150, 1: 120})
	l.raw([]byte(events.Key(c1.PlanID, events.Committed)), nil)
	want(t, Decide(facts(l, ok)), CannotTell, []Reason{HistoryAtRisk}, "accepted history on control topic action-state.kcleanup is missing or at risk")
}

func TestDecideRejectedRecords(t *testing.T) {
	ok := events.Offsets{0: 170, 1: 150}
	below := events.Offsets{0: 100, 1: 90} // below a boundary kcleanup cannot see

	// Only records the fold cannot read: never "no boundary, allowed".
	l := newLog()
	l.raw([]byte("not-a-key"), []byte(`{"hello":1}`))
	l.raw([]byte(strings.Repeat("b", 64)+"/COMMITTED"), []byte(`{`))
	v := Decide(facts(l, below))
	want(t, v, CannotTell, []Reason{UnreadableRecords}, "holds 2 record(s) the fold cannot read (offset 0 malformed", "absence of a committed boundary proves nothing")
	if len(v.Records) != 2 || v.Records[1] != 1 {
		t.Fatalf("records %v", v.Records)
	}
	// Retracted (tombstoned) garbage no longer counts: the empty log is all there is.
	l.raw([]byte("not-a-key"), nil)
	l.raw([]byte(strings.Repeat("b", 64)+"/COMMITTED"), nil)
	want(t, Decide(facts(l, ok)), Allowed, nil, "governs no topic yet")

	// Flink Agents' own control records: named, and never forgotten by a retraction.
	l = newLog()
	id := strings.Repeat("c", 64)
	flink := []byte(`{"schemaVersion":1,"status":"COMMITTED","plan":{"planId":"` + id + `"}}`)
	if _, ok := projector.Foreign(0, []byte(id), flink); !ok {
		t.Fatal("Flink Agents' record not recognised")
	}
	l.raw([]byte(id), flink)
	l.raw([]byte(id), nil)
	f := facts(l, below)
	f.Projection.Foreign = []projector.ForeignRecord{{Offset: 0, Key: id, Format: projector.FlinkAgents, Status: "COMMITTED"}}
	v = Decide(f)
	want(t, v, CannotTell, []Reason{ForeignFormat}, "holds 1 record(s) in Flink Agents' control format", "offset 0 key "+id+" status COMMITTED")
	if !strings.Contains(v.Hints[0], "Flink Agents' own cleanup tool") {
		t.Fatalf("hints %q", v.Hints)
	}
}

// The one rule: a bare plan-ID key is Flink Agents' (kcleanup's keys are
// "<planId>/<EVENT>"), whatever the value: a tombstone or a malformed value
// under it fails the job's fold, so it is never "nothing here".
func TestForeignIsKeyedByPlanID(t *testing.T) {
	id := []byte(strings.Repeat("d", 64))
	for name, key := range map[string]string{
		"kcleanup key":   string(id) + "/COMMITTED",
		"short key":      "abc",
		"upper-case key": strings.ToUpper(string(id)),
		"65 digits":      string(id) + "d",
	} {
		if _, ok := projector.Foreign(0, []byte(key), []byte(`{"schemaVersion":1,"status":"APPLIED","plan":{}}`)); ok {
			t.Errorf("%s: recognised as foreign", name)
		}
	}
	for name, tc := range map[string]struct {
		value  []byte
		status string
	}{
		"tombstone": {nil, "tombstone"},
		"not JSON":  {[]byte(`{"schemaVersion":1`), ""},
	} {
		r, ok := projector.Foreign(3, id, tc.value)
		if !ok || r.Status != tc.status || r.Offset != 3 {
			t.Errorf("%s: %+v %v", name, r, ok)
		}
	}
}

// A DELETING for a plan nobody committed (or whose COMMITTED was erased: the
// log cannot tell which) holds the boundary up as evidence. Below it, with
// every record still there, the gate cannot tell: never "refused because the
// committed cleanup boundary is 180". Below what accepted COMMITTED records
// prove, it still refuses.
func TestDecideUnderEvidenceOfAnErasedCommit(t *testing.T) {
	l := newLog()
	forged, err := events.BuildPlan("never-committed", []events.Marker{{Topic: topic, TopicID: tid, Offsets: events.Offsets{0: 180, 1: 180}}})
	if err != nil {
		t.Fatal(err)
	}
	l.env(events.Envelope{Event: events.Deleting, PlanID: forged.PlanID, Plan: forged})
	if got := l.s.Boundary(); !got.Equal(events.Offsets{0: 180, 1: 180}) {
		t.Fatalf("evidence does not hold the boundary up: %v", got)
	}
	v := Decide(facts(l, events.Offsets{0: 100, 1: 100}))
	want(t, v, CannotTell, []Reason{UnconfirmedBoundary, UnconfirmedBoundary, HistoryAtRisk},
		"evidence of a commit that is no longer in the log", "a DELETING (offset 0) but no COMMITTED", forged.PlanID)
	if strings.Contains(v.Message, "committed cleanup boundary is") || v.Detail == nil || *v.Detail.Boundary != 180 || v.Detail.PlanID != forged.PlanID {
		t.Fatalf("verdict speaks of a committed boundary, or its detail is not the evidence's: %+v", v)
	}
	if !strings.Contains(strings.Join(v.Hints, "\n"), "Evidence of a commit that is no longer in the log") {
		t.Errorf("hints do not point at the operator guide: %q", v.Hints)
	}

	// A committed boundary under the evidence: below it is proved, refused.
	l = newLog()
	c1 := l.commit(t, "C1", events.Offsets{0: 150, 1: 120})
	l.env(events.Envelope{Event: events.Deleting, PlanID: forged.PlanID, Plan: forged})
	v = Decide(facts(l, events.Offsets{0: 100, 1: 160}))
	want(t, v, Refused, []Reason{BelowBoundary, UnconfirmedBoundary, HistoryAtRisk},
		"from offset 100 because the committed cleanup boundary is 150 (set by plan "+c1.PlanID+")")
	// Between the two: cannot tell.
	v = Decide(facts(l, events.Offsets{0: 160, 1: 160}))
	want(t, v, CannotTell, []Reason{UnconfirmedBoundary, UnconfirmedBoundary, HistoryAtRisk}, "offset 160 of action-state-0 is below the boundary 180, set only by plan "+forged.PlanID)
}

// TestDecideNotesATombstoneTheRecoveryPointStraddles: a tombstone above the recovery point is a
// note on an allowed verdict, never a refusal (issue 35); a partition the bounded read did not
// finish is said too.
func TestDecideNotesATombstoneTheRecoveryPointStraddles(t *testing.T) {
	l := newLog()
	l.commit(t, "C1", events.Offsets{0: 150, 1: 120})
	f := facts(l, events.Offsets{0: 170, 1: 150})
	f.Data.Tombstones, f.Data.Unscanned = map[int32]int64{0: 180}, []int32{1}
	v := Decide(f)
	if !v.Allowed || len(v.Notes) != 2 ||
		!strings.Contains(v.Notes[0], "partition 0: the recovery point replays across a tombstone (null value) at offset 180") ||
		!strings.Contains(v.Notes[1], "partition(s) [1]: not read to the end for tombstones") {
		t.Fatalf("%+v", v)
	}
	f.Data.Tombstones, f.Data.Unscanned = map[int32]int64{}, nil
	if v := Decide(f); !v.Allowed || len(v.Notes) != 0 {
		t.Fatalf("no tombstone: %+v", v)
	}
}
