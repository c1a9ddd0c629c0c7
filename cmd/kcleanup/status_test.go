package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/topicconfig"
	"github.com/kcleanup/kcleanup/worker"
)

// readEnv is the fixture of the status, history and validate tests: a data topic on the real
// broker with 200 records in each of its 2 partitions, and, when applied, its control topic with
// the seed's C1 plan (0=150 1=120) applied through the worker library, so that these tests do not
// depend on the apply command.
type readEnv struct {
	bootstrap string
	cl        *kgo.Client
	cluster   *worker.Cluster
	topic     string
	control   string
	topicID   string
	plan      events.Plan // the applied C1 plan (zero when not applied)
	dir       string
}

const readTestTimeout = 60 * time.Second

func newReadEnv(t *testing.T, applyC1 bool) *readEnv {
	t.Helper()
	clearEnv(t)
	b := kafkatest.Bootstrap(t)
	cl := kafkatest.Client(t, b)
	topic := kafkatest.NewTopic(t, cl, "action-state", 2, map[string]string{
		"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1",
	})
	kafkatest.Produce(t, cl, topic, 0, 200)
	kafkatest.Produce(t, cl, topic, 1, 200)
	ctx, cancel := context.WithTimeout(context.Background(), readTestTimeout)
	defer cancel()
	id, err := kafkatest.TopicIDUncached(ctx, cl, topic)
	if err != nil {
		t.Fatal(err)
	}
	c, err := worker.Connect(kgo.SeedBrokers(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	e := &readEnv{bootstrap: b, cl: cl, cluster: c, topic: topic, control: protocol.ControlTopicFor(topic), topicID: id, dir: t.TempDir()}
	if applyC1 {
		e.createControlTopic(t)
		e.plan = e.apply(t, "C1", events.Offsets{0: 150, 1: 120})
	}
	return e
}

// createControlTopic creates the control topic (deleted when the test ends).
func (e *readEnv) createControlTopic(t *testing.T) {
	t.Helper()
	kafkatest.CreateTopic(t, e.cl, e.control, 1, topicconfig.CreateSettings())
}

// apply runs the whole protocol for one plan through the worker library.
func (e *readEnv) apply(t *testing.T, recoveryPoint string, offsets events.Offsets) events.Plan {
	t.Helper()
	plan, err := events.BuildPlan(recoveryPoint, []events.Marker{{Topic: e.topic, TopicID: e.topicID, Offsets: offsets}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), readTestTimeout)
	defer cancel()
	proj, err := e.cluster.Project(ctx, e.control)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	out, err := e.cluster.Apply(ctx, proj, plan, worker.Options{Actor: "test/apply"})
	if err != nil {
		t.Fatalf("apply %s: %+v", recoveryPoint, err)
	}
	if out.State != "APPLIED" {
		t.Fatalf("apply %s: state %s", recoveryPoint, out.State)
	}
	return plan
}

// markers writes a markers file of the fixture's topic: one marker per offsets given.
func (e *readEnv) markers(t *testing.T, name string, offsets ...events.Offsets) string {
	t.Helper()
	var ms []string
	for _, o := range offsets {
		ms = append(ms, string((events.Marker{Topic: e.topic, TopicID: e.topicID, Offsets: o}).Encode()))
	}
	return writeFile(t, e.dir, name, "["+strings.Join(ms, ",")+"]")
}

// produceControl appends a raw record to the control topic.
func (e *readEnv) produceControl(t *testing.T, key, value []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readTestTimeout)
	defer cancel()
	if err := e.cl.ProduceSync(ctx, &kgo.Record{Topic: e.control, Partition: 0, Key: key, Value: value}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// run runs kcleanup against the fixture's broker.
func (e *readEnv) run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLI(t, append([]string{"-b", e.bootstrap, "--timeout", "30s"}, args...)...)
}

// wantExit fails the test unless code is want, showing the output.
func wantExit(t *testing.T, code, want int, stdout, stderr string) {
	t.Helper()
	if code != want {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
	}
}

// jsonKeys returns the top-level keys of a JSON object (exact spelling, unlike json.Unmarshal
// into a struct, which ignores case).
func jsonKeys(t *testing.T, doc string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, doc)
	}
	return m
}

