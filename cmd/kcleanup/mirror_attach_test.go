package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/protocol"
)

// controlEnd is the control topic's end offset: what "nothing written" compares.
func (e *opEnv) controlEnd(t *testing.T, control string) int64 {
	t.Helper()
	return e.endOffsets(t, control)[0]
}

// flinkFold reads a topic as the Flink Agents job does and fails the test
// when the job could not recover from it.
func (e *opEnv) flinkFold(t *testing.T, topic string) (events.Offsets, []flinkagents.Operation) {
	t.Helper()
	c, ctx := e.cluster(t)
	ft, err := c.ReadFlinkTopic(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if err := ft.Check(); err != nil {
		t.Fatalf("the Flink Agents job cannot recover from %s: %v", topic, err)
	}
	b, err := ft.Fold.Effective()
	if err != nil {
		t.Fatalf("the Flink Agents job has no boundary on %s: %v", topic, err)
	}
	return b, ft.Fold.Operations()
}

// TestAdoptAttachMirrorThenApply: adopt --attach-mirror makes the Flink
// Agents topic the mirror; a later apply keeps the job's fold valid and its
// boundary equal to kcleanup's; after detach the topic stays valid for the
// job at the boundary it last held. Real broker.
func TestAdoptAttachMirrorThenApply(t *testing.T) {
	e := opTestEnv(t)
	dir := t.TempDir()
	topic, id := e.governedTopic(t, 2, 100, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	p1, _ := opTestPlan(t, dir, "chk-1", topic, id, events.Offsets{0: 30, 1: 20})
	e.deleteRecordsTo(t, topic, p1.Offsets)
	ctl := e.flinkControl(t, flinkRecord("COMMITTED", p1), flinkRecord("APPLIED", p1))

	code, stdout, stderr := e.run(t, "-o", "json", "adopt", "--from", ctl, "--attach-mirror", "--restore-grace", "0") // the apply below deletes at once
	if code != exitOK {
		t.Fatalf("adopt --attach-mirror: exit %d\n%s", code, stderr)
	}
	var ad adoptOutput
	if err := json.Unmarshal([]byte(stdout), &ad); err != nil || ad.Mirror != ctl || !ad.Boundary.Equal(p1.Offsets) {
		t.Fatalf("adopt: %+v %v\n%s", ad, err, stdout)
	}
	if m := e.statusJSON(t, control).Mirror; m == nil || m.Topic != ctl || !m.InStep() {
		t.Fatalf("status after adopt --attach-mirror: %+v", m)
	}

	p2, path2 := opTestPlan(t, dir, "chk-2", topic, id, events.Offsets{0: 60, 1: 40})
	if code, _, stderr := e.run(t, "apply", path2); code != exitOK {
		t.Fatalf("apply with the adopted mirror: exit %d\n%s", code, stderr)
	}
	st := e.statusJSON(t, control)
	b, ops := e.flinkFold(t, ctl)
	if !b.Equal(st.Boundary) || !b.Equal(p2.Offsets) || ops[len(ops)-1].Plan.PlanID != p2.PlanID || ops[len(ops)-1].Status != flinkagents.Applied {
		t.Fatalf("the job's boundary %s (plans %+v), kcleanup's %s", b, ops, st.Boundary)
	}
	if m := st.Mirror; m == nil || !m.InStep() {
		t.Fatalf("status after the apply: %+v", m)
	}
	if code, stdout, _ := e.run(t, "doctor", "--topic", topic); code != exitOK || !strings.Contains(stdout, "OK     mirror topic "+ctl+": in step") {
		t.Errorf("doctor: exit %d\n%s", code, stdout)
	}

	// Back to Flink Agents' tool: detach; the topic keeps p2, valid for the job.
	if code, _, stderr := e.run(t, "mirror", "detach", "--topic", topic, "--reason", "back to Flink Agents' tool"); code != exitOK {
		t.Fatalf("detach: exit %d\n%s", code, stderr)
	}
	if m := e.statusJSON(t, control).Mirror; m != nil {
		t.Fatalf("status after detach still shows a mirror: %+v", m)
	}
	_, path3 := opTestPlan(t, dir, "chk-3", topic, id, events.Offsets{0: 80, 1: 50})
	if code, _, stderr := e.run(t, "apply", path3); code != exitOK {
		t.Fatalf("apply after detach: exit %d\n%s", code, stderr)
	}
	if b, _ := e.flinkFold(t, ctl); !b.Equal(p2.Offsets) {
		t.Errorf("the detached topic's boundary is %s, want %s (the last it held)", b, p2.Offsets)
	}
}

// TestMirrorAttachRefusals: a topic the Flink Agents job would refuse, or
// whose plans do not fit kcleanup's boundary, is refused with exit 1 (3 and 4 are the gate's) and a
// hint, and nothing is written to the control topic. Real broker.
func TestMirrorAttachRefusals(t *testing.T) {
	e := opTestEnv(t)
	dir := t.TempDir()
	topic, id := e.governedTopic(t, 2, 100, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	_, path1 := opTestPlan(t, dir, "chk-1", topic, id, events.Offsets{0: 30, 1: 20})
	if code, _, stderr := e.run(t, "apply", path1); code != exitOK {
		t.Fatalf("apply: exit %d\n%s", code, stderr)
	}
	above, _ := opTestPlan(t, dir, "chk-above", topic, id, events.Offsets{0: 50, 1: 50})
	other, otherID := e.governedTopic(t, 2, 10, opGoodDataConfigs())
	_, pathOther := opTestPlan(t, dir, "chk-other", other, otherID, events.Offsets{0: 5, 1: 5})
	if code, _, stderr := e.run(t, "apply", pathOther); code != exitOK {
		t.Fatalf("apply on the other topic: exit %d\n%s", code, stderr)
	}
	for _, c := range []struct {
		name, mirror string
		want         []string
	}{
		{"missing", topic + ".nothing", []string{"does not exist", "kcleanup init --topic <data topic> --mirror-topic " + topic + ".nothing"}},
		{"compact,delete", kafkatest.NewTopic(t, e.cl, "mirror-cd", 1, map[string]string{"cleanup.policy": "compact,delete"}), []string{"compact", "cleanup.policy=compact"}},
		{"two partitions", kafkatest.NewTopic(t, e.cl, "mirror-2p", 2, map[string]string{"cleanup.policy": "compact"}), []string{"partition"}},
		{"a kcleanup control topic", protocol.ControlTopicFor(other), []string{"fold fails"}},
		{"the control topic", control, []string{"is the control topic or the data topic"}},
		{"the data topic", topic, []string{"is the control topic or the data topic"}},
		{"a plan above the boundary", e.flinkControl(t, flinkRecord("COMMITTED", above)), []string{"above kcleanup's boundary", "kcleanup adopt --from"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := e.controlEnd(t, control)
			code, _, stderr := e.run(t, "mirror", "attach", c.mirror, "--topic", topic)
			opWantFailure(t, code, stderr, exitError, append(c.want, "Hint:", "nothing was written")...)
			if after := e.controlEnd(t, control); after != before {
				t.Errorf("the control topic grew from %d to %d", before, after)
			}
		})
	}
}

// TestInitAttachesTheMirror: init --mirror-topic creates and attaches the
// mirror; run again it writes nothing; the first apply seeds it. Real
// broker.
func TestInitAttachesTheMirror(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 2, 100, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	mirror := e.mirrorTopicName(t, topic)
	// No restore grace (the apply below would otherwise wait out the default 15m).
	code, stdout, stderr := e.run(t, "-o", "json", "init", "--topic", topic, "--mirror-topic", mirror, "--restore-grace", "0")
	if code != exitOK || !strings.Contains(stdout, `"mirrorAttached": true`) {
		t.Fatalf("init: exit %d\n%s\n%s", code, stdout, stderr)
	}
	st := e.statusJSON(t, control)
	if m := st.Mirror; m == nil || m.Topic != mirror || !m.InStep() || m.Plans != 0 {
		t.Fatalf("status after init: %+v", m)
	}
	if g := st.MirrorGrace; g == nil || g.Unset || g.Seconds != 0 {
		t.Fatalf("status after init --restore-grace 0: mirrorGrace %+v, want 0 seconds written with the attachment", g)
	}
	before := e.controlEnd(t, control)
	code, stdout, _ = e.run(t, "init", "--topic", topic, "--mirror-topic", mirror)
	if code != exitOK || !strings.Contains(stdout, "already attached") || e.controlEnd(t, control) != before {
		t.Errorf("second init: exit %d, control end %d (was %d)\n%s", code, e.controlEnd(t, control), before, stdout)
	}
	// Another mirror is not attached over this one by init.
	other := kafkatest.NewTopic(t, e.cl, "other-mirror", 1, map[string]string{"cleanup.policy": "compact"})
	code, stdout, stderr = e.run(t, "init", "--topic", topic, "--mirror-topic", other)
	opWantFailure(t, code, stderr, exitError, "1 problem(s) block cleanup")
	if !strings.Contains(stdout, "BLOCK  mirror topic "+other+": not attached: control topic "+control+" has mirror "+mirror+" attached") ||
		!strings.Contains(stdout, "kcleanup mirror attach "+other) || e.controlEnd(t, control) != before {
		t.Errorf("init with another mirror: control end %d (was %d)\n%s", e.controlEnd(t, control), before, stdout)
	}

	p1, path := opTestPlan(t, t.TempDir(), "chk-1", topic, id, events.Offsets{0: 30, 1: 20})
	if code, _, stderr := e.run(t, "apply", path); code != exitOK {
		t.Fatalf("apply: exit %d\n%s", code, stderr)
	}
	if b, _ := e.flinkFold(t, mirror); !b.Equal(p1.Offsets) {
		t.Errorf("mirror boundary %s after the first apply, want %s", b, p1.Offsets)
	}
	if m := e.statusJSON(t, control).Mirror; m == nil || m.Standing != protocol.MirrorInStep {
		t.Errorf("status after the first apply: %+v", m)
	}
}

// TestMirrorDetachNeedsAReason: detaching without --reason is a usage
// error (exit 2), before anything is read or written.
func TestMirrorDetachNeedsAReason(t *testing.T) {
	clearEnv(t)
	code, _, stderr := runCLI(t, "-b", "127.0.0.1:1", "mirror", "detach", "--topic", "t")
	opWantFailure(t, code, stderr, exitUsage, `"reason" not set`, "Hint:")
}

// TestDoctorChecksTheMirrorACLs: doctor, run with a principal that may read
// the attached mirror but not write it, warns and names the grant (a
// worker running as that principal could not keep the mirror in step);
// without Read it says it cannot check it; with the grants the mirror is in
// step. Never a BLOCK: the operator's permissions block no cleanup. Real
// broker, SASL_SSL with ACLs.
func TestDoctorChecksTheMirrorACLs(t *testing.T) {
	e := newAuditorEnv(t, auditorACLs)
	ops := &opEnv{bootstrap: e.bootstrap, cl: e.cl, adm: kafkatest.Admin(t, e.cl)}
	mirror := kafkatest.NewTopic(t, e.cl, "acl-mirror", 1, map[string]string{"cleanup.policy": "compact"})
	ops.produceMirror(t, mirror, flinkRecord("COMMITTED", e.plan), flinkRecord("APPLIED", e.plan))
	ops.attachByEvent(t, e.control, mirror)

	acl := func(op kmsg.ACLOperation) kafkatest.ACL {
		return kafkatest.ACL{Principal: e.principal, Resource: kmsg.ACLResourceTypeTopic, Name: mirror, Operation: op}
	}
	code, stdout, stderr := e.runAs(t, "doctor", "--topic", e.topic)
	if code != exitOK || !strings.Contains(stdout, "WARN   mirror topic "+mirror+": this client cannot read mirror topic "+mirror) {
		t.Errorf("doctor without Read on the mirror: exit %d\n%s\n%s", code, stdout, stderr)
	}
	kafkatest.Grant(t, e.cl, acl(kmsg.ACLOperationDescribe), acl(kmsg.ACLOperationRead), acl(kmsg.ACLOperationDescribeConfigs))
	code, stdout, stderr = e.runAs(t, "doctor", "--topic", e.topic)
	if want := "grant Write on topic " + mirror + " to " + e.principal; code != exitOK || !strings.Contains(stdout, "WARN   mirror topic "+mirror) || !strings.Contains(stdout, want) {
		t.Errorf("doctor without Write on the mirror: exit %d, want a WARN naming %q\n%s\n%s", code, want, stdout, stderr)
	}
	kafkatest.Grant(t, e.cl, acl(kmsg.ACLOperationWrite))
	code, stdout, stderr = e.runAs(t, "doctor", "--topic", e.topic)
	if code != exitOK || !strings.Contains(stdout, "OK     mirror topic "+mirror+": in step") {
		t.Errorf("doctor with the mirror's ACLs: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestMirrorAttachOnADegradedControlTopicIsRefused: a control topic holding
// a record of a newer kcleanup cannot vouch for its boundary: attach exits 1 (4 is the gate's)
// and writes nothing. Real broker.
func TestMirrorAttachOnADegradedControlTopicIsRefused(t *testing.T) {
	e := opTestEnv(t)
	topic, _ := e.governedTopic(t, 1, 10, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	if code, _, stderr := e.run(t, "init", "--topic", topic); code != exitOK {
		t.Fatalf("init: exit %d\n%s", code, stderr)
	}
	e.appendRaw(t, control, strings.Repeat("ab", 32)+"/PLANNED", `{"schemaVersion":9,"event":"PLANNED"}`)
	mirror := kafkatest.NewTopic(t, e.cl, "mirror-degraded", 1, map[string]string{"cleanup.policy": "compact"})
	before := e.controlEnd(t, control)
	code, _, stderr := e.run(t, "mirror", "attach", mirror, "--topic", topic)
	opWantFailure(t, code, stderr, exitError, "Hint:", "nothing was written")
	if after := e.controlEnd(t, control); after != before {
		t.Errorf("the control topic grew from %d to %d", before, after)
	}
}
