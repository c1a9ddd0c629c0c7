package protocol_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/protocol"
)

const (
	dataTopic = "action-state"
	dataID    = "AAAAAAAAAAAAAAAAAAAAAQ"
	mirrorID  = "AAAAAAAAAAAAAAAAAAAAAg"
	control   = "action-state.kcleanup"
)

func plan(t *testing.T, rp string, offs events.Offsets) events.Plan {
	t.Helper()
	p, err := events.BuildPlan(rp, []events.Marker{{Topic: dataTopic, TopicID: dataID, Offsets: offs}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// state folds the given transitions of each plan, in order, and fails the
// test on any record the fold does not accept.
func state(t *testing.T, steps ...any) *projector.State {
	t.Helper()
	st := projector.New()
	var p events.Plan
	for i, s := range steps {
		var env events.Envelope
		switch s := s.(type) {
		case events.Plan:
			p = s
			continue
		case events.Event:
			env = events.Envelope{SchemaVersion: events.SchemaVersion, Event: s, PlanID: p.PlanID, Plan: p, At: time.Unix(int64(i), 0).UTC(), Actor: "test"}
			switch s {
			case events.Committed:
				env.Boundary = st.Boundary().Clone()
				if env.Boundary == nil {
					env.Boundary = events.Offsets{}
				}
				for part, o := range p.Offsets {
					env.Boundary[part] = max(env.Boundary[part], o)
				}
			case events.Applied:
				env.LogStart = p.Offsets.Clone()
			}
		case events.Mirror:
			env = events.NewMirrorEvent(events.MirrorAttached, s, time.Unix(int64(i), 0).UTC(), "test")
		}
		k, v := env.Encode()
		if vd := st.Step(projector.Record{Offset: int64(i), Key: k, Value: v, Timestamp: env.At}); vd.Outcome != projector.Accepted {
			t.Fatalf("step %d (%v): %s %s", i, s, vd.Outcome, vd.Detail)
		}
	}
	return st
}

// flinkValue is a Flink Agents control record's value for p (test code,
// written from the format in projector/flinkagents/doc.go).
func flinkValue(status string, p events.Plan) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"schemaVersion":1,"status":%q,"plan":{"schemaVersion":1,"planId":%q,"sourceRecoveryPoint":%q,"topic":%q,"topicId":%q,"offsets":{`,
		status, p.PlanID, p.SourceRecoveryPoint, p.Topic, p.TopicID)
	for i, part := range p.Offsets.Partitions() {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%d":%d`, part, p.Offsets[part])
	}
	b.WriteString("}}}")
	return []byte(b.String())
}

type rec struct {
	status string
	plan   events.Plan
	key    string // default: the plan ID
	tomb   bool
}

func view(recs ...rec) protocol.MirrorView {
	f := flinkagents.New()
	for i, r := range recs {
		key := r.key
		if key == "" {
			key = r.plan.PlanID
		}
		var v []byte
		if !r.tomb {
			v = flinkValue(r.status, r.plan)
		}
		f.Step(flinkagents.Record{Offset: int64(i), Key: []byte(key), Value: v})
	}
	return protocol.MirrorView{Topic: "action-state.flink", TopicID: mirrorID, Partitions: []int32{0}, CleanupPolicy: "compact", Fold: f}
}

func TestAttach(t *testing.T) {
	p1 := plan(t, "chk-1", events.Offsets{0: 10, 1: 10})
	p2 := plan(t, "chk-2", events.Offsets{0: 20, 1: 20})
	applied := state(t, p1, events.Planned, events.Committed, events.Deleting, events.Applied,
		p2, events.Planned, events.Committed, events.Deleting, events.Applied)
	other := plan(t, "chk-x", events.Offsets{0: 5, 1: 5})
	other.TopicID = "AAAAAAAAAAAAAAAAAAAAAw"
	other.PlanID = flinkagents.ComputePlanID(other.SourceRecoveryPoint, other.Topic, other.TopicID, other.Offsets)
	above := plan(t, "chk-3", events.Offsets{0: 30, 1: 30})
	incomparable := plan(t, "chk-4", events.Offsets{0: 25, 1: 5})
	onePart := plan(t, "chk-5", events.Offsets{0: 5})

	for _, c := range []struct {
		name  string
		st    *projector.State
		v     protocol.MirrorView
		class error  // nil: allowed
		want  string // in the error
		hint  string // in the hint
	}{
		{"empty mirror", applied, view(), nil, "", ""},
		{"empty mirror, empty control topic", projector.New(), view(), nil, "", ""},
		{"mirror holding the boundary plan", applied, view(rec{status: "COMMITTED", plan: p2}, rec{status: "APPLIED", plan: p2}), nil, "", ""},
		{"mirror below the boundary", applied, view(rec{status: "APPLIED", plan: p1}), nil, "", ""},
		{"missing", applied, protocol.MirrorView{Topic: "m", Missing: true}, protocol.ErrMirrorRefused, "does not exist", "kcleanup init --topic <data topic> --mirror-topic m"},
		{"the control topic itself", applied, func() protocol.MirrorView { v := view(); v.Topic = control; return v }(), protocol.ErrMirrorRefused, "is the control topic or the data topic", "kafkaActionStateCleanupControlTopic"},
		{"the data topic", applied, func() protocol.MirrorView { v := view(); v.Topic = dataTopic; return v }(), protocol.ErrMirrorRefused, "is the control topic or the data topic", ""},
		{"two partitions", applied, func() protocol.MirrorView { v := view(); v.Partitions = []int32{0, 1}; return v }(), protocol.ErrMirrorRefused, "partition", "create a one-partition topic and attach it instead"},
		{"three partitions, compact,delete", applied, func() protocol.MirrorView {
			v := view()
			v.Partitions, v.CleanupPolicy = []int32{0, 1, 2}, "compact,delete"
			return v
		}(), protocol.ErrMirrorRefused, "exactly one partition", "kafka-topics --bootstrap-server broker:9092 --create --topic <new topic> --partitions 1"},
		{"compact,delete", applied, func() protocol.MirrorView { v := view(); v.CleanupPolicy = "compact,delete"; return v }(), protocol.ErrMirrorRefused, "compact",
			"kafka-configs --bootstrap-server broker:9092 --alter --entity-type topics --entity-name action-state.flink --add-config cleanup.policy=compact"},
		{"tombstone", applied, view(rec{status: "COMMITTED", plan: p1}, rec{plan: p1, tomb: true}), protocol.ErrMirrorRefused, "fold fails", "attach an empty topic"},
		{"regressed", applied, view(rec{status: "APPLIED", plan: p1}, rec{status: "COMMITTED", plan: p1}), protocol.ErrMirrorRefused, "fold fails", ""},
		{"not Flink Agents' format", applied, view(rec{status: "COMMITTED", plan: p1, key: p1.PlanID + "/COMMITTED"}), protocol.ErrMirrorRefused, "fold fails", ""},
		{"another topic ID", applied, view(rec{status: "APPLIED", plan: other}), protocol.ErrMirrorRefused, "topic ID " + other.TopicID, "empty topic"},
		{"another partition set", applied, view(rec{status: "APPLIED", plan: onePart}), protocol.ErrMirrorRefused, "partition set", ""},
		{"above the boundary", applied, view(rec{status: "APPLIED", plan: above}), protocol.ErrMirrorRefused, "above kcleanup's boundary", "kcleanup adopt --from action-state.flink"},
		{"incomparable with the boundary", applied, view(rec{status: "APPLIED", plan: incomparable}), protocol.ErrMirrorRefused, "above kcleanup's boundary on partition 0", ""},
		{"two incomparable plans", applied, view(rec{status: "APPLIED", plan: plan(t, "a", events.Offsets{0: 15, 1: 5})}, rec{status: "APPLIED", plan: plan(t, "b", events.Offsets{0: 5, 1: 15})}),
			protocol.ErrMirrorRefused, "incomparable", ""},
		{"plans but an unbound control topic", projector.New(), view(rec{status: "APPLIED", plan: p1}), protocol.ErrMirrorRefused, "governs no data topic", "kcleanup adopt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := protocol.AttachMirror(c.st, control, c.v, "broker:9092")
			if c.class == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, c.class) || !strings.Contains(err.Error(), c.want) || !strings.Contains(errors.FlattenHints(err), c.hint) {
				t.Fatalf("got %v (hint %q), want %v containing %q, hint containing %q", err, errors.FlattenHints(err), c.class, c.want, c.hint)
			}
			// No config changes a partition count: a hint that offers one misleads.
			if len(c.v.Partitions) > 1 && strings.Contains(errors.FlattenHints(err), "kafka-configs") {
				t.Fatalf("the hint for %d partitions offers a config fix: %q", len(c.v.Partitions), errors.FlattenHints(err))
			}
		})
	}
}

func TestAttachRefusesWhatTheControlTopicCannotVouchFor(t *testing.T) {
	st := projector.New()
	// A record of a newer kcleanup degrades the projection.
	st.Step(projector.Record{Offset: 0, Key: []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef/PLANNED"),
		Value: []byte(`{"schemaVersion":9,"event":"PLANNED"}`)})
	if d, _ := st.Degraded(); !d {
		t.Fatal("setup: the projection is not degraded")
	}
	if err := protocol.AttachMirror(st, control, view(), ""); !errors.Is(err, protocol.ErrMirrorCannotTell) {
		t.Fatalf("attach on a degraded projection: %v, want ErrCannotTell", err)
	}
}
