package protocol_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
)

func TestAssess(t *testing.T) {
	p1 := plan(t, "chk-1", events.Offsets{0: 10, 1: 10})
	p2 := plan(t, "chk-2", events.Offsets{0: 20, 1: 20})
	above := plan(t, "chk-3", events.Offsets{0: 30, 1: 30})
	att := events.Mirror{Topic: "action-state.flink", TopicID: mirrorID, Reason: "test"}
	st := state(t, p1, events.Planned, events.Committed, events.Deleting, events.Applied,
		p2, events.Planned, events.Committed, events.Deleting, events.Applied, att)
	fresh := state(t, att)
	if _, ok := st.Mirror(); !ok {
		t.Fatal("setup: no mirror attached")
	}

	for _, c := range []struct {
		name     string
		st       *projector.State
		v        protocol.MirrorView
		writeErr error
		standing protocol.MirrorStanding
		lag      int64
		want     string // in the reason
		hint     string // in the hint
		severity protocol.Severity
	}{
		{"in step", st, view(rec{status: "COMMITTED", plan: p2}, rec{status: "APPLIED", plan: p2}), nil, protocol.MirrorInStep, 0, "", "", protocol.OK},
		{"in step, with an older plan too", st, view(rec{status: "APPLIED", plan: p1}, rec{status: "APPLIED", plan: p2}), nil, protocol.MirrorInStep, 0, "", "", protocol.OK},
		{"nothing to mirror yet", fresh, view(), nil, protocol.MirrorInStep, 0, "", "", protocol.OK},
		{"empty, lagging", st, view(), nil, protocol.MirrorLagging, 40, "holds no plan yet", "owning worker", protocol.Warn},
		{"lagging by a plan", st, view(rec{status: "APPLIED", plan: p1}), nil, protocol.MirrorLagging, 20, "plan " + p2.PlanID + " is not on the mirror", "owning worker", protocol.Warn},
		{"ahead", st, view(rec{status: "APPLIED", plan: above}), nil, protocol.MirrorAhead, 0, "above kcleanup's boundary", "another writer", protocol.Warn},
		{"missing", st, protocol.MirrorView{Topic: att.Topic, Missing: true}, nil, protocol.MirrorUnwritable, 40, "does not exist", "mirror detach", protocol.Block},
		{"recreated", st, func() protocol.MirrorView { v := view(); v.TopicID = "AAAAAAAAAAAAAAAAAAAABA"; return v }(), nil, protocol.MirrorUnwritable, 40, "recreated", "mirror attach action-state.flink --topic action-state", protocol.Block},
		{"misconfigured", st, func() protocol.MirrorView { v := view(); v.CleanupPolicy = "delete"; return v }(), nil, protocol.MirrorUnwritable, 40, "compact", "", protocol.Block},
		{"three partitions", st, func() protocol.MirrorView { v := view(); v.Partitions = []int32{0, 1, 2}; return v }(), nil, protocol.MirrorUnwritable, 40, "exactly one partition", "create a one-partition topic and attach it instead", protocol.Block},
		{"fold fails", st, view(rec{status: "APPLIED", plan: p1}, rec{plan: p1, tomb: true}), nil, protocol.MirrorUnwritable, 40, "fold fails", "", protocol.Block},
		{"no permission", st, view(rec{status: "APPLIED", plan: p2}), errors.WithHint(errors.New("not authorized to write the Flink Agents mirror topic"), "kafka-acls --add …"),
			protocol.MirrorUnwritable, 40, "cannot write", "kafka-acls --add", protocol.Warn},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := protocol.AssessMirror(protocol.MirrorControlOf(c.st), c.v, c.writeErr)
			if a.Standing != c.standing || a.Lag != c.lag || !strings.Contains(a.Reason, c.want) || !strings.Contains(a.Hint, c.hint) {
				t.Fatalf("got %+v, want standing %s, lag %d, reason with %q, hint with %q", a, c.standing, c.lag, c.want, c.hint)
			}
			if (a.Standing == protocol.MirrorInStep) != (a.Reason == "" && a.Hint == "") {
				t.Errorf("in step says why it is not: %+v", a)
			}
			if c.standing == protocol.MirrorInStep && a.Plans > 0 && !a.Boundary.Equal(st.Boundary()) {
				t.Errorf("in step, the mirror's boundary %s is not kcleanup's %s", a.Boundary, st.Boundary())
			}
			if len(c.v.Partitions) > 1 && strings.Contains(a.Hint, "kafka-configs") {
				t.Errorf("the hint for %d partitions offers a config fix: %q", len(c.v.Partitions), a.Hint)
			}
			if a.Denied != (c.writeErr != nil) {
				t.Errorf("denied %v with write error %v", a.Denied, c.writeErr)
			}
			fs := report.MirrorFindings(a, nil, "b:9092")
			if len(fs) == 0 || fs[0].Severity != c.severity {
				t.Errorf("findings %+v, want the first %s", fs, c.severity)
			}
		})
	}
}

