package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/gate"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/worker"
)

type validateJSON struct {
	SchemaVersion int      `json:"schemaVersion"`
	Allowed       bool     `json:"allowed"`
	Class         string   `json:"class"`
	ControlTopic  string   `json:"controlTopic"`
	ReadTo        *int64   `json:"readTo"`
	Reason        string   `json:"reason"`
	Message       string   `json:"message"`
	Partition     *int32   `json:"partition"`
	Requested     *int64   `json:"requested"`
	Boundary      *int64   `json:"boundary"`
	LogStart      *int64   `json:"logStart"`
	HighWatermark *int64   `json:"highWatermark"`
	PlanID        string   `json:"planId"`
	Hints         []string `json:"hints"`
	Refusals      []struct {
		Reason    string   `json:"reason"`
		Class     string   `json:"class"`
		Message   string   `json:"message"`
		Hints     []string `json:"hints"`
		Marker    *int     `json:"marker"`
		Partition *int32   `json:"partition"`
		Requested *int64   `json:"requested"`
		Boundary  *int64   `json:"boundary"`
	} `json:"refusals"`
	Notes   []string `json:"notes"`
	Checked []struct {
		Partition int32 `json:"partition"`
		Lowest    int64 `json:"lowest"`
	} `json:"checked"`
}

func decodeValidate(t *testing.T, stdout string) validateJSON {
	t.Helper()
	var doc validateJSON
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("validate JSON: %v\n%s", err, stdout)
	}
	if doc.SchemaVersion != 2 || doc.Hints == nil || doc.Refusals == nil || doc.Notes == nil || doc.Checked == nil {
		t.Errorf("schemaVersion %d (want 2), or a list is null:\n%s", doc.SchemaVersion, stdout)
	}
	return doc
}

