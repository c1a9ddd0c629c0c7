package main

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
)

// produceValue appends one record to topic-p with value (nil: a tombstone) and returns its offset.
func (e *opEnv) produceValue(t *testing.T, topic string, p int32, key string, value []byte) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTestTimeout)
	defer cancel()
	r := &kgo.Record{Topic: topic, Partition: p, Key: []byte(key), Value: value}
	if err := e.cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return r.Offset
}

// tombstoneTopic is a two-partition data topic of 100 records each, with a tombstone at offset
// 100 of partition 0 (then 20 records more) and an empty, non-null value at offset 100 of
// partition 1 (then 20 more): a plan at 0=50 1=60 has a tombstone above it on partition 0 only.
func (e *opEnv) tombstoneTopic(t *testing.T) (topic, id string) {
	t.Helper()
	topic, id = e.dataTopic(t, 2, 100, opGoodDataConfigs())
	if off := e.produceValue(t, topic, 0, "gone", nil); off != 100 {
		t.Fatalf("tombstone at %d, want 100", off)
	}
	e.produceValue(t, topic, 1, "empty", []byte{})
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 20; i++ {
			e.produceValue(t, topic, p, "after", []byte("v"))
		}
	}
	return topic, id
}

// TestFirstPlanRefusedByATombstoneAboveIt: a control topic's first plan whose offsets a
// tombstone follows in one partition is refused by plan (exit 1), submit and apply (exit 1,
// nothing written: no control topic even), naming the partition, the tombstone's offset and
// the migration steps. An empty value is not a tombstone (partition 1).
func TestFirstPlanRefusedByATombstoneAboveIt(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.tombstoneTopic(t)
	control := protocol.ControlTopicFor(topic)
	dir := t.TempDir()
	markers := opTestMarkers(t, dir, "m.json", events.Marker{Topic: topic, TopicID: id, Offsets: events.Offsets{0: 50, 1: 60}})
	want := []string{"partition 0: a tombstone (null value) at offset 100, at or above the plan offset 50",
		"make the first plan from that post-tombstone recovery point"}

	// Before init no command creates the control topic (issue 35): plan, submit and apply say so.
	code, stdout, stderr := e.run(t, "plan", "--markers", markers, "--recovery-point", "C1", "--out", dir+"/C1.plan.json")
	opWantFailure(t, code, stdout+stderr, 1, "control topic "+control+" does not exist", "kcleanup init --topic "+topic)
	before := e.snapshot(t, topic, control)
	for _, cmd := range [][]string{{"submit", dir + "/C1.plan.json"}, {"apply", dir + "/C1.plan.json"}} {
		code, _, stderr := e.run(t, cmd...)
		opWantFailure(t, code, stderr, 1, "control topic "+control+" does not exist", "nothing was committed or deleted")
		e.assertUnchanged(t, topic, control, before)
	}
	if before.controlExists {
		t.Fatalf("control topic %s exists before any command made it", control)
	}
	// With the control topic made by init (no boundary yet), plan, submit and apply refuse the
	// first plan for the tombstone, and the control topic stays empty.
	if code, stdout, stderr := e.run(t, "init", "--topic", topic); code != 0 {
		t.Fatalf("init: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = e.run(t, "plan", "--markers", markers, "--recovery-point", "C1", "--out", dir+"/C1-again.plan.json")
	opWantFailure(t, code, stdout+stderr, 1, append(want, "apply would refuse this plan now")...)
	if strings.Contains(stdout, "partition 1:") {
		t.Errorf("an empty value was taken for a tombstone:\n%s", stdout)
	}
	for _, cmd := range [][]string{{"submit", dir + "/C1.plan.json"}, {"apply", "--no-wait", dir + "/C1.plan.json"}} {
		code, _, stderr := e.run(t, cmd...)
		opWantFailure(t, code, stderr, 1, append(want, "nothing was committed or deleted")...)
	}
	var initialised opSnapshot
	kafkatest.Eventually(t, opTestTimeout, "the control topic init made is listed", func() bool {
		initialised = e.snapshot(t, topic, control)
		return initialised.controlExists
	})
	if initialised.controlEnd != 0 {
		t.Fatalf("after init: %+v", initialised)
	}
	code, _, stderr = e.run(t, "apply", dir+"/C1.plan.json")
	opWantFailure(t, code, stderr, 1, want...)
	e.assertUnchanged(t, topic, control, initialised)
	// doctor, before any plan, says where the first plan must lie above.
	if _, stdout, _ := e.run(t, "doctor", "--topic", topic); !strings.Contains(stdout,
		"partition 0: a tombstone (null value) at offset 100 (the latest found): the first plan's offset must lie above it") {
		t.Errorf("doctor does not say where the first plan must lie:\n%s", stdout)
	}

	// The operator who read the migration section allows them: COMMITTED records it.
	code, _, stderr = e.run(t, "apply", "--no-wait", "--allow-tombstones", dir+"/C1.plan.json")
	if code != 0 {
		t.Fatalf("apply --allow-tombstones: exit %d\n%s", code, stderr)
	}
	st := e.status(t, control)
	if len(st.Operations) != 1 || st.Operations[0].State != fsm.Committed {
		t.Fatalf("operations %+v", st.Operations)
	}
	if got := actorOf(t, e, control, events.Committed); !strings.Contains(got, "(allowed tombstones: 0@100)") {
		t.Errorf("COMMITTED's actor %q does not record the acknowledgement", got)
	}
	if _, history, _ := e.run(t, "history", "--control-topic", control); !strings.Contains(history, "allowed tombstones: 0@100") {
		t.Errorf("history does not show the acknowledgement:\n%s", history)
	}
	// Above the boundary now: doctor blocks, as the workers do.
	code, stdout, _ = e.run(t, "doctor", "--topic", topic)
	opWantFailure(t, code, stdout, 1, "BLOCK  data topic "+topic+": the job writes tombstones again",
		topic+"-0: a tombstone at offset 100, at or above the committed boundary 50")
}

// TestFirstPlanAboveEveryTombstone: tombstones below the plan's offsets (a job that stopped
// emitting them before the recovery point) are harmless: plan exits 0 and apply applies.
func TestFirstPlanAboveEveryTombstone(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.tombstoneTopic(t)
	e.initControlTopic(t, topic)
	dir := t.TempDir()
	markers := opTestMarkers(t, dir, "m.json", events.Marker{Topic: topic, TopicID: id, Offsets: events.Offsets{0: 101, 1: 60}})
	code, stdout, stderr := e.run(t, "plan", "--markers", markers, "--recovery-point", "C1", "--out", dir+"/C1.plan.json")
	if code != 0 || !strings.Contains(stdout, "apply would accept this plan now") {
		t.Fatalf("plan: exit %d\n%s%s", code, stdout, stderr)
	}
	code, _, stderr = e.run(t, "apply", dir+"/C1.plan.json")
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, stderr)
	}
	if got := e.logStarts(t, topic); !got.Equal(events.Offsets{0: 101, 1: 60}) {
		t.Errorf("log starts %v", got)
	}
	if !strings.Contains(stderr, "[tombstones] read "+topic+" for tombstones from 0=101 1=60") {
		t.Errorf("apply does not say it read the topic for tombstones:\n%s", stderr)
	}
}

