package main

// The recovery gate's cases of issue #9, on the real broker: each asserts the exit code, the
// reason and that the message names the offsets or what was found, next to an allowed case of
// the same check, so that no check refuses everything.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/gate"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/topicconfig"
)

// ops is the operator-test helper view of the same broker.
func (e *readEnv) ops() *opEnv {
	return &opEnv{bootstrap: e.bootstrap, cl: e.cl, adm: kadm.NewClient(e.cl)}
}

// validate runs validate -o json and decodes the verdict; it fails unless the exit code is want.
func (e *readEnv) validate(t *testing.T, want int, args ...string) validateJSON {
	t.Helper()
	code, stdout, stderr := e.run(t, append(append([]string{"-o", "json"}, args...), "validate")...)
	wantExit(t, code, want, stdout, stderr)
	return decodeValidate(t, stdout)
}

// refusal checks the top-level reason and class, and that the message says each fragment.
func (d validateJSON) refusal(t *testing.T, reason gate.Reason, fragments ...string) {
	t.Helper()
	if d.Allowed || d.Reason != string(reason) || d.Class != string(reason.Class()) || len(d.Hints) == 0 {
		t.Fatalf("want %s (%s) with hints, got %s (%s): %s %q", reason, reason.Class(), d.Reason, d.Class, d.Message, d.Hints)
	}
	for _, f := range fragments {
		if !strings.Contains(d.Message, f) {
			t.Errorf("message %q does not say %q", d.Message, f)
		}
	}
}

// has reports whether any refusal has the reason.
func (d validateJSON) has(reason gate.Reason) bool {
	for _, r := range d.Refusals {
		if r.Reason == string(reason) {
			return true
		}
	}
	return false
}

func TestValidateGateDataTopicDeletedAfterApply(t *testing.T) {
	e := newReadEnv(t, true)
	c1 := e.markers(t, "c1.json", events.Offsets{0: 150, 1: 120})
	if d := e.validate(t, exitOK, "--markers", c1); !d.Allowed {
		t.Fatal("C1 not allowed while its records are there")
	}
	e.ops().deleteTopic(t, e.topic)
	kafkatest.Eventually(t, readTestTimeout, "topic gone", func() bool {
		_, err := e.cluster.TopicMetadata(context.Background(), e.topic)
		return err != nil
	})
	d := e.validate(t, exitRefused, "--markers", c1)
	d.refusal(t, gate.DataTopicMissing, "Cannot restore Kafka action state for "+e.topic+": the topic does not exist")
}

func TestValidateGateDataTopicRecreated(t *testing.T) {
	e := newReadEnv(t, true)
	old := e.markers(t, "old.json", events.Offsets{0: 150, 1: 120})
	e.ops().recreate(t, e.topic, 2, map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1"})
	fresh := kafkatest.Client(t, e.bootstrap) // e.cl knows the old topic ID
	kafkatest.Produce(t, fresh, e.topic, 0, 200)
	kafkatest.Produce(t, fresh, e.topic, 1, 200)
	newID := e.ops().topicID(t, e.topic)

	// The markers of the old incarnation, whose offsets the new one happens to have: gone.
	d := e.validate(t, exitRefused, "--markers", old)
	d.refusal(t, gate.TopicRecreated, "the recovery point is from topic ID "+e.topicID+" but the topic now has ID "+newID+" (it was deleted and recreated)")
	// Markers of the new incarnation: the control topic governs the old one, so it proves
	// nothing about them.
	current := writeFile(t, e.dir, "new.json", string((events.Marker{Topic: e.topic, TopicID: newID, Offsets: events.Offsets{0: 10, 1: 10}}).Encode()))
	d = e.validate(t, exitCannotTell, "--markers", current)
	d.refusal(t, gate.TopicIDMismatch, "the recovery point is from topic ID "+newID+" but this control topic ("+e.control+") governs topic ID "+e.topicID)
	if d.has(gate.TopicRecreated) || d.has(gate.OutOfRange) {
		t.Fatalf("the physical check refused the live incarnation's markers: %+v", d.Refusals)
	}
}

// kafka-delete-records, Kafka's own tool: records deleted outside kcleanup.
func deleteRecordsWithKafkasTool(t *testing.T, topic string, p int32, offset int64) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "delete.json")
	body := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":%d,"offset":%d}]}`, topic, p, offset)
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	kafkatest.RunTool(t, "kafka-delete-records", "--bootstrap-server", kafkatest.Bootstrap(t), "--offset-json-file", file)
}

