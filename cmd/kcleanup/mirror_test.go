package main

import (
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/protocol"
)

// TestMirrorCommands: attach, apply, detach through the CLI on the real
// broker; the mirror holds what a Flink Agents job needs; mistakes fail
// with an Error and a Hint, nothing attached.
func TestMirrorCommands(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 2, 200, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	dir := t.TempDir()
	p1, path1 := opTestPlan(t, dir, "chk-1", topic, id, events.Offsets{0: 100, 1: 50})
	if code, _, stderr := e.run(t, "apply", path1); code != exitOK {
		t.Fatalf("apply: exit %d\n%s", code, stderr)
	}
	mirror := kafkatest.NewTopic(t, e.cl, topic+".flink", 1, map[string]string{"cleanup.policy": "compact"})

	code, _, stderr := e.run(t, "mirror", "attach", topic+".nothing", "--topic", topic)
	opWantFailure(t, code, stderr, exitError, "does not exist", "kafka-topics")

	// No restore grace here (TestApplyWaitsOutTheRestoreGrace has one): the apply below deletes at once.
	code, stdout, stderr := e.run(t, "mirror", "attach", mirror, "--topic", topic, "--reason", "the job reads it", "--restore-grace", "0")
	if code != exitOK || !strings.Contains(stdout, "mirror "+mirror) || !strings.Contains(stderr, "MIRROR_ATTACHED") {
		t.Fatalf("mirror attach: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	c, ctx := e.cluster(t)
	view, err := c.ReadMirror(ctx, mirror)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := view.Fold.Effective(); err != nil || !b.Equal(p1.Offsets) {
		t.Fatalf("seeded mirror: boundary %v, %v; want %v", b, err, p1.Offsets)
	}

	p2, path2 := opTestPlan(t, dir, "chk-2", topic, id, events.Offsets{0: 150, 1: 120})
	code, _, stderr = e.run(t, "apply", path2)
	if code != exitOK || !strings.Contains(stderr, "[mirror] COMMITTED "+p2.PlanID+" written to mirror "+mirror) {
		t.Fatalf("apply with the mirror: exit %d\n%s", code, stderr)
	}
	view, _ = c.ReadMirror(ctx, mirror)
	ops := view.Fold.Operations()
	if b, err := view.Fold.Effective(); err != nil || !b.Equal(p2.Offsets) || ops[len(ops)-1].Status != flinkagents.Applied {
		t.Fatalf("mirror after apply: boundary %v, %v, %+v", b, err, ops)
	}

	code, stdout, _ = e.run(t, "-o", "json", "mirror", "detach", "--control-topic", control, "--reason", "job retired")
	if code != exitOK || !strings.Contains(stdout, `"result": "detached"`) {
		t.Fatalf("mirror detach: exit %d\n%s", code, stdout)
	}
	code, _, stderr = e.run(t, "mirror", "detach", "--topic", topic, "--reason", "again")
	opWantFailure(t, code, stderr, exitError, "no mirror attached")

	// history shows the mirror events, in its schema.
	code, stdout, stderr = e.run(t, "-o", "json", "history", "--topic", topic)
	if code != exitOK || !strings.Contains(stdout, `"event": "MIRROR_ATTACHED"`) || !strings.Contains(stdout, `"event": "MIRROR_DETACHED"`) {
		t.Fatalf("history: exit %d\n%s\n%s", code, stdout, stderr)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(stdout))
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas(t)["history.schema.json"].Validate(inst); err != nil {
		t.Fatalf("history with mirror events does not match its schema: %v", err)
	}
	code, stdout, _ = e.run(t, "mirror", "sync", "--topic", topic)
	if code != exitOK || !strings.Contains(stdout, "no mirror attached") {
		t.Fatalf("mirror sync without a mirror: exit %d\n%s", code, stdout)
	}
}