// TestTombstoneScanLimitCannotTell: a scan the limit stops says cannot tell, never "no
// tombstones": plan exits 1 and apply writes nothing, on a topic that has none.
func TestTombstoneScanLimitCannotTell(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 2, 100, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	dir := t.TempDir()
	markers := opTestMarkers(t, dir, "m.json", events.Marker{Topic: topic, TopicID: id, Offsets: events.Offsets{0: 50, 1: 60}})
	want := "cannot tell whether a tombstone lies at or above the plan offset"
	code, stdout, stderr := e.run(t, "plan", "--markers", markers, "--recovery-point", "C1", "--out", dir+"/C1.plan.json", "--tombstone-scan-limit", "30")
	opWantFailure(t, code, stdout+stderr, 1, want, "--tombstone-scan-limit 30 records")
	before := e.snapshot(t, topic, control)
	code, _, stderr = e.run(t, "apply", "--tombstone-scan-limit", "30", dir+"/C1.plan.json")
	opWantFailure(t, code, stderr, 1, want)
	e.assertUnchanged(t, topic, control, before)
	// Without the limit the same topic passes.
	code, stdout, stderr = e.run(t, "plan", "--markers", markers, "--recovery-point", "C1", "--tombstone-scan-limit", "0")
	if code != 0 {
		t.Fatalf("plan without a limit: exit %d\n%s%s", code, stdout, stderr)
	}
}

// actorOf is the actor of the first control record of event e.
func actorOf(t *testing.T, e *opEnv, control string, ev events.Event) string {
	t.Helper()
	c, ctx := e.cluster(t)
	proj, err := c.Project(ctx, control, projector.KeepAudit())
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	for _, v := range proj.State.Audit() {
		if v.Event == ev {
			return v.Actor
		}
	}
	t.Fatalf("no %s on %s", ev, control)
	return ""
}

// TestTombstoneScanLimitIsCheckedAsUsage: a negative limit is a usage error (exit 2) on every
// command that takes it, before any connection.
func TestTombstoneScanLimitIsCheckedAsUsage(t *testing.T) {
	clearWorkerEnv(t)
	dir := t.TempDir()
	_, path := opTestPlan(t, dir, "C1", "t", "Xw8WDWFFGCB7AAZnSGmHfw", events.Offsets{0: 1})
	for _, args := range [][]string{
		{"plan", "--markers", path, "--recovery-point", "C1", "--tombstone-scan-limit", "-1"},
		{"apply", path, "--tombstone-scan-limit", "-1"},
		{"submit", path, "--tombstone-scan-limit", "-1"},
		{"doctor", "--topic", "t", "--tombstone-scan-limit", "-1"},
	} {
		if code, _, stderr := runCLI(t, append([]string{"-b", "127.0.0.1:1"}, args...)...); code != exitUsage || !strings.Contains(stderr, "invalid --tombstone-scan-limit -1") {
			t.Errorf("%s: exit %d, want %d\n%s", args[0], code, exitUsage, stderr)
		}
	}
	if _, code, stderr := parseWorker(t, "--control-topic", "c", "--tombstone-scan-limit", "-1"); code != exitUsage {
		t.Errorf("worker: exit %d, want %d\n%s", code, exitUsage, stderr)
	}
}