func TestStatusShowsBoundaryOperationsAndRejections(t *testing.T) {
	e := newReadEnv(t, true)
	junkKey, junkValue := []byte("junk"), []byte("not json")
	e.produceControl(t, junkKey, junkValue)
	wantReason := projector.New().Step(projector.Record{Offset: 0, Key: junkKey, Value: junkValue}).Reason

	t.Run("json", func(t *testing.T) {
		code, stdout, stderr := e.run(t, "status", "--topic", e.topic, "-o", "json")
		wantExit(t, code, exitOK, stdout, stderr)
		keys := jsonKeys(t, stdout)
		for _, k := range []string{"schemaVersion", "boundary", "operations", "rejected", "degraded", "readTo", "controlTopic"} {
			if _, ok := keys[k]; !ok {
				t.Errorf("status JSON has no %q field:\n%s", k, stdout)
			}
		}
		var doc struct {
			SchemaVersion int               `json:"schemaVersion"`
			ControlTopic  string            `json:"controlTopic"`
			ReadTo        int64             `json:"readTo"`
			Degraded      bool              `json:"degraded"`
			Boundary      map[string]int64  `json:"boundary"`
			SetBy         map[string]string `json:"boundarySetBy"`
			Operations    []struct {
				PlanID string `json:"planId"`
				State  string `json:"state"`
			} `json:"operations"`
			Rejected []struct {
				Offset int64  `json:"offset"`
				Reason string `json:"reason"`
			} `json:"rejected"`
		}
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.SchemaVersion != 2 || doc.ControlTopic != e.control || doc.Degraded {
			t.Errorf("schemaVersion %d, controlTopic %q, degraded %v", doc.SchemaVersion, doc.ControlTopic, doc.Degraded)
		}
		// PLANNED, COMMITTED, DELETING, APPLIED and the junk record: offsets 0-4.
		if doc.ReadTo != 5 {
			t.Errorf("readTo %d, want 5", doc.ReadTo)
		}
		if doc.Boundary["0"] != 150 || doc.Boundary["1"] != 120 || len(doc.Boundary) != 2 {
			t.Errorf("boundary %v, want 0:150 1:120", doc.Boundary)
		}
		if doc.SetBy["0"] != e.plan.PlanID {
			t.Errorf("boundary of partition 0 set by %q, want %s", doc.SetBy["0"], e.plan.PlanID)
		}
		if len(doc.Operations) != 1 || doc.Operations[0].PlanID != e.plan.PlanID || doc.Operations[0].State != "APPLIED" {
			t.Errorf("operations %+v, want one APPLIED %s", doc.Operations, e.plan.PlanID)
		}
		if len(doc.Rejected) != 1 || doc.Rejected[0].Offset != 4 || doc.Rejected[0].Reason != string(wantReason) {
			t.Errorf("rejected %+v, want offset 4 reason %s", doc.Rejected, wantReason)
		}
	})

	t.Run("table", func(t *testing.T) {
		code, stdout, stderr := e.run(t, "status", "--control-topic", e.control)
		wantExit(t, code, exitOK, stdout, stderr)
		short := e.plan.PlanID[:shortPlanID]
		for _, re := range []string{
			`Control topic:\s+` + regexp.QuoteMeta(e.control) + ` \(read to offset 5`,
			`Data topic:\s+` + regexp.QuoteMeta(e.topic) + ` \(topic ID ` + regexp.QuoteMeta(e.topicID) + `\)`,
			`Degraded:\s+no`,
			`(?m)^\s+0\s+150\s+` + short + `$`,
			`(?m)^\s+1\s+120\s+` + short + `$`,
			`Operations: 1 APPLIED`,
			e.plan.PlanID + `\s+APPLIED\s+C1\s+0=150 1=120`,
			`Rejected records: 1`,
			`(?m)^\s+4\s+` + string(wantReason) + `\s+junk\s`,
		} {
			if !regexp.MustCompile(re).MatchString(stdout) {
				t.Errorf("status output does not match %s:\n%s", re, stdout)
			}
		}
	})
}