func TestValidateGateRecordsDeletedOutsideKcleanup(t *testing.T) {
	e := newReadEnv(t, true) // boundary and log starts 0=150 1=120
	m := e.markers(t, "m.json", events.Offsets{0: 160, 1: 130})
	e.validate(t, exitOK, "--markers", m)
	deleteRecordsWithKafkasTool(t, e.topic, 0, 170)
	d := e.validate(t, exitRefused, "--markers", m)
	d.refusal(t, gate.OutOfRange, fmt.Sprintf("Cannot restore Kafka action state for %s-0 from offset 160: requested offset 160 is outside the available range [170, 200]; records below offset 170 are already deleted", e.topic))
	if *d.Partition != 0 || *d.Requested != 160 || *d.LogStart != 170 || *d.HighWatermark != 200 {
		t.Fatalf("details %+v", d)
	}
	code, stdout, stderr := e.run(t, "validate", "--markers", m)
	wantExit(t, code, exitRefused, stdout, stderr)
	if !strings.Contains(stdout, "[170, 200]") || !strings.Contains(stdout, "out-of-range") || !strings.Contains(stderr, "Error: Cannot restore Kafka action state") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
}

func TestValidateGateMarkerAboveTheHighWatermark(t *testing.T) {
	e := newReadEnv(t, true)
	e.validate(t, exitOK, "--markers", e.markers(t, "end.json", events.Offsets{0: 200, 1: 200})) // the end itself: nothing to replay
	d := e.validate(t, exitRefused, "--markers", e.markers(t, "above.json", events.Offsets{0: 250, 1: 130}))
	d.refusal(t, gate.OutOfRange, "from offset 250: requested offset 250 is outside the available range [150, 200]; the partition ends at offset 200")
}

func TestValidateGateNotAControlTopic(t *testing.T) {
	e := newReadEnv(t, false)
	m := e.markers(t, "m.json", events.Offsets{0: 100, 1: 90})

	two := kafkatest.NewTopic(t, e.cl, "not-control", 2, map[string]string{"cleanup.policy": "delete"})
	d := e.validate(t, exitCannotTell, "--control-topic", two, "--markers", m)
	d.refusal(t, gate.ControlTopicPartitions, "control topic "+two+" has 2 partitions; a control topic needs exactly one")
	if !d.has(gate.ControlTopicSettings) || !strings.Contains(d.Refusals[1].Message, `cleanup.policy is "delete"`) {
		t.Errorf("refusals %+v", d.Refusals)
	}

	one := kafkatest.NewTopic(t, e.cl, "not-control", 1, map[string]string{"cleanup.policy": "delete"})
	d = e.validate(t, exitCannotTell, "--control-topic", one, "--markers", m)
	d.refusal(t, gate.ControlTopicSettings, `cleanup.policy is "delete"; a control topic needs exactly compact`)
	if d.Hints[0] != "kafka-configs --bootstrap-server "+e.bootstrap+" --alter --entity-type topics --entity-name "+one+" --add-config cleanup.policy=compact" {
		t.Errorf("hints %q", d.Hints)
	}

	// __consumer_offsets exists once any group committed an offset.
	ctx, cancel := context.WithTimeout(context.Background(), readTestTimeout)
	defer cancel()
	offs := kadm.Offsets{}
	offs.AddOffset(e.topic, 0, 1, -1)
	if _, err := kadm.NewClient(e.cl).CommitOffsets(ctx, "gate-test-"+strings.ToLower(opTestID[:8]), offs); err != nil {
		t.Fatal(err)
	}
	// Its partition count is the broker's offsets.topic.num.partitions (50 by default, 1 on the
	// development broker); either way it is compacted with min.compaction.lag.ms=0 and holds
	// binary records.
	d = e.validate(t, exitCannotTell, "--control-topic", "__consumer_offsets", "--markers", m)
	if !d.has(gate.ControlTopicPartitions) && !d.has(gate.ControlTopicSettings) || !strings.Contains(d.Message, "control topic __consumer_offsets") {
		t.Fatalf("__consumer_offsets: %+v", d)
	}

	// The allowed case of the check: a control topic as init makes it, named explicitly.
	good := kafkatest.NewTopic(t, e.cl, "control", 1, topicconfig.CreateSettings())
	if d := e.validate(t, exitOK, "--control-topic", good, "--markers", m); !d.Allowed {
		t.Fatal("an empty, well-made control topic did not allow")
	}
}

