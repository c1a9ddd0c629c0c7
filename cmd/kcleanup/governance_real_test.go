package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/gate"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
)

// issue35Env is the first item of issue 35: data topic T with 500 records per partition,
// governed by ops.T.ctl (init --control-topic), boundary 450 committed and its deletion pending
// (no worker runs).
func issue35Env(t *testing.T) (e *readEnv, ctl string) {
	t.Helper()
	e = newReadEnv(t, false)
	kafkatest.Produce(t, e.cl, e.topic, 0, 300)
	kafkatest.Produce(t, e.cl, e.topic, 1, 300)
	ctl = "ops." + e.topic + ".ctl"
	t.Cleanup(func() { e.ops().deleteTopic(t, ctl); e.ops().deleteTopic(t, e.control) })
	code, stdout, stderr := e.run(t, "--control-topic", ctl, "init", "--topic", e.topic)
	wantExit(t, code, exitOK, stdout, stderr)
	plan450 := e.planFile(t, "c450", events.Offsets{0: 450, 1: 450})
	code, stdout, stderr = e.run(t, "--control-topic", ctl, "apply", "--no-wait", plan450)
	wantExit(t, code, exitOK, stdout, stderr)
	return e, ctl
}

// planFile runs kcleanup plan (without a preview: it needs no control topic) for offsets.
func (e *readEnv) planFile(t *testing.T, rp string, offsets events.Offsets) string {
	t.Helper()
	out := filepath.Join(e.dir, rp+".plan.json")
	code, stdout, stderr := e.run(t, "plan", "--markers", e.markers(t, rp+".markers.json", offsets), "--recovery-point", rp, "--no-preview", "--out", out)
	wantExit(t, code, exitOK, stdout, stderr)
	return out
}

// controlTopicExists reports whether topic exists on the broker.
func (e *readEnv) controlTopicExists(t *testing.T, topic string) bool {
	t.Helper()
	_, exists := e.ops().controlRecords(t, topic)
	return exists
}

// TestApplyWithoutTheFlagBesideAnotherControlTopic is the sequence of issue 35, item 1: with
// ops.T.ctl governing T (boundary 450, deletion pending), `kcleanup apply plan350.json` without
// --control-topic used to create T.kcleanup and commit 350 there; validate then said ALLOWED
// for offset 400, doctor said OK, and the pending 450 deleted those records. Now apply (and
// submit, and plan's preview) refuse with nothing written, naming ops.T.ctl; validate cannot
// tell; doctor blocks.
func TestApplyWithoutTheFlagBesideAnotherControlTopic(t *testing.T) {
	e, ctl := issue35Env(t)
	plan350 := e.planFile(t, "c350", events.Offsets{0: 350, 1: 350})
	before := e.ops().snapshot(t, e.topic, ctl)

	for _, cmd := range [][]string{{"apply", plan350}, {"submit", plan350}} {
		code, _, stderr := e.run(t, cmd...)
		opWantFailure(t, code, stderr, exitError,
			"control topic "+e.control+" does not exist, but "+ctl+" governs topic "+e.topic,
			"--control-topic "+ctl, "nothing was written")
		if e.controlTopicExists(t, e.control) {
			t.Fatalf("%s created %s beside %s", cmd[0], e.control, ctl)
		}
	}
	// adopt creates a control topic only where init would: not beside ops.T.ctl.
	p460, _ := opTestPlan(t, e.dir, "c460", e.topic, e.topicID, events.Offsets{0: 460, 1: 460})
	flink := e.ops().flinkControl(t, flinkRecord("COMMITTED", p460))
	code, stdout, stderr := e.run(t, "adopt", "--from", flink)
	opWantFailure(t, code, stdout+stderr, exitError, "control topic "+e.control+" does not exist, but "+ctl+" governs topic "+e.topic, "--control-topic "+ctl)
	if e.controlTopicExists(t, e.control) {
		t.Fatalf("adopt created %s beside %s", e.control, ctl)
	}
	// plan's preview gives apply's verdict.
	code, stdout, stderr = e.run(t, "plan", "--markers", e.markers(t, "m350.json", events.Offsets{0: 350, 1: 350}), "--recovery-point", "c350b", "--out", filepath.Join(e.dir, "c350b.plan.json"))
	opWantFailure(t, code, stdout+stderr, exitError, ctl+" governs topic "+e.topic)
	e.ops().assertUnchanged(t, e.topic, ctl, before)

	// The gate, without the flag, does not allow offset 400 (below the pending 450).
	m400 := e.markers(t, "m400.json", events.Offsets{0: 400, 1: 400})
	doc := e.validate(t, exitCannotTell, "--markers", m400)
	doc.refusal(t, gate.ControlTopicMissing)
	e.validate(t, exitRefused, "--markers", m400, "--control-topic", ctl)

	// doctor without the flag says where T is governed.
	code, stdout, stderr = e.run(t, "doctor", "--topic", e.topic)
	opWantFailure(t, code, stdout+stderr, exitError, ctl+" governs topic "+e.topic, "--control-topic "+ctl)
	if e.controlTopicExists(t, e.control) {
		t.Fatalf("%s was created", e.control)
	}
	e.ops().assertUnchanged(t, e.topic, ctl, before)
}