func TestValidateTheSeedExample(t *testing.T) {
	e := newReadEnv(t, true) // C1 applied: boundary 0=150 1=120
	c0 := e.markers(t, "c0.json", events.Offsets{0: 100, 1: 90})
	c1 := e.markers(t, "c1.json", events.Offsets{0: 150, 1: 120})
	refusal := fmt.Sprintf("Cannot restore Kafka action state for %s-0 from offset 100 because the committed cleanup boundary is 150 (set by plan %s)",
		e.topic, e.plan.PlanID)

	t.Run("C0 is refused", func(t *testing.T) {
		code, stdout, stderr := e.run(t, "validate", "--markers", c0)
		wantExit(t, code, exitRefused, stdout, stderr)
		if !strings.Contains(stderr, "Error: "+refusal+"\n") {
			t.Errorf("stderr does not carry the refusal %q:\n%s", refusal, stderr)
		}
		if !strings.Contains(stderr, "Hint: restore from a newer checkpoint or savepoint") {
			t.Errorf("no hint:\n%s", stderr)
		}
		if !strings.HasPrefix(stdout, "REFUSED") || !strings.Contains(stdout, "below-boundary") {
			t.Errorf("stdout:\n%s", stdout)
		}
	})

	t.Run("C0 is refused, json", func(t *testing.T) {
		code, stdout, stderr := e.run(t, "validate", "--markers", c0, "-o", "json")
		wantExit(t, code, exitRefused, stdout, stderr)
		doc := decodeValidate(t, stdout)
		if doc.Allowed || doc.Reason != "below-boundary" || doc.Message != refusal || doc.PlanID != e.plan.PlanID ||
			doc.Partition == nil || *doc.Partition != 0 || doc.Requested == nil || *doc.Requested != 100 ||
			doc.Boundary == nil || *doc.Boundary != 150 || len(doc.Hints) == 0 || doc.Class != "refused" {
			t.Errorf("refusal document:\n%s", stdout)
		}
		// Both partitions are below the boundary, and below the log start the apply moved to
		// it: the logical refusals first, then the physical ones.
		if len(doc.Refusals) != 4 || *doc.Refusals[1].Partition != 1 || *doc.Refusals[1].Requested != 90 || *doc.Refusals[1].Boundary != 120 ||
			doc.Refusals[2].Reason != "out-of-range" || !strings.Contains(doc.Refusals[2].Message, "requested offset 100 is outside the available range [150, 200]") {
			t.Errorf("refusals %+v, want below-boundary and out-of-range on partitions 0 and 1", doc.Refusals)
		}
		if doc.ControlTopic != e.control || doc.ReadTo == nil || *doc.ReadTo != 4 {
			t.Errorf("controlTopic %q readTo %v", doc.ControlTopic, doc.ReadTo)
		}
	})

	t.Run("C1 is allowed", func(t *testing.T) {
		code, stdout, stderr := e.run(t, "validate", "--markers", c1)
		wantExit(t, code, exitOK, stdout, stderr)
		// Hand-written markers: allowed, with only the warning that completeness is unchecked.
		if !strings.HasPrefix(stdout, "ALLOWED") || stderr != unsourcedMarkersWarning {
			t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
		}
		code, stdout, stderr = e.run(t, "validate", "--markers", c1, "-o", "json")
		wantExit(t, code, exitOK, stdout, stderr)
		if doc := decodeValidate(t, stdout); !doc.Allowed || doc.Class != "allowed" || doc.Reason != "" || len(doc.Refusals) != 0 ||
			*doc.ReadTo != 4 || len(doc.Checked) != 2 || doc.Checked[0].Lowest != 150 {
			t.Errorf("allowed document:\n%s", stdout)
		}
	})

	// The recovery point is the markers of all subtasks: one subtask below the boundary is
	// enough to refuse, and the message names its offset.
	t.Run("one subtask below", func(t *testing.T) {
		ok := e.markers(t, "subtask-0.json", events.Offsets{0: 160, 1: 130})
		below := e.markers(t, "subtask-1.json", events.Offsets{0: 149, 1: 120})
		code, stdout, stderr := e.run(t, "validate", "--markers", ok, "--markers", below)
		wantExit(t, code, exitRefused, stdout, stderr)
		if !strings.Contains(stderr, fmt.Sprintf("%s-0 from offset 149 because the committed cleanup boundary is 150", e.topic)) {
			t.Errorf("stderr:\n%s", stderr)
		}
		if !strings.Contains(stdout, filepath.Base(below)) || strings.Contains(stdout, filepath.Base(ok)) {
			t.Errorf("the refusal table must name the file of the marker below the boundary, only:\n%s", stdout)
		}
	})

	t.Run("another topic incarnation", func(t *testing.T) {
		other := writeFile(t, e.dir, "other-id.json", string((events.Marker{Topic: e.topic, TopicID: "AAAAAAAAAAAAAAAAAAAAAQ",
			Offsets: events.Offsets{0: 150, 1: 120}}).Encode()))
		code, stdout, stderr := e.run(t, "validate", "--markers", other)
		wantExit(t, code, exitRefused, stdout, stderr)
		// The live topic has another ID: proved gone (exit 3), whatever the control topic governs.
		if !strings.Contains(stderr, "the recovery point is from topic ID AAAAAAAAAAAAAAAAAAAAAQ but the topic now has ID "+e.topicID+" (it was deleted and recreated)") ||
			!strings.Contains(stdout, "topic-id-mismatch: Cannot validate the recovery point: the recovery point is from topic ID AAAAAAAAAAAAAAAAAAAAAQ but this control topic") {
			t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
		}
	})
}

func TestValidateFailsClosedWhenDegraded(t *testing.T) {
	e := newReadEnv(t, true)
	key, value := newerSchemaRecord()
	e.produceControl(t, key, value)
	c1 := e.markers(t, "c1.json", events.Offsets{0: 150, 1: 120}) // allowed before the record

	code, stdout, stderr := e.run(t, "validate", "--markers", c1)
	wantExit(t, code, exitCannotTell, stdout, stderr)
	if !strings.Contains(stderr, "the control-topic projection is degraded") || !strings.Contains(stderr, "Hint: upgrade kcleanup") ||
		!strings.HasPrefix(stdout, "CANNOT TELL") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	code, stdout, stderr = e.run(t, "validate", "--markers", c1, "-o", "json")
	wantExit(t, code, exitCannotTell, stdout, stderr)
	if doc := decodeValidate(t, stdout); doc.Allowed || doc.Reason != "degraded" || doc.Class != "cannot-tell" {
		t.Errorf("document:\n%s", stdout)
	}
}

