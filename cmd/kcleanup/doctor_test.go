package main

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/protocol"
)

// has reports whether a finding of the given severity contains fragment in "subject: message".
func (d opFindingsDoc) has(sev protocol.Severity, fragment string) bool {
	for _, f := range d.Findings {
		if f.Severity == sev && strings.Contains(f.Subject+": "+f.Message, fragment) {
			return true
		}
	}
	return false
}

// appendRaw writes one record to a control topic, as any producer could.
func (e *opEnv) appendRaw(t *testing.T, control, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTestTimeout)
	defer cancel()
	if err := e.cl.ProduceSync(ctx, &kgo.Record{Topic: control, Partition: 0, Key: []byte(key), Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestDoctorHealthy: after an apply everything is OK, doctor exits 0, finds the data topic from
// the control topic's binding, and writes nothing.
func TestDoctorHealthy(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 2, 50, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	_, path := opTestPlan(t, t.TempDir(), "chk-1", topic, id, events.Offsets{0: 10, 1: 20})
	if code, _, stderr := e.run(t, "apply", path); code != exitOK {
		t.Fatalf("apply: exit %d\n%s", code, stderr)
	}
	before := e.snapshot(t, topic, control)
	for _, args := range [][]string{
		{"-o", "json", "doctor", "--topic", topic},
		{"-o", "json", "--control-topic", control, "doctor"},
	} {
		code, stdout, stderr := e.run(t, args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, stdout, stderr)
		}
		d := opDecodeFindings(t, stdout)
		if d.Topic != topic || d.ControlTopic != control || d.Blocking != 0 {
			t.Errorf("%v: %+v", args, d)
		}
		for _, f := range []string{
			"supports DeleteRecords",
			"control topic " + control + ": one partition, cleanup.policy=compact",
			"read to offset 4: 1 operation(s), boundary on 2 partition(s), nothing rejected",
			"data topic " + topic + ": cleanup.policy=compact,delete",
			"topic ID " + id + " is the one control topic " + control + " governs",
		} {
			if !d.has(protocol.OK, f) {
				t.Errorf("%v: no OK finding %q in %+v", args, f, d.Findings)
			}
		}
	}
	e.assertUnchanged(t, topic, control, before)

	code, stdout, _ := e.run(t, "doctor", "--topic", topic)
	if code != exitOK || !strings.Contains(stdout, "OK     data topic "+topic+": cleanup.policy=compact,delete") {
		t.Errorf("table: exit %d\n%s", code, stdout)
	}
}

// TestDoctorFindsWhatBlocks: each blocking problem is a BLOCK line with a hint, and doctor
// exits 1; warnings alone exit 0.
func TestDoctorFindsWhatBlocks(t *testing.T) {
	e := opTestEnv(t)

	t.Run("no control topic, compact-only data topic", func(t *testing.T) {
		topic, _ := e.dataTopic(t, 1, 10, map[string]string{"cleanup.policy": "compact", "retention.ms": "-1", "retention.bytes": "-1"})
		control := protocol.ControlTopicFor(topic)
		code, stdout, stderr := e.run(t, "doctor", "--topic", topic)
		opWantFailure(t, code, stderr, exitError, "2 problem(s) block cleanup")
		for _, f := range []string{
			"BLOCK  control topic " + control + ": does not exist\n       hint: create it: kcleanup init --topic " + topic + "\n",
			`BLOCK  data topic ` + topic + `: cleanup.policy is "compact"`,
			"hint: kafka-configs --bootstrap-server " + e.bootstrap + " --alter --entity-type topics --entity-name " + topic +
				" --add-config 'retention.ms=-1,retention.bytes=-1,cleanup.policy=[compact,delete]'",
		} {
			if !strings.Contains(stdout, f) {
				t.Errorf("stdout lacks %q:\n%s", f, stdout)
			}
		}
		if _, exists := e.controlRecords(t, control); exists {
			t.Error("doctor created the control topic")
		}
	})

	t.Run("degraded and rejected records", func(t *testing.T) {
		topic, id := e.governedTopic(t, 1, 10, opGoodDataConfigs())
		control := protocol.ControlTopicFor(topic)
		plan, path := opTestPlan(t, t.TempDir(), "chk-1", topic, id, events.Offsets{0: 5})
		if code, _, stderr := e.run(t, "submit", path); code != exitOK {
			t.Fatalf("submit: exit %d\n%s", code, stderr)
		}
		e.appendRaw(t, control, "not a key", "not JSON")
		code, stdout, _ := e.run(t, "-o", "json", "doctor", "--topic", topic)
		d := opDecodeFindings(t, stdout)
		if code != exitOK || !d.has(protocol.Warn, "1 record(s) rejected; the last at offset 1") {
			t.Errorf("rejected record: exit %d, %+v", code, d.Findings)
		}
		e.appendRaw(t, control, events.Key(plan.PlanID, events.Committed), `{"schemaVersion":2}`)
		code, stdout, stderr := e.run(t, "-o", "json", "doctor", "--topic", topic)
		opWantFailure(t, code, stderr, exitError, "1 problem(s) block cleanup")
		d = opDecodeFindings(t, stdout)
		if d.Blocking != 1 || !d.has(protocol.Block, "control topic "+control+": degraded") {
			t.Errorf("degraded: %+v", d.Findings)
		}
	})

	t.Run("stuck operation", func(t *testing.T) {
		topic, id := e.governedTopic(t, 1, 10, opGoodDataConfigs())
		plan, path := opTestPlan(t, t.TempDir(), "chk-1", topic, id, events.Offsets{0: 5})
		if code, _, stderr := e.run(t, "apply", "--no-wait", path); code != exitOK {
			t.Fatalf("apply --no-wait: exit %d\n%s", code, stderr)
		}
		code, stdout, _ := e.run(t, "-o", "json", "doctor", "--topic", topic)
		if d := opDecodeFindings(t, stdout); code != exitOK || !d.has(protocol.OK, "plan "+plan.PlanID+" is COMMITTED since") {
			t.Errorf("fresh COMMITTED: exit %d, %+v", code, d.Findings)
		}
		code, stdout, _ = e.run(t, "doctor", "--topic", topic, "--stuck-after", "1ns")
		if code != exitOK || !strings.Contains(stdout, "WARN   control topic "+protocol.ControlTopicFor(topic)+": plan "+plan.PlanID+" has been COMMITTED since") ||
			!strings.Contains(stdout, "run a worker (kcleanup worker --control-topic "+protocol.ControlTopicFor(topic)+") or re-run `kcleanup apply <plan file>`") {
			t.Errorf("stuck: exit %d\n%s", code, stdout)
		}
	})

	t.Run("usage", func(t *testing.T) {
		code, _, stderr := e.run(t, "doctor")
		opWantFailure(t, code, stderr, exitUsage, "doctor needs a data topic or a control topic")
		code, _, stderr = e.run(t, "doctor", "--topic", "x", "--stuck-after", "0s")
		opWantFailure(t, code, stderr, exitUsage, "invalid --stuck-after")
	})
}