func TestFindingsWarnOfDurabilitySettings(t *testing.T) {
	a := protocol.MirrorAssessment{Topic: "m", TopicID: mirrorID, LiveTopicID: mirrorID, Standing: protocol.MirrorInStep}
	fs := report.MirrorFindings(a, map[string]string{"cleanup.policy": "compact", "delete.retention.ms": "1000", "min.compaction.lag.ms": "0"}, "b:9092")
	var warned []string
	for _, f := range fs[1:] {
		if f.Severity != protocol.Warn {
			t.Errorf("a durability setting blocks: %+v", f)
		}
		warned = append(warned, f.Message)
	}
	all := strings.Join(warned, "\n")
	for _, want := range []string{"delete.retention.ms", "min.compaction.lag.ms"} {
		if !strings.Contains(all, want) {
			t.Errorf("no warning about %s in %q", want, all)
		}
	}
}

// TestHeldMirrorSaysWhose: a mirror held by an open transaction is
// neither a failure nor "cannot be written": status and doctor say whose
// transaction it is and what ends it, kcleanup's own writer (fenced by the
// next kcleanup writer) apart from a foreign producer (waited for).
func TestHeldMirrorSaysWhose(t *testing.T) {
	att := events.Mirror{Topic: "action-state.flink", TopicID: mirrorID, Reason: "test"}
	p := plan(t, "chk-1", events.Offsets{0: 10, 1: 10})
	ctl := protocol.MirrorControlOf(state(t, p, events.Planned, events.Committed, att))
	since := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	ours := protocol.MirrorHold{Offset: 52, HighWatermark: 53, ProducerID: 7, ProducerEpoch: 3,
		TransactionalID: protocol.MirrorTransactionalID(att.Topic), KcleanupWriter: true, Since: since, TimeoutMs: 15000}
	foreign := protocol.MirrorHold{Offset: 52, HighWatermark: 53, ProducerID: 9, ProducerEpoch: 0, TransactionalID: "flink-tool", Since: since}
	for _, c := range []struct {
		name   string
		hold   protocol.MirrorHold
		reason []string
		hint   string
		not    string // never in the hint
	}{
		{"kcleanup's writer", ours, []string{"kcleanup's writer kcleanup-mirror-action-state.flink", "since 2026-12-02T09:00:00Z", "offset 52 (end 53)"},
			"fences it", "find and stop"},
		{"a foreign producer", foreign, []string{"foreign producer, transactional ID flink-tool", "since 2026-12-02T09:00:00Z"},
			"kafka-transactions", "fences it"},
		{"a producer that could not be described", protocol.MirrorHold{Offset: 52, HighWatermark: 53, ProducerID: -1, ProducerEpoch: -1, Unknown: "not authorized"},
			[]string{"an unknown producer", "could not be told: not authorized"}, "kafka-transactions", "fences it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := protocol.HeldMirror(ctl, c.hold)
			if a.Standing != protocol.MirrorHeld || a.Hold == nil || *a.Hold != c.hold || a.InStep() {
				t.Fatalf("got %+v, want standing held with the hold", a)
			}
			for _, w := range c.reason {
				if !strings.Contains(a.Reason, w) {
					t.Errorf("reason %q lacks %q", a.Reason, w)
				}
			}
			if !strings.Contains(a.Hint, c.hint) || strings.Contains(a.Hint, c.not) {
				t.Errorf("hint %q: want %q in it, not %q", a.Hint, c.hint, c.not)
			}
			if fs := report.MirrorFindings(a, nil, "b:9092"); len(fs) != 1 || fs[0].Severity != protocol.Warn {
				t.Errorf("doctor's findings %+v, want one warning (it passes; nothing is deleted meanwhile)", fs)
			}
		})
	}
}