// TestEveryWriterRefusesBesideABoundControlTopic: two control topics already govern T (the
// second made by hand, as an older build's apply did): every writer refuses, with nothing
// written on either, and the gate cannot tell on either's word, even above both boundaries.
func TestEveryWriterRefusesBesideABoundControlTopic(t *testing.T) {
	e, ctl := issue35Env(t)
	e.createControlTopic(t)
	e.apply(t, "C350", events.Offsets{0: 350, 1: 350}) // the library, as an older build did: no governance check
	plan460 := e.planFile(t, "c460", events.Offsets{0: 460, 1: 460})
	p470, _ := opTestPlan(t, e.dir, "c470", e.topic, e.topicID, events.Offsets{0: 470, 1: 470})
	flink := e.ops().flinkControl(t, flinkRecord("COMMITTED", p470))
	m460 := e.markers(t, "m460.json", events.Offsets{0: 460, 1: 460})
	before, beforeDefault := e.ops().snapshot(t, e.topic, ctl), e.ops().snapshot(t, e.topic, e.control)

	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"apply", plan460}, e.control + " and " + ctl},
		{[]string{"--control-topic", ctl, "apply", plan460}, ctl + " and " + e.control},
		{[]string{"submit", plan460}, e.control + " and " + ctl},
		{[]string{"--control-topic", ctl, "submit", plan460}, ctl + " and " + e.control},
		{[]string{"pin", "--markers", m460, "--recovery-point", "rollback", "--for", "1h", "--reason", "test"}, e.control + " and " + ctl},
		{[]string{"--control-topic", ctl, "pin", "--markers", m460, "--recovery-point", "rollback", "--for", "1h", "--reason", "test"}, ctl + " and " + e.control},
		{[]string{"unpin", "0123456789abcdef", "--topic", e.topic, "--reason", "test"}, e.control + " and " + ctl},
		{[]string{"mirror", "attach", e.topic + ".flink", "--topic", e.topic}, e.control + " and " + ctl},
		{[]string{"adopt", "--from", flink}, e.control + " and " + ctl},
		{[]string{"--control-topic", ctl, "adopt", "--from", flink}, ctl + " and " + e.control},
	} {
		code, stdout, stderr := e.run(t, c.args...)
		opWantFailure(t, code, stdout+stderr, exitError, "control topics "+c.says+" both govern topic "+e.topic, "keep one control topic per data topic")
	}
	e.ops().assertUnchanged(t, e.topic, ctl, before)
	e.ops().assertUnchanged(t, e.topic, e.control, beforeDefault)

	// Above both boundaries, still not ALLOWED on either's word.
	e.validate(t, exitCannotTell, "--markers", m460).refusal(t, gate.GovernedElsewhere, "both govern topic "+e.topic)
	e.validate(t, exitCannotTell, "--markers", m460, "--control-topic", ctl).refusal(t, gate.GovernedElsewhere, "both govern topic "+e.topic)
	for _, args := range [][]string{{"doctor", "--topic", e.topic}, {"--control-topic", ctl, "doctor", "--topic", e.topic}} {
		code, stdout, stderr := e.run(t, args...)
		opWantFailure(t, code, stdout+stderr, exitError, "both govern topic "+e.topic)
	}
}

// TestAppendToAMissingControlTopicCreatesNothing: kcleanup's client never asks the broker to
// create a topic (franz-go's AllowAutoTopicCreation stays off), so a write to a control topic that
// does not exist fails and says to run init.
func TestAppendToAMissingControlTopicCreatesNothing(t *testing.T) {
	e := newReadEnv(t, false)
	if on, _ := e.cluster.Client().OptValue("AllowAutoTopicCreation").(bool); on {
		t.Fatal("the client asks brokers to create topics")
	}
	ctx, cancel := context.WithTimeout(context.Background(), readTestTimeout)
	defer cancel()
	plan, err := events.BuildPlan("C1", []events.Marker{{Topic: e.topic, TopicID: e.topicID, Offsets: events.Offsets{0: 10, 1: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.cluster.Append(ctx, e.control, events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Planned, PlanID: plan.PlanID, Plan: plan,
		At: time.Now(), Actor: "test"})
	if err == nil || !strings.Contains(err.Error(), "does not exist, and no writer creates one") ||
		!strings.Contains(strings.Join(errors.GetAllHints(err), "\n"), "kcleanup init --topic") {
		t.Fatalf("append to a missing control topic: %v %q", err, errors.GetAllHints(err))
	}
	if e.controlTopicExists(t, e.control) {
		t.Fatalf("the append created %s", e.control)
	}
}
