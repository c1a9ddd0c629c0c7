package report_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
)

func TestCheckProjection(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	base := func() report.Status {
		return report.Status{ControlTopic: "t.kcleanup", ReadTo: 7, Boundary: events.Offsets{0: 5}}
	}
	sev := func(fs []protocol.Finding) string {
		var out []string
		for _, f := range fs {
			out = append(out, string(f.Severity)+":"+f.Message)
		}
		return strings.Join(out, "\n")
	}

	if fs := report.CheckProjection(base(), now, time.Minute); len(fs) != 1 || fs[0].Severity != protocol.OK ||
		fs[0].Message != "read to offset 7: 0 operation(s), boundary on 1 partition(s), nothing rejected" {
		t.Errorf("healthy: %s", sev(fs))
	}

	st := base()
	st.Degraded, st.DegradedReason = true, "record 3 uses schema version 2"
	st.Rejected = []report.RejectedRecord{{Offset: 1, Reason: projector.ReasonMalformed, Detail: "x"}, {Offset: 4, Reason: projector.ReasonTombstone, Detail: "y"}}
	st.UnrepairedKeys = 2
	st.Operations = []report.OperationStatus{
		{PlanID: "old", State: fsm.Deleting, UpdatedAt: now.Add(-time.Hour), DeleteAttempts: 3},
		{PlanID: "new", State: fsm.Committed, UpdatedAt: now.Add(-time.Second)},
		{PlanID: "done", State: fsm.Applied, UpdatedAt: now.Add(-time.Hour)},
		{PlanID: "proposed", State: fsm.Planned, UpdatedAt: now.Add(-time.Hour)},
	}
	got := sev(report.CheckProjection(st, now, time.Minute))
	want := strings.Join([]string{
		"block:degraded: record 3 uses schema version 2",
		"warn:2 record(s) rejected; the last at offset 4: tombstone: y",
		"warn:plan old has been DELETING since 2026-01-02T02:04:05Z (1h0m0s): no worker finished it (3 delete attempt(s))",
		"ok:plan new is COMMITTED since 2026-01-02T03:04:04Z: deletion in progress",
		"warn:2 accepted record(s) are listed for repair (key overwritten, or out of compaction-safe order); a worker re-appends them",
	}, "\n")
	if got != want {
		t.Errorf("findings:\n%s\nwant:\n%s", got, want)
	}
	if n := len(protocol.Blocking(report.CheckProjection(st, now, time.Minute))); n != 1 {
		t.Errorf("%d blocking findings, want 1 (degraded)", n)
	}
}

func TestCheckBinding(t *testing.T) {
	live := protocol.Topic{Name: "t", ID: "oBnTyPS2TqmC9ctLrPFH6w"}
	for _, tc := range []struct {
		topic, id string
		sev       protocol.Severity
		msg       string
	}{
		{"", "", protocol.OK, "governs no topic yet"},
		{"t", "oBnTyPS2TqmC9ctLrPFH6w", protocol.OK, "is the one control topic c governs"},
		{"u", "oBnTyPS2TqmC9ctLrPFH6w", protocol.Block, "control topic c governs topic u, not t"},
		{"t", "AAAAAAAAAAAAAAAAAAAAAQ", protocol.Block, "has topic ID oBnTyPS2TqmC9ctLrPFH6w, but control topic c governs ID AAAAAAAAAAAAAAAAAAAAAQ: the topic was deleted and recreated"},
	} {
		fs := report.CheckBinding(report.Status{ControlTopic: "c", Topic: tc.topic, TopicID: tc.id}, live)
		if len(fs) != 1 || fs[0].Severity != tc.sev || !strings.Contains(fs[0].Message, tc.msg) || (tc.sev == protocol.Block) != (fs[0].Hint != "") {
			t.Errorf("%s/%s: %+v", tc.topic, tc.id, fs)
		}
	}
}

func TestCheckControlTopicDurability(t *testing.T) {
	for _, tc := range []struct {
		replicas int
		minISR   string
		warn     bool
	}{
		{1, "1", false}, {3, "2", false}, {3, "1", true}, {5, "1", true},
	} {
		fs := report.CheckControlTopicDurability(protocol.Topic{Name: "c", Replicas: tc.replicas, Configs: map[string]string{"min.insync.replicas": tc.minISR}}, "b:9092")
		if (len(fs) == 1 && fs[0].Severity == protocol.Warn && strings.Contains(fs[0].Hint, "--add-config min.insync.replicas=2")) != tc.warn || len(fs) > 1 {
			t.Errorf("%+v: %+v", tc, fs)
		}
	}
}
