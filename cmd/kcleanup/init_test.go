package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/topicconfig"
)

// opFindingsDoc is the part of `init -o json` and `doctor -o json` the tests read.
type opFindingsDoc struct {
	SchemaVersion       int         `json:"schemaVersion"`
	Topic               string      `json:"topic"`
	ControlTopic        string      `json:"controlTopic"`
	ControlTopicCreated bool        `json:"controlTopicCreated"`
	Blocking            int         `json:"blocking"`
	Findings            findingList `json:"findings"`
}

func opDecodeFindings(t *testing.T, stdout string) opFindingsDoc {
	t.Helper()
	var d opFindingsDoc
	if err := json.Unmarshal([]byte(stdout), &d); err != nil || d.SchemaVersion != findingsSchemaVersion {
		t.Fatalf("findings document: %v\n%s", err, stdout)
	}
	return d
}

// blocking returns the BLOCK findings whose message contains fragment.
func (d opFindingsDoc) blocking(fragment string) []protocol.Finding {
	var out []protocol.Finding
	for _, f := range d.Findings {
		if f.Severity == protocol.Block && strings.Contains(f.Subject+": "+f.Message, fragment) {
			out = append(out, f)
		}
	}
	return out
}

// opRunHint runs the Kafka tool command a hint gives, exactly as written (single quotes are
// shell quoting), through Kafka's own tool: proof that the hint fixes what it says.
func opRunHint(t *testing.T, hint string) {
	t.Helper()
	fields := strings.Fields(strings.ReplaceAll(hint, "'", ""))
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "kafka-") {
		t.Fatalf("hint is not a Kafka tool command: %q", hint)
	}
	kafkatest.RunTool(t, fields[0], fields[1:]...)
}

func (e *opEnv) topicConfigs(t *testing.T, topic string) map[string]string {
	t.Helper()
	c, ctx := e.cluster(t)
	info, err := c.DescribeTopic(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Partitions) != 1 {
		t.Errorf("%s has %d partitions", topic, len(info.Partitions))
	}
	return info.Configs
}

