package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/topicconfig"
)

// mirrorTopicName is a fresh mirror topic name for topic, deleted after the test.
func (e *opEnv) mirrorTopicName(t *testing.T, topic string) string {
	t.Helper()
	m := topic + ".flink-cleanup"
	t.Cleanup(func() { e.deleteTopic(t, m) })
	return m
}

// attachByEvent appends MIRROR_ATTACHED for mirror to control, as an
// attach does, and checks the fold accepted it.
func (e *opEnv) attachByEvent(t *testing.T, control, mirror string) {
	t.Helper()
	c, ctx := e.cluster(t)
	proj, err := c.Project(ctx, control)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	env := events.NewMirrorEvent(events.MirrorAttached, events.Mirror{Topic: mirror, TopicID: e.topicID(t, mirror), Reason: "test"}, time.Now().UTC(), "test")
	if v, err := proj.Decide(ctx, env); err != nil || v.Outcome != "accepted" {
		t.Fatalf("MIRROR_ATTACHED: %+v %v", v, err)
	}
}

// produceMirror writes Flink Agents records to the mirror, as a writer of
// the job's format does.
func (e *opEnv) produceMirror(t *testing.T, mirror string, recs ...*kgo.Record) {
	t.Helper()
	_, ctx := e.cluster(t)
	for _, r := range recs {
		r.Topic = mirror
	}
	if err := e.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func (e *opEnv) statusJSON(t *testing.T, control string) report.Status {
	t.Helper()
	code, stdout, stderr := e.run(t, "-o", "json", "status", "--control-topic", control)
	if code != exitOK {
		t.Fatalf("status: exit %d\n%s", code, stderr)
	}
	var st report.Status
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatal(err)
	}
	validateStatusSchema(t, []byte(stdout))
	return st
}