func TestValidateWithoutAControlTopic(t *testing.T) {
	e := newReadEnv(t, false) // no control topic yet
	c0 := e.markers(t, "c0.json", events.Offsets{0: 100, 1: 90})

	t.Run("default control topic missing: cannot tell, with the fix", func(t *testing.T) {
		code, stdout, stderr := e.run(t, "validate", "--markers", c0)
		wantExit(t, code, exitCannotTell, stdout, stderr)
		if !strings.Contains(stderr, "control topic "+e.control+" does not exist, so no boundary could be read for topic "+e.topic) ||
			!strings.Contains(stderr, "Hint: if cleanup never ran for topic "+e.topic+", create its control topic once: kcleanup init --topic "+e.topic) ||
			!strings.Contains(stderr, "name it: --control-topic") || !strings.HasPrefix(stdout, "CANNOT TELL") {
			t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
		}
		code, stdout, stderr = e.run(t, "validate", "--markers", c0, "-o", "json")
		wantExit(t, code, exitCannotTell, stdout, stderr)
		if doc := decodeValidate(t, stdout); doc.Allowed || doc.Reason != "control-topic-missing" || doc.Class != "cannot-tell" || doc.ReadTo != nil {
			t.Errorf("document:\n%s", stdout)
		}
	})

	t.Run("explicit control topic missing: cannot tell", func(t *testing.T) {
		typo := e.topic + ".kcleanpu"
		code, stdout, stderr := e.run(t, "--control-topic", typo, "validate", "--markers", c0)
		wantExit(t, code, exitCannotTell, stdout, stderr)
		if !strings.Contains(stderr, "control topic "+typo+" does not exist") ||
			!strings.Contains(stderr, "kcleanup init --topic "+e.topic+" --control-topic "+typo) {
			t.Errorf("stderr:\n%s", stderr)
		}
		// The environment names it explicitly too.
		t.Setenv(envControlTopic, typo)
		code, stdout, stderr = e.run(t, "validate", "--markers", c0, "-o", "json")
		wantExit(t, code, exitCannotTell, stdout, stderr)
		if doc := decodeValidate(t, stdout); doc.Allowed || doc.Reason != "control-topic-missing" || doc.Class != "cannot-tell" {
			t.Errorf("document:\n%s", stdout)
		}
	})

	// The rest judges the data topic's evidence, which an empty control topic leaves alone.
	e.initControlTopic(t)
	t.Run("markers of another incarnation: refused", func(t *testing.T) {
		other := writeFile(t, e.dir, "other-id.json", string((events.Marker{Topic: e.topic, TopicID: "AAAAAAAAAAAAAAAAAAAAAQ",
			Offsets: events.Offsets{0: 100, 1: 90}}).Encode()))
		code, stdout, stderr := e.run(t, "validate", "--markers", other)
		wantExit(t, code, exitRefused, stdout, stderr)
		if !strings.Contains(stderr, "but the topic now has ID "+e.topicID+" (it was deleted and recreated)") {
			t.Errorf("stderr:\n%s", stderr)
		}
	})

	// Records deleted without kcleanup (or a control topic that was deleted): the log start is
	// the evidence, and a recovery point below it is refused.
	t.Run("below the log start: refused", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), readTestTimeout)
		defer cancel()
		to := kadm.Offsets{}
		to.AddOffset(e.topic, 0, 120, -1)
		resp, err := kadm.NewClient(e.cl).DeleteRecords(ctx, to)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := e.run(t, "validate", "--markers", c0)
		wantExit(t, code, exitRefused, stdout, stderr)
		want := fmt.Sprintf("Cannot restore Kafka action state for %s-0 from offset 100: requested offset 100 is outside the available range [120, 200]; records below offset 120 are already deleted", e.topic)
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
		c1 := e.markers(t, "c1.json", events.Offsets{0: 150, 1: 120})
		code, stdout, stderr = e.run(t, "validate", "--markers", c1)
		wantExit(t, code, exitOK, stdout, stderr)
	})
}