// initControlTopic runs kcleanup init for the fixture's topic; the control topic goes at the end.
func (e *readEnv) initControlTopic(t *testing.T) {
	t.Helper()
	code, stdout, stderr := e.run(t, "init", "--topic", e.topic)
	wantExit(t, code, exitOK, stdout, stderr)
	t.Cleanup(func() { e.ops().deleteTopic(t, e.control) })
}

func TestValidateGateEmptyControlTopicFromInit(t *testing.T) {
	e := newReadEnv(t, false)
	e.initControlTopic(t)
	m := e.markers(t, "m.json", events.Offsets{0: 100, 1: 90})
	code, stdout, stderr := e.run(t, "validate", "--markers", m)
	wantExit(t, code, exitOK, stdout, stderr)
	says := "control topic " + e.control + " is empty: no cleanup boundary is committed for topic " + e.topic +
		"; allowed on the data topic's evidence alone"
	if !strings.Contains(stdout, says) || !strings.Contains(stderr, "Warning: "+says) {
		t.Fatalf("the allowed answer does not say what it rests on:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	// The physical check stands behind it.
	e.ops().deleteRecordsTo(t, e.topic, events.Offsets{0: 120})
	d := e.validate(t, exitRefused, "--markers", m)
	d.refusal(t, gate.OutOfRange, "requested offset 100 is outside the available range [120, 200]")
}

func TestValidateGateControlTopicOfRejectedRecordsOnly(t *testing.T) {
	t.Run("unreadable records", func(t *testing.T) {
		e := newReadEnv(t, false)
		e.initControlTopic(t)
		m := e.markers(t, "m.json", events.Offsets{0: 100, 1: 90})
		e.produceControl(t, []byte("hello"), []byte(`{"greeting":"hi"}`))
		d := e.validate(t, exitCannotTell, "--markers", m)
		d.refusal(t, gate.UnreadableRecords, "control topic "+e.control+" holds 1 record(s) the fold cannot read (offset 0 malformed",
			"so the absence of a committed boundary proves nothing")
		// A tombstone retracts it (as a worker does after a minute): evidence of nothing is gone.
		e.produceControl(t, []byte("hello"), nil)
		e.validate(t, exitOK, "--markers", m)
	})

	// A control topic written by Flink Agents' own tool: its keys are bare plan IDs. kcleanup's
	// fold rejects every record (bad key), and the gate never reads that as "no boundary": it
	// folds them by the job's own rules, and its plan deleted records below 150 on partition 0.
	t.Run("Flink Agents' format", func(t *testing.T) {
		e := newReadEnv(t, false)
		e.initControlTopic(t)
		plan, err := events.BuildPlan("chk-7", []events.Marker{{Topic: e.topic, TopicID: e.topicID, Offsets: events.Offsets{0: 150, 1: 120}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, status := range []string{"COMMITTED", "APPLIED"} {
			e.produceControl(t, []byte(plan.PlanID), []byte(`{"schemaVersion":1,"status":"`+status+`","plan":`+strings.TrimSpace(string(plan.Encode()))+`}`))
		}
		e.ops().deleteRecordsTo(t, e.topic, events.Offsets{0: 150, 1: 120})
		above := e.markers(t, "above.json", events.Offsets{0: 160, 1: 130})
		if d := e.validate(t, exitOK, "--markers", above); len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "is in Flink Agents' format") {
			t.Errorf("notes %q", d.Notes)
		}
		// Below the boundary it recorded, where its tool deleted: refused, with the job's boundary.
		d := e.validate(t, exitRefused, "--markers", e.markers(t, "below.json", events.Offsets{0: 100, 1: 120}))
		d.refusal(t, gate.BelowBoundary, "100", "150", plan.PlanID)
		if !d.has(gate.OutOfRange) {
			t.Errorf("refusals %+v", d.Refusals)
		}
		// A record of kcleanup's own format among them: neither fold can be trusted alone.
		e.produceControl(t, []byte("hello"), []byte(`{"greeting":"hi"}`))
		d = e.validate(t, exitCannotTell, "--markers", above)
		if d.Allowed || d.Class != "cannot-tell" {
			t.Errorf("mixed control topic: %+v", d)
		}
	})
}

// A control topic created without kcleanup, with cleanup.policy=compact only: the broker's
// min.compaction.lag.ms=0 lets the cleaner outrun repairs, so the gate cannot tell, and its
// hint is the fix.
func TestValidateGateCompactOnlyControlTopic(t *testing.T) {
	e := newReadEnv(t, false)
	kafkatest.CreateTopic(t, e.cl, e.control, 1, map[string]string{"cleanup.policy": "compact"})
	m := e.markers(t, "m.json", events.Offsets{0: 100, 1: 90})
	d := e.validate(t, exitCannotTell, "--markers", m)
	d.refusal(t, gate.ControlTopicSettings, "min.compaction.lag.ms is 0; it must be at least 86400000")
	fix := "kafka-configs --bootstrap-server " + e.bootstrap + " --alter --entity-type topics --entity-name " + e.control +
		" --add-config min.compaction.lag.ms=604800000"
	if d.Hints[0] != fix {
		t.Fatalf("hint %q, want %q", d.Hints[0], fix)
	}
	opRunHint(t, fix)
	kafkatest.Eventually(t, readTestTimeout, "validate allows after the fix", func() bool {
		code, _, _ := e.run(t, "validate", "--markers", m)
		return code == exitOK
	})
}

// TestValidateGateUnderEvidenceOfAnErasedCommit: a DELETING for a plan nobody committed, every
// record still there. The gate cannot tell (exit 4, unconfirmed-boundary) and says what the log
// holds; it once refused (exit 3) "because the committed cleanup boundary is 180". Real broker.
func TestValidateGateUnderEvidenceOfAnErasedCommit(t *testing.T) {
	e := newReadEnv(t, false)
	e.initControlTopic(t)
	forged, err := events.BuildPlan("never-committed", []events.Marker{{Topic: e.topic, TopicID: e.topicID, Offsets: events.Offsets{0: 180, 1: 180}}})
	if err != nil {
		t.Fatal(err)
	}
	key, value := events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Deleting, PlanID: forged.PlanID, Plan: forged,
		At: time.Now().UTC(), Actor: "someone/1"}.Encode()
	e.produceControl(t, key, value)

	d := e.validate(t, exitCannotTell, "--markers", e.markers(t, "m.json", events.Offsets{0: 100, 1: 90}))
	d.refusal(t, gate.UnconfirmedBoundary, "evidence of a commit that is no longer in the log", "a DELETING (offset 0) but no COMMITTED", forged.PlanID)
	if d.has(gate.BelowBoundary) {
		t.Errorf("refused as below a committed boundary: %+v", d)
	}
	// Above the evidence's plan: allowed is not possible either (history at risk), but never refused.
	d = e.validate(t, exitCannotTell, "--markers", e.markers(t, "above.json", events.Offsets{0: 190, 1: 190}))
	if d.has(gate.UnconfirmedBoundary) || !d.has(gate.HistoryAtRisk) {
		t.Errorf("above the plan: %+v", d)
	}
}