func TestStatusOfAnEmptyControlTopic(t *testing.T) {
	e := newReadEnv(t, false)
	e.createControlTopic(t)
	code, stdout, stderr := e.run(t, "status", "--topic", e.topic)
	wantExit(t, code, exitOK, stdout, stderr)
	for _, want := range []string{"read to offset 0", "Data topic:", "none yet", "Boundary: none committed", "Operations: none", "Rejected records: none"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status of an empty control topic does not say %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = e.run(t, "status", "--topic", e.topic, "-o", "json")
	wantExit(t, code, exitOK, stdout, stderr)
	// Lists are never null, so that a program can iterate them without a check.
	for _, k := range []string{"operations", "rejected"} {
		if got := string(jsonKeys(t, stdout)[k]); got != "[]" {
			t.Errorf("%s is %s, want []", k, got)
		}
	}
}

func TestStatusOfAMissingControlTopic(t *testing.T) {
	e := newReadEnv(t, false)
	code, stdout, stderr := e.run(t, "status", "--topic", e.topic)
	wantExit(t, code, exitError, stdout, stderr)
	for _, want := range []string{"Error: control topic " + e.control + " does not exist", "kcleanup init --topic " + e.topic} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
}

// TestStatusAndHistoryNeedAControlTopic: without --topic or --control-topic there is nothing to
// read; that is a usage error, before any connection.
func TestStatusAndHistoryNeedAControlTopic(t *testing.T) {
	clearEnv(t)
	for _, cmd := range []string{"status", "history"} {
		code, stdout, stderr := runCLI(t, "-b", "127.0.0.1:1", cmd)
		wantExit(t, code, exitUsage, stdout, stderr)
		if !strings.Contains(stderr, "neither --topic nor --control-topic is given") {
			t.Errorf("%s: stderr %q", cmd, stderr)
		}
		code, stdout, stderr = runCLI(t, "-b", "127.0.0.1:1", cmd, "--topic", "t", "--control-topic", "t")
		wantExit(t, code, exitUsage, stdout, stderr)
		if !strings.Contains(stderr, "is the data topic itself") {
			t.Errorf("%s: stderr %q", cmd, stderr)
		}
	}
	// The environment names the control topic as well as the flag does.
	t.Setenv(envControlTopic, "x.kcleanup")
	code, stdout, stderr := runCLI(t, "-b", "127.0.0.1:1", "--timeout", "2s", "status")
	if code == exitUsage {
		t.Fatalf("KCLEANUP_CONTROL_TOPIC should name the control topic: exit %d\n%s%s", code, stdout, stderr)
	}
}

func TestStatusShowsDegraded(t *testing.T) {
	e := newReadEnv(t, true)
	key, value := newerSchemaRecord()
	e.produceControl(t, key, value)
	code, stdout, stderr := e.run(t, "status", "--topic", e.topic, "-o", "json")
	wantExit(t, code, exitOK, stdout, stderr)
	var doc struct {
		Degraded       bool   `json:"degraded"`
		DegradedReason string `json:"degradedReason"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.Degraded || doc.DegradedReason == "" {
		t.Errorf("degraded %v (%q), want true with a reason", doc.Degraded, doc.DegradedReason)
	}
	code, stdout, stderr = e.run(t, "status", "--topic", e.topic)
	wantExit(t, code, exitOK, stdout, stderr)
	if !regexp.MustCompile(`Degraded:\s+YES: `).MatchString(stdout) || !strings.Contains(stdout, "until kcleanup is upgraded") {
		t.Errorf("status does not show the projection degraded:\n%s", stdout)
	}
}

// newerSchemaRecord is a well-formed control record from a newer kcleanup (schemaVersion 2): it
// makes every reader of this build degraded.
func newerSchemaRecord() (key, value []byte) {
	id := strings.Repeat("ab", 32)
	return []byte(id + "/PLANNED"), []byte(`{"schemaVersion":2,"event":"PLANNED","planId":"` + id + `","somethingNew":true}`)
}