// TestValidateUnderABoundaryCommittedElsewhere is the bug of issue 20: data topic T governed by
// a control topic not named T.kcleanup, a plan COMMITTED there and not yet deleted (no worker),
// and a pipeline whose $CT is unset. The records are all there, so the physical check alone would
// pass; every way of not naming the control topic must still refuse to say ALLOWED.
func TestValidateUnderABoundaryCommittedElsewhere(t *testing.T) {
	e := newReadEnv(t, false)
	ctl := "ops." + e.topic + ".ctl"
	code, stdout, stderr := e.run(t, "--control-topic", ctl, "init", "--topic", e.topic)
	wantExit(t, code, exitOK, stdout, stderr)
	t.Cleanup(func() { e.ops().deleteTopic(t, ctl) })
	plan := e.markers(t, "c1.json", events.Offsets{0: 150, 1: 120})
	planFile := filepath.Join(e.dir, "c1.plan.json")
	code, stdout, stderr = e.run(t, "plan", "--markers", plan, "--recovery-point", "c1", "--no-preview", "--out", planFile)
	wantExit(t, code, exitOK, stdout, stderr)
	code, stdout, stderr = e.run(t, "--control-topic", ctl, "apply", "--no-wait", planFile)
	wantExit(t, code, exitOK, stdout, stderr)
	c0 := e.markers(t, "c0.json", events.Offsets{0: 100, 1: 90}) // below the committed boundary, records all there

	// The control topic that governs T refuses.
	code, stdout, stderr = e.run(t, "--control-topic", ctl, "validate", "--markers", c0)
	wantExit(t, code, exitRefused, stdout, stderr)

	// $CT unset: the flag blank, the variable blank, or the flag forgotten.
	code, stdout, stderr = e.run(t, "validate", "--markers", c0, "--control-topic", "")
	wantExit(t, code, exitUsage, stdout, stderr)
	t.Setenv(envControlTopic, "")
	code, stdout, stderr = e.run(t, "validate", "--markers", c0)
	wantExit(t, code, exitUsage, stdout, stderr)
	unsetEnv(t, envControlTopic)
	code, stdout, stderr = e.run(t, "validate", "--markers", c0)
	wantExit(t, code, exitCannotTell, stdout, stderr)
	if strings.Contains(stdout, "ALLOWED") || !strings.Contains(stderr, "control topic "+e.control+" does not exist") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}

	// The fix the answer offers for a topic that never had cleanups (init) is refused here:
	// ctl governs T, and an empty T.kcleanup would be read as "no boundary".
	code, stdout, stderr = e.run(t, "init", "--topic", e.topic)
	wantExit(t, code, exitError, stdout, stderr)
	if !strings.Contains(stdout+stderr, "but "+ctl+" governs topic "+e.topic) || !strings.Contains(stdout+stderr, "--control-topic "+ctl) {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), readTestTimeout)
	defer cancel()
	if td, err := kadm.NewClient(e.cl).ListTopics(ctx, e.control); err != nil {
		t.Fatal(err)
	} else if d, ok := td[e.control]; ok && d.Err == nil {
		t.Fatalf("init created %s beside %s", e.control, ctl)
	}
	// Made anyway (an older build's init, a hand-made topic): its emptiness proves nothing.
	e.createControlTopic(t)
	doc := e.validate(t, exitCannotTell, "--markers", c0)
	doc.refusal(t, gate.GovernedElsewhere, e.control+" governs no topic yet", ctl+" governs topic "+e.topic)
	// Markers above the boundary: still not allowed on an empty control topic's word.
	c2 := e.markers(t, "c2.json", events.Offsets{0: 160, 1: 130})
	e.validate(t, exitCannotTell, "--markers", c2).refusal(t, gate.GovernedElsewhere)
	e.validate(t, exitOK, "--markers", c2, "--control-topic", ctl)
}