// TestApplyRefusesWhereTheWorkerBlocks is issue 35, item 2: with a tombstone above the committed
// boundary (a job that emits tombstones again), doctor said BLOCK and the workers blocked, but
// plan said "apply would accept", status said "re-run kcleanup apply", and the re-run deleted.
// One rule now decides for all: the re-run refuses (exit 1, nothing deleted), plan's preview
// refuses a plan still at or below the tombstone, status names the block and suggests no re-run;
// a plan above the tombstone (the migration's fix) is accepted and applied.
func TestApplyRefusesWhereTheWorkerBlocks(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 2, 100, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	dir := t.TempDir()
	_, c1 := opTestPlan(t, dir, "C1", topic, id, events.Offsets{0: 50, 1: 60})
	if code, _, stderr := e.run(t, "apply", "--no-wait", c1); code != 0 {
		t.Fatalf("apply --no-wait: exit %d\n%s", code, stderr)
	}
	if off := e.produceValue(t, topic, 0, "gone", nil); off != 100 { // the job writes tombstones again
		t.Fatalf("tombstone at %d, want 100", off)
	}
	blocked := []string{"the job writes tombstones again", topic + "-0: a tombstone at offset 100, at or above the committed boundary 50"}

	code, stdout, _ := e.run(t, "doctor", "--topic", topic)
	opWantFailure(t, code, stdout, exitError, append(blocked, "BLOCK")...)
	if strings.Contains(stdout, "re-run `kcleanup apply") {
		t.Errorf("doctor suggests a re-run of apply that would be refused:\n%s", stdout)
	}
	code, stdout, _ = e.run(t, "status", "--topic", topic)
	if code != 0 || strings.Contains(stdout, "re-run `kcleanup apply") || !strings.Contains(stdout, "BLOCKED: the job writes tombstones again") {
		t.Errorf("status: exit %d\n%s", code, stdout)
	}

	// validate allows a recovery point above the boundary, and notes the tombstone it straddles.
	m70 := opTestMarkers(t, dir, "m70.json", events.Marker{Topic: topic, TopicID: id, Offsets: events.Offsets{0: 70, 1: 70}})
	code, stdout, stderr := e.run(t, "validate", "--markers", m70)
	if code != exitOK || !strings.Contains(stderr, "partition 0: the recovery point replays across a tombstone (null value) at offset 100") {
		t.Errorf("validate: exit %d\n%s\n%s", code, stdout, stderr)
	}

	before := e.snapshot(t, topic, control)
	code, _, stderr = e.run(t, "apply", c1)
	opWantFailure(t, code, stderr, exitError, blocked...)
	e.assertUnchanged(t, topic, control, before) // no DELETING, log starts at 0
	if got := e.logStarts(t, topic); !got.Equal(events.Offsets{0: 0, 1: 0}) {
		t.Errorf("log starts %v: the refused apply deleted", got)
	}

	// A later plan whose boundary would still lie at or below the tombstone: refused by plan's
	// preview, submit and apply alike, before anything is written.
	below := opTestMarkers(t, dir, "c2.json", events.Marker{Topic: topic, TopicID: id, Offsets: events.Offsets{0: 70, 1: 70}})
	code, stdout, stderr = e.run(t, "plan", "--markers", below, "--recovery-point", "C2", "--out", dir+"/C2.plan.json")
	opWantFailure(t, code, stdout+stderr, exitError, append(blocked[:1], "apply would refuse this plan now")...)
	for _, cmd := range [][]string{{"submit", dir + "/C2.plan.json"}, {"apply", dir + "/C2.plan.json"}} {
		code, _, stderr := e.run(t, cmd...)
		opWantFailure(t, code, stderr, exitError, blocked[0], "nothing was committed or deleted")
	}
	e.assertUnchanged(t, topic, control, before)

	// The fix: a plan above the latest tombstone; its deletion covers C1's.
	above := opTestMarkers(t, dir, "c3.json", events.Marker{Topic: topic, TopicID: id, Offsets: events.Offsets{0: 101, 1: 70}})
	code, stdout, stderr = e.run(t, "plan", "--markers", above, "--recovery-point", "C3", "--out", dir+"/C3.plan.json")
	if code != 0 || !strings.Contains(stdout, "apply would accept this plan now") {
		t.Fatalf("plan above the tombstone: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := e.run(t, "apply", dir+"/C3.plan.json"); code != 0 {
		t.Fatalf("apply above the tombstone: exit %d\n%s", code, stderr)
	}
	if got := e.logStarts(t, topic); !got.Equal(events.Offsets{0: 101, 1: 70}) {
		t.Errorf("log starts %v, want 0=101 1=70", got)
	}
}
