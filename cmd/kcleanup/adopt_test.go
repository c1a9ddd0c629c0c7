package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
)

// flinkControl creates a control topic in Flink Agents' format holding recs
// (values from kafkatest.FlinkRecord), as Flink Agents' tool leaves it.
func (e *opEnv) flinkControl(t *testing.T, recs ...*kgo.Record) string {
	t.Helper()
	ctl := kafkatest.NewTopic(t, e.cl, "flink-cleanup", 1, map[string]string{"cleanup.policy": "compact"})
	for _, r := range recs {
		r.Topic = ctl
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTestTimeout)
	defer cancel()
	if err := e.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return ctl
}

func flinkRecord(status string, p events.Plan) *kgo.Record {
	return &kgo.Record{Key: []byte(p.PlanID), Value: kafkatest.FlinkRecord(status, p)}
}

// adopt from a Flink Agents control topic: kcleanup's boundary becomes the
// job's effective boundary, validate refuses what the job refuses with the
// job's words, history shows the adopted plans; a topic the job cannot
// fold is refused and nothing is written. Real broker.
func TestAdoptFromFlinkAgents(t *testing.T) {
	e := opTestEnv(t)
	dir := t.TempDir()
	topic, id := e.dataTopic(t, 2, 100, opGoodDataConfigs())
	p1, _ := opTestPlan(t, dir, "chk-1", topic, id, events.Offsets{0: 30, 1: 20})
	p2, _ := opTestPlan(t, dir, "chk-2", topic, id, events.Offsets{0: 60, 1: 20})
	e.deleteRecordsTo(t, topic, p1.Offsets)
	ctl := e.flinkControl(t, flinkRecord("COMMITTED", p1), flinkRecord("APPLIED", p1), flinkRecord("COMMITTED", p2))

	code, out, stderr := e.run(t, "adopt", "--from", ctl, "-o", "json")
	if code != 0 {
		t.Fatalf("adopt: exit %d\n%s", code, stderr)
	}
	var ad worker.Adoption
	if err := json.Unmarshal([]byte(out), &ad); err != nil {
		t.Fatal(err)
	}
	if !ad.Boundary.Equal(events.Offsets{0: 60, 1: 20}) || ad.ControlTopic != protocol.ControlTopicFor(topic) || len(ad.Plans) != 2 {
		t.Fatalf("adoption %+v", ad)
	}
	st := e.status(t, protocol.ControlTopicFor(topic))
	if !st.Boundary.Equal(events.Offsets{0: 60, 1: 20}) {
		t.Fatalf("status boundary %v", st.Boundary)
	}

	below := opTestMarkers(t, dir, "below.json", events.Marker{Topic: topic, TopicID: id, Offsets: events.Offsets{0: 59, 1: 90}})
	code, _, stderr = e.run(t, "validate", "--markers", below)
	opWantFailure(t, code, stderr, 3, "from offset 59 because the committed cleanup boundary is 60")
	at := opTestMarkers(t, dir, "at.json", events.Marker{Topic: topic, TopicID: id, Offsets: events.Offsets{0: 60, 1: 20}})
	if code, _, stderr = e.run(t, "validate", "--markers", at); code != 0 {
		t.Fatalf("validate at the boundary: exit %d\n%s", code, stderr)
	}
	code, out, _ = e.run(t, "history", "--topic", topic)
	if code != 0 || !strings.Contains(out, p1.PlanID[:12]) || !strings.Contains(out, p2.PlanID[:12]) {
		t.Fatalf("history does not show the adopted plans:\n%s", out)
	}

	// The job cannot fold a regressed applied plan: neither does adopt.
	topic2, id2 := e.dataTopic(t, 1, 10, opGoodDataConfigs())
	q, _ := opTestPlan(t, filepath.Join(dir), "chk-q", topic2, id2, events.Offsets{0: 5})
	bad := e.flinkControl(t, flinkRecord("APPLIED", q), flinkRecord("COMMITTED", q))
	code, _, stderr = e.run(t, "adopt", "--from", bad)
	opWantFailure(t, code, stderr, 1, "regressed applied plan", "nothing written")
	if _, exists := e.controlRecords(t, protocol.ControlTopicFor(topic2)); exists {
		t.Error("a refused adoption created the control topic")
	}
}

