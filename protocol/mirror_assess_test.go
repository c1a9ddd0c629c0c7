package protocol_test

import (
	"strings"
	"testing"

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