// TestValidateFailsClosedWhenUnreachable: no broker answers, so nothing proves the recovery point
// safe; the answer is "cannot tell" (exit 4), never "allowed" nor a plain error a pipeline might
// ignore.
func TestValidateFailsClosedWhenUnreachable(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	m := writeFile(t, dir, "m.json", `{"schemaVersion":1,"topic":"action-state","topicId":"AAAAAAAAAAAAAAAAAAAAAQ","offsets":{"0":100}}`)
	code, stdout, stderr := runCLI(t, "-b", "127.0.0.1:1", "--timeout", "3s", "validate", "--markers", m)
	wantExit(t, code, exitCannotTell, stdout, stderr)
	if !strings.Contains(stderr, "Error: Cannot validate the recovery point: control topic action-state.kcleanup could not be described") ||
		!strings.Contains(stderr, "Hint: could not connect to 127.0.0.1:1") || !strings.HasPrefix(stdout, "CANNOT TELL") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "-b", "127.0.0.1:1", "--timeout", "3s", "-o", "json", "validate", "--markers", m)
	wantExit(t, code, exitCannotTell, stdout, stderr)
	if doc := decodeValidate(t, stdout); doc.Allowed || doc.Class != "cannot-tell" || doc.Reason != "control-topic-unreadable" ||
		len(doc.Refusals) != 2 || doc.Refusals[1].Reason != "data-topic-unreadable" {
		t.Errorf("document:\n%s", stdout)
	}
}

// TestValidateFailsClosedWhenNotCaughtUp: the broker answers, but the control topic's records
// never arrive (kfake holds every Fetch), so the read cannot reach the end it captured within
// --timeout. That is "cannot tell", not an "allowed" on a partial view.
func TestValidateFailsClosedWhenNotCaughtUp(t *testing.T) {
	clearEnv(t)
	fk, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fk.Close)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // runs before fk.Close
	addr := fk.ListenAddrs()[0]

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), readTestTimeout)
	defer cancel()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "action-state"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, worker.ControlTopicConfigs(1), "action-state.kcleanup"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "action-state.kcleanup", Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	id, err := kafkatest.TopicIDUncached(ctx, cl, "action-state")
	if err != nil {
		t.Fatal(err)
	}
	fk.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		fk.KeepControl()
		fk.SleepControl(func() { <-release })
		return nil, nil, false
	})

	m := writeFile(t, t.TempDir(), "m.json", `{"schemaVersion":1,"topic":"action-state","topicId":"`+id+`","offsets":{"0":0}}`)
	code, stdout, stderr := runCLI(t, "-b", addr, "--timeout", "2s", "-o", "json", "validate", "--markers", m)
	wantExit(t, code, exitCannotTell, stdout, stderr)
	doc := decodeValidate(t, stdout)
	if doc.Reason != "not-caught-up" || len(doc.Refusals) != 1 ||
		!strings.Contains(doc.Message, "cannot prove that the view of control topic action-state.kcleanup is caught up") ||
		!strings.Contains(doc.Message, "read to offset 0 of 1") {
		t.Errorf("document:\n%s", stdout)
	}
}

func TestValidateInputErrors(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	good := `{"schemaVersion":1,"topic":"action-state","topicId":"AAAAAAAAAAAAAAAAAAAAAQ","offsets":{"0":100}}`
	a := writeFile(t, dir, "a.json", good)
	other := writeFile(t, dir, "other.json", strings.Replace(good, "action-state", "other-topic", 1))
	broken := writeFile(t, dir, "broken.json", `{"schemaVersion":1,"topic":"action-state"`)
	missing := filepath.Join(dir, "missing.json")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"no markers", nil, exitUsage, []string{"no recovery point: give --checkpoint PATH or --markers FILE"}},
		{"missing file", []string{"--markers", missing}, exitError, []string{"read markers file", missing}},
		{"broken file", []string{"--markers", broken}, exitError, []string{"markers file " + broken, "Hint: a markers file holds one marker"}},
		{"two topics", []string{"--markers", a, "--markers", other}, exitError,
			[]string{`markers name more than one topic: the topic is "action-state" in ` + a + ` and "other-topic" in ` + other}},
		{"control topic is the data topic", []string{"--markers", a, "--control-topic", "action-state"}, exitUsage,
			[]string{"is the data topic itself"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// An unreachable broker: none of these may get as far as the cluster.
			code, stdout, stderr := runCLI(t, append([]string{"-b", "127.0.0.1:1", "--timeout", "2s", "validate"}, tc.args...)...)
			wantExit(t, code, tc.code, stdout, stderr)
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
		})
	}
}