// validate reads a control topic in Flink Agents' format by the job's own
// rules: it refuses what the job refuses (exit 3, the job's words), allows
// what it allows, and cannot tell (exit 4) when the job's fold fails.
// Real broker.
func TestValidateFlinkAgentsControlTopic(t *testing.T) {
	e := opTestEnv(t)
	dir := t.TempDir()
	topic, id := e.dataTopic(t, 2, 100, opGoodDataConfigs())
	p1, _ := opTestPlan(t, dir, "chk-1", topic, id, events.Offsets{0: 30, 1: 20})
	p2, _ := opTestPlan(t, dir, "chk-2", topic, id, events.Offsets{0: 60, 1: 20})
	ctl := e.flinkControl(t, flinkRecord("COMMITTED", p1), flinkRecord("APPLIED", p1), flinkRecord("COMMITTED", p2))

	below := opTestMarkers(t, dir, "below.json", events.Marker{Topic: topic, TopicID: id, Offsets: events.Offsets{0: 59, 1: 90}})
	code, _, stderr := e.run(t, "validate", "--control-topic", ctl, "--markers", below)
	opWantFailure(t, code, stderr, 3, "from offset 59 because the committed cleanup boundary is 60")
	at := opTestMarkers(t, dir, "at.json", events.Marker{Topic: topic, TopicID: id, Offsets: events.Offsets{0: 60, 1: 20}})
	if code, _, stderr := e.run(t, "validate", "--control-topic", ctl, "--markers", at); code != 0 {
		t.Fatalf("validate at the job's boundary: exit %d\n%s", code, stderr)
	}

	// status and history read it by the job's rules too.
	code, out, stderr := e.run(t, "status", "--control-topic", ctl, "-o", "json")
	var st report.Status
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status: exit %d\n%s%s", code, out, stderr)
	}
	if st.Format != projector.FormatFlinkAgents || st.FlinkAgents == nil || !st.FlinkAgents.EffectiveBoundary.Equal(events.Offsets{0: 60, 1: 20}) ||
		len(st.FlinkAgents.Plans) != 2 || st.FlinkAgents.BoundarySetBy[0] != p2.PlanID {
		t.Fatalf("status of a Flink Agents topic: %+v", st.FlinkAgents)
	}
	code, out, _ = e.run(t, "status", "--control-topic", ctl)
	if code != 0 || !strings.Contains(out, "Flink Agents' own cleanup tool") || !strings.Contains(out, "Effective boundary") {
		t.Fatalf("status table:\n%s", out)
	}
	code, out, _ = e.run(t, "history", "--control-topic", ctl, "-o", "json")
	var h historyDoc
	if code != 0 || json.Unmarshal([]byte(out), &h) != nil || len(h.FlinkAgents) != 3 || h.FlinkAgents[2].Verdict != "folded" || h.FlinkAgents[2].Status != "COMMITTED" {
		t.Fatalf("history of a Flink Agents topic: %s", out)
	}

	// doctor checks it by the job's rules, not kcleanup's settings rules,
	// and says kcleanup will not write there; apply writes nothing.
	code, out, stderr = e.run(t, "doctor", "--control-topic", ctl)
	if code != 1 || !strings.Contains(out, "Flink Agents' control format") || !strings.Contains(out, "effective boundary 0=60 1=20") ||
		strings.Contains(out, "min.compaction.lag.ms") || strings.Contains(out, "rejected") {
		t.Fatalf("doctor of a Flink Agents topic: exit %d\n%s%s", code, out, stderr)
	}
	before, _ := e.controlRecords(t, ctl)
	_, path3 := opTestPlan(t, dir, "chk-3", topic, id, events.Offsets{0: 70, 1: 20})
	if code, _, _ = e.run(t, "apply", path3, "--control-topic", ctl); code == 0 {
		t.Fatal("apply to a Flink Agents control topic succeeded")
	}
	if after, _ := e.controlRecords(t, ctl); len(after) != len(before) || e.logStarts(t, topic)[0] != 0 {
		t.Fatalf("apply wrote to the Flink Agents topic (%d -> %d records) or deleted records", len(before), len(after))
	}

	broken := e.flinkControl(t, flinkRecord("APPLIED", p2), flinkRecord("COMMITTED", p2))
	// The documents match their schemas, for a healthy and a broken topic.
	s := schemas(t)
	for _, args := range [][]string{{"status", "--control-topic", ctl}, {"history", "--control-topic", ctl},
		{"status", "--control-topic", broken}, {"history", "--control-topic", broken}} {
		_, out, _ := e.run(t, append([]string{"-o", "json"}, args...)...)
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
		if err == nil {
			err = s[args[0]+".schema.json"].Validate(inst)
		}
		if err != nil {
			t.Errorf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	code, out, _ = e.run(t, "history", "--control-topic", broken)
	if code != 0 || !strings.Contains(out, "fails") || !strings.Contains(out, "regressed applied plan") {
		t.Fatalf("history of a broken Flink Agents topic:\n%s", out)
	}
	code, out, _ = e.run(t, "status", "--control-topic", broken)
	if code != 0 || !strings.Contains(out, "UNKNOWN: the job's recovery fails") {
		t.Fatalf("status of a broken Flink Agents topic:\n%s", out)
	}
	code, _, stderr = e.run(t, "validate", "--control-topic", broken, "--markers", at)
	opWantFailure(t, code, stderr, 4, "regressed applied plan")
}