// TestInitCreatesTheControlTopicOnce creates the control topic with the settings of docs/design.md §4
// and, run again, finds it and changes nothing.
func TestInitCreatesTheControlTopicOnce(t *testing.T) {
	e := opTestEnv(t)
	topic, _ := e.dataTopic(t, 2, 10, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)

	code, stdout, stderr := e.run(t, "-o", "json", "init", "--topic", topic)
	if code != exitOK {
		t.Fatalf("init: exit %d\n%s\n%s", code, stdout, stderr)
	}
	d := opDecodeFindings(t, stdout)
	if !d.ControlTopicCreated || d.ControlTopic != control || d.Topic != topic || len(d.blocking("")) != 0 {
		t.Errorf("init: %+v", d)
	}
	cfg := e.topicConfigs(t, control)
	if cfg["cleanup.policy"] != "compact" || cfg["unclean.leader.election.enable"] != "false" {
		t.Errorf("control topic configs: cleanup.policy=%q unclean.leader.election.enable=%q",
			cfg["cleanup.policy"], cfg["unclean.leader.election.enable"])
	}

	code, stdout, stderr = e.run(t, "init", "--topic", topic)
	if code != exitOK || !strings.Contains(stdout, "OK     control topic "+control+": exists: 1 partition(s)") {
		t.Errorf("second init: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if recs, _ := e.controlRecords(t, control); len(recs) != 0 {
		t.Errorf("init wrote to the control topic: %+v", recs)
	}
}

// TestInitReportsWhatIsWrongAndTheFix: each problem is a BLOCK finding (exit 1) whose hint is
// the exact command that fixes it; running that command with Kafka's own tool makes the next
// init pass.
func TestInitReportsWhatIsWrongAndTheFix(t *testing.T) {
	e := opTestEnv(t)

	t.Run("data topic settings", func(t *testing.T) {
		topic, _ := e.dataTopic(t, 1, 10, map[string]string{"cleanup.policy": "compact", "retention.ms": "604800000"})
		code, stdout, stderr := e.run(t, "-o", "json", "init", "--topic", topic)
		opWantFailure(t, code, stderr, exitError, "2 problem(s) block cleanup")
		d := opDecodeFindings(t, stdout)
		policy := d.blocking(`cleanup.policy is "compact"`)
		retention := d.blocking(`retention.ms is "604800000"`)
		if len(policy) != 1 || len(retention) != 1 || len(d.blocking("")) != 2 {
			t.Fatalf("findings: %+v", d.Findings)
		}
		if want := "kafka-configs --bootstrap-server " + e.bootstrap + " --alter --entity-type topics --entity-name " + topic +
			" --add-config 'retention.ms=-1,retention.bytes=-1,cleanup.policy=[compact,delete]'"; policy[0].Hint != want {
			t.Errorf("hint %q, want %q", policy[0].Hint, want)
		}
		// The policy's hint alone fixes both: it sets retention in the same atomic change, so
		// that adding delete never lets Kafka retire records by the old retention.
		opRunHint(t, policy[0].Hint)
		// The broker applies a config change a moment after the tool returns: poll.
		deadline := time.Now().Add(opTestTimeout)
		for {
			code, stdout, stderr := e.run(t, "init", "--topic", topic)
			if code == exitOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("init after the fix: exit %d\n%s\n%s", code, stdout, stderr)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("missing data topic", func(t *testing.T) {
		topic := "optest-missing-" + strings.ToLower(opTestID[:8])
		code, stdout, stderr := e.run(t, "init", "--topic", topic)
		opWantFailure(t, code, stderr, exitError, "1 problem(s) block cleanup")
		for _, f := range []string{"BLOCK  data topic " + topic + ": no topic " + topic + " on the cluster; the control topic was not created",
			"hint: list the topics: kafka-topics --bootstrap-server " + e.bootstrap + " --list"} {
			if !strings.Contains(stdout, f) {
				t.Errorf("stdout lacks %q:\n%s", f, stdout)
			}
		}
		if strings.Contains(stdout, "--create --topic "+topic) { // most often a typo: never advise creating it
			t.Errorf("init advises creating the missing name:\n%s", stdout)
		}
		if _, exists := e.controlRecords(t, protocol.ControlTopicFor(topic)); exists {
			t.Errorf("init created a control topic for a missing data topic")
		}
	})

	t.Run("control topic with two partitions", func(t *testing.T) {
		topic, _ := e.dataTopic(t, 1, 10, opGoodDataConfigs())
		control := protocol.ControlTopicFor(topic)
		kafkatest.CreateTopic(t, e.cl, control, 2, topicconfig.CreateSettings())
		code, stdout, stderr := e.run(t, "init", "--topic", topic)
		opWantFailure(t, code, stderr, exitError, "1 problem(s) block cleanup")
		if !strings.Contains(stdout, "BLOCK  control topic "+control+": has 2 partitions") ||
			!strings.Contains(stdout, "hint: create a new one-partition control topic: kcleanup init --topic "+topic+" --control-topic <new name>") {
			t.Errorf("stdout:\n%s", stdout)
		}
	})

	// A control topic created without kcleanup, with cleanup.policy=compact only, inherits the
	// broker's min.compaction.lag.ms=0: the log cleaner could erase an overwritten decision
	// before a worker repairs it. init says so, with the fix, and the fix makes it pass; doctor
	// reports the same finding.
	t.Run("control topic with compact only", func(t *testing.T) {
		topic, _ := e.dataTopic(t, 1, 10, opGoodDataConfigs())
		control := protocol.ControlTopicFor(topic)
		kafkatest.CreateTopic(t, e.cl, control, 1, map[string]string{"cleanup.policy": "compact"})
		for _, cmd := range []string{"init", "doctor"} {
			args := []string{"-o", "json", cmd, "--topic", topic}
			code, stdout, stderr := e.run(t, args...)
			opWantFailure(t, code, stderr, exitError, "problem(s) block cleanup")
			lag := opDecodeFindings(t, stdout).blocking("min.compaction.lag.ms is 0; it must be at least 86400000")
			want := "kafka-configs --bootstrap-server " + e.bootstrap + " --alter --entity-type topics --entity-name " + control +
				" --add-config min.compaction.lag.ms=604800000"
			if len(lag) != 1 || lag[0].Hint != want {
				t.Fatalf("%s findings: %s", cmd, stdout)
			}
		}
		opRunHint(t, "kafka-configs --bootstrap-server "+e.bootstrap+" --alter --entity-type topics --entity-name "+control+
			" --add-config min.compaction.lag.ms=604800000")
		deadline := time.Now().Add(opTestTimeout)
		for {
			code, stdout, stderr := e.run(t, "init", "--topic", topic)
			if code == exitOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("init after the fix: exit %d\n%s\n%s", code, stdout, stderr)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("control topic of a previous incarnation", func(t *testing.T) {
		topic, oldID := e.governedTopic(t, 1, 10, opGoodDataConfigs())
		control := protocol.ControlTopicFor(topic)
		_, path := opTestPlan(t, t.TempDir(), "chk-1", topic, oldID, events.Offsets{0: 5})
		if code, _, stderr := e.run(t, "submit", path); code != exitOK {
			t.Fatalf("submit: exit %d\n%s", code, stderr)
		}
		e.recreate(t, topic, 1, opGoodDataConfigs())
		newID := e.topicID(t, topic)
		code, stdout, stderr := e.run(t, "init", "--topic", topic)
		opWantFailure(t, code, stderr, exitError, "1 problem(s) block cleanup")
		if !strings.Contains(stdout, "BLOCK  data topic "+topic+": has topic ID "+newID+", but control topic "+control+
			" governs ID "+oldID+": the topic was deleted and recreated") {
			t.Errorf("stdout:\n%s", stdout)
		}
	})

	t.Run("bad replication factor", func(t *testing.T) {
		topic, _ := e.dataTopic(t, 1, 10, opGoodDataConfigs())
		code, _, stderr := e.run(t, "init", "--topic", topic, "--replication-factor", "0")
		opWantFailure(t, code, stderr, exitUsage, "invalid --replication-factor 0")
		// The development broker is a single node: three replicas cannot be placed.
		code, _, stderr = e.run(t, "init", "--topic", topic, "--replication-factor", "3")
		opWantFailure(t, code, stderr, exitError, "create control topic", "INVALID_REPLICATION_FACTOR",
			"Hint: the cluster has 1 broker(s): use --replication-factor 1 (production clusters: 3)")
		if strings.Contains(stderr, "may create topics") {
			t.Errorf("the hint blames permissions:\n%s", stderr)
		}
		if _, exists := e.controlRecords(t, protocol.ControlTopicFor(topic)); exists {
			t.Errorf("a control topic was created")
		}
	})
}