// TestInitCreatesTheMirrorTopic: init --mirror-topic creates the mirror with
// one partition, cleanup.policy=compact and the control topic's durability
// settings; run again it finds it; a mirror the job would refuse blocks.
// Real broker.
func TestInitCreatesTheMirrorTopic(t *testing.T) {
	e := opTestEnv(t)
	topic, _ := e.governedTopic(t, 2, 10, opGoodDataConfigs())
	mirror := e.mirrorTopicName(t, topic)

	code, stdout, stderr := e.run(t, "-o", "json", "init", "--topic", topic, "--mirror-topic", mirror)
	if code != exitOK {
		t.Fatalf("init: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var d struct {
		opFindingsDoc
		MirrorTopic        string `json:"mirrorTopic"`
		MirrorTopicCreated bool   `json:"mirrorTopicCreated"`
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	if d.MirrorTopic != mirror || !d.MirrorTopicCreated || len(d.blocking("")) != 0 {
		t.Errorf("init: %+v", d)
	}
	cfg := e.topicConfigs(t, mirror) // also checks one partition
	for k, want := range topicconfig.CreateSettings() {
		if cfg[k] != want {
			t.Errorf("mirror topic %s=%q, want %q", k, cfg[k], want)
		}
	}
	code, stdout, stderr = e.run(t, "init", "--topic", topic, "--mirror-topic", mirror)
	if code != exitOK || !strings.Contains(stdout, "OK     mirror topic "+mirror+": exists: one partition, cleanup.policy=compact") {
		t.Errorf("second init: exit %d\n%s\n%s", code, stdout, stderr)
	}

	t.Run("refused by the job", func(t *testing.T) {
		bad := kafkatest.NewTopic(t, e.cl, "badmirror", 1, map[string]string{"cleanup.policy": "compact,delete"})
		code, stdout, stderr := e.run(t, "init", "--topic", topic, "--mirror-topic", bad)
		opWantFailure(t, code, stderr, exitError, "1 problem(s) block cleanup")
		if !strings.Contains(stdout, "BLOCK  mirror topic "+bad) || !strings.Contains(stdout, "cleanup.policy=compact") {
			t.Errorf("stdout:\n%s", stdout)
		}
	})
	t.Run("the data topic", func(t *testing.T) {
		code, _, stderr := e.run(t, "init", "--topic", topic, "--mirror-topic", topic)
		opWantFailure(t, code, stderr, exitUsage, "is the data topic or the control topic")
	})
}

// TestStatusAndDoctorShowTheMirror: with a mirror attached, status (text
// and JSON) and doctor say whether it is in step, lags (by which plan),
// is misconfigured or was recreated, each with the fix. Real broker.
func TestStatusAndDoctorShowTheMirror(t *testing.T) {
	e := opTestEnv(t)
	dir := t.TempDir()
	topic, id := e.governedTopic(t, 2, 100, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	// Not init --mirror-topic, which attaches it (and the apply would then
	// seed it): the mirror is attached after the apply, by its event alone.
	mirror := kafkatest.NewTopic(t, e.cl, topic+".flink", 1, topicconfig.CreateSettings())
	p1, path := opTestPlan(t, dir, "chk-1", topic, id, events.Offsets{0: 30, 1: 20})
	if code, _, stderr := e.run(t, "apply", path); code != exitOK {
		t.Fatalf("apply: exit %d\n%s", code, stderr)
	}
	e.attachByEvent(t, control, mirror)

	// Empty: lagging by the whole boundary, the plan named.
	st := e.statusJSON(t, control)
	if m := st.Mirror; m == nil || m.Standing != protocol.MirrorLagging || m.Lag != 50 || m.BoundaryPlan != p1.PlanID || m.Topic != mirror {
		t.Fatalf("status mirror: %+v", st.Mirror)
	}
	code, stdout, stderr := e.run(t, "status", "--control-topic", control)
	t.Logf("kcleanup status, the mirror lagging:\n%s", stdout)
	if code != exitOK || !strings.Contains(stdout, "Flink Agents mirror:  "+mirror) || !strings.Contains(stdout, "LAGGING (lag 50)") {
		t.Errorf("status: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, _ = e.run(t, "doctor", "--topic", topic)
	if code != exitOK || !strings.Contains(stdout, "WARN   mirror topic "+mirror+": lagging (lag 50)") {
		t.Errorf("doctor, lagging mirror: exit %d\n%s", code, stdout)
	}

	// What the hint says: mirror sync writes the plan that sets the
	// boundary; in step.
	if code, _, stderr := e.run(t, "mirror", "sync", "--topic", topic); code != exitOK {
		t.Fatalf("mirror sync: exit %d\n%s", code, stderr)
	}
	st = e.statusJSON(t, control)
	if m := st.Mirror; m == nil || !m.InStep() || !m.Boundary.Equal(st.Boundary) || m.Plans != 1 {
		t.Fatalf("status mirror after the write: %+v", st.Mirror)
	}
	code, stdout, _ = e.run(t, "doctor", "--topic", topic)
	if code != exitOK || !strings.Contains(stdout, "OK     mirror topic "+mirror+": in step") {
		t.Errorf("doctor, mirror in step: exit %d\n%s", code, stdout)
	}

	// Misconfigured: cleanup.policy the job refuses.
	e.setTopicConfig(t, mirror, "cleanup.policy", "compact,delete")
	code, stdout, stderr = e.run(t, "doctor", "--topic", topic)
	opWantFailure(t, code, stderr, exitError, "1 problem(s) block cleanup")
	if !strings.Contains(stdout, "BLOCK  mirror topic "+mirror+": cannot-be-written") || !strings.Contains(stdout, "cleanup.policy") {
		t.Errorf("doctor, misconfigured mirror:\n%s", stdout)
	}
	e.setTopicConfig(t, mirror, "cleanup.policy", "compact")

	// Recreated: another topic ID than the attached one.
	e.recreate(t, mirror, 1, topicconfig.CreateSettings())
	st = e.statusJSON(t, control)
	if m := st.Mirror; m == nil || m.Standing != protocol.MirrorUnwritable || !strings.Contains(m.Reason, "recreated") || m.LiveTopicID == m.TopicID {
		t.Fatalf("status, recreated mirror: %+v", st.Mirror)
	}
	code, stdout, _ = e.run(t, "doctor", "--topic", topic)
	if code != exitError || !strings.Contains(stdout, "deleted and recreated") || !strings.Contains(stdout, "kcleanup mirror attach "+mirror+" --topic "+topic) {
		t.Errorf("doctor, recreated mirror: exit %d\n%s", code, stdout)
	}
}

// validateStatusSchema checks a status document against docs/schema/status.schema.json.
func validateStatusSchema(t *testing.T, doc []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas(t)["status.schema.json"].Validate(inst); err != nil {
		t.Errorf("status does not match status.schema.json: %v\n%s", err, doc)
	}
}
