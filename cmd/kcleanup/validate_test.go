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
)

type validateJSON struct {
	SchemaVersion int    `json:"schemaVersion"`
	Allowed       bool   `json:"allowed"`
	ControlTopic  string `json:"controlTopic"`
	ReadTo        int64  `json:"readTo"`
	Reason        string `json:"reason"`
	Message       string `json:"message"`
	Partition     *int32 `json:"partition"`
	Requested     *int64 `json:"requested"`
	Boundary      *int64 `json:"boundary"`
	PlanID        string `json:"planId"`
	Hint          string `json:"hint"`
	Refusals      []struct {
		Reason    string `json:"reason"`
		Marker    int    `json:"marker"`
		Partition *int32 `json:"partition"`
		Requested *int64 `json:"requested"`
		Boundary  *int64 `json:"boundary"`
	} `json:"refusals"`
	Warnings []string `json:"warnings"`
}

func decodeValidate(t *testing.T, stdout string) validateJSON {
	t.Helper()
	var doc validateJSON
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("validate JSON: %v\n%s", err, stdout)
	}
	if doc.SchemaVersion != 1 {
		t.Errorf("schemaVersion %d, want 1", doc.SchemaVersion)
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
			doc.Boundary == nil || *doc.Boundary != 150 || doc.Hint == "" {
			t.Errorf("refusal document:\n%s", stdout)
		}
		// Both partitions are below the boundary; every refusal is listed.
		if len(doc.Refusals) != 2 || *doc.Refusals[1].Partition != 1 || *doc.Refusals[1].Requested != 90 || *doc.Refusals[1].Boundary != 120 {
			t.Errorf("refusals %+v, want partitions 0 and 1", doc.Refusals)
		}
		if doc.ControlTopic != e.control || doc.ReadTo != 4 {
			t.Errorf("controlTopic %q readTo %d", doc.ControlTopic, doc.ReadTo)
		}
	})

	t.Run("C1 is allowed", func(t *testing.T) {
		code, stdout, stderr := e.run(t, "validate", "--markers", c1)
		wantExit(t, code, exitOK, stdout, stderr)
		if !strings.HasPrefix(stdout, "ALLOWED") || stderr != "" {
			t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
		}
		code, stdout, stderr = e.run(t, "validate", "--markers", c1, "-o", "json")
		wantExit(t, code, exitOK, stdout, stderr)
		if doc := decodeValidate(t, stdout); !doc.Allowed || doc.Reason != "" || len(doc.Refusals) != 0 || doc.ReadTo != 4 {
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
		if !strings.Contains(stderr, "the recovery point is from topic ID AAAAAAAAAAAAAAAAAAAAAQ but this control topic governs topic ID "+e.topicID) {
			t.Errorf("stderr:\n%s", stderr)
		}
	})
}

func TestValidateFailsClosedWhenDegraded(t *testing.T) {
	e := newReadEnv(t, true)
	key, value := newerSchemaRecord()
	e.produceControl(t, key, value)
	c1 := e.markers(t, "c1.json", events.Offsets{0: 150, 1: 120}) // allowed before the record

	code, stdout, stderr := e.run(t, "validate", "--markers", c1)
	wantExit(t, code, exitRefused, stdout, stderr)
	if !strings.Contains(stderr, "the control-topic projection is degraded") || !strings.Contains(stderr, "Hint: upgrade kcleanup") {
		t.Errorf("stderr:\n%s", stderr)
	}
	code, stdout, stderr = e.run(t, "validate", "--markers", c1, "-o", "json")
	wantExit(t, code, exitRefused, stdout, stderr)
	if doc := decodeValidate(t, stdout); doc.Allowed || doc.Reason != "degraded" {
		t.Errorf("document:\n%s", stdout)
	}
}

func TestValidateWithoutAControlTopic(t *testing.T) {
	e := newReadEnv(t, false) // no control topic: kcleanup never ran for this topic
	c0 := e.markers(t, "c0.json", events.Offsets{0: 100, 1: 90})

	t.Run("default control topic missing: allowed, with a warning", func(t *testing.T) {
		code, stdout, stderr := e.run(t, "validate", "--markers", c0)
		wantExit(t, code, exitOK, stdout, stderr)
		if !strings.Contains(stderr, "Warning: control topic "+e.control+" does not exist: no cleanup boundary was ever committed for topic "+e.topic) {
			t.Errorf("no warning naming the control topic:\n%s", stderr)
		}
		if !strings.HasPrefix(stdout, "ALLOWED") || !strings.Contains(stdout, "has the markers' topic ID "+e.topicID) {
			t.Errorf("stdout:\n%s", stdout)
		}
		code, stdout, stderr = e.run(t, "validate", "--markers", c0, "-o", "json")
		wantExit(t, code, exitOK, stdout, stderr)
		if doc := decodeValidate(t, stdout); !doc.Allowed || len(doc.Warnings) != 1 || !strings.Contains(doc.Warnings[0], e.control) {
			t.Errorf("document:\n%s", stdout)
		}
	})

	t.Run("explicit control topic missing: refused", func(t *testing.T) {
		typo := e.topic + ".kcleanpu"
		code, stdout, stderr := e.run(t, "--control-topic", typo, "validate", "--markers", c0)
		wantExit(t, code, exitRefused, stdout, stderr)
		if !strings.Contains(stderr, "control topic "+typo+" does not exist; it was named explicitly") ||
			!strings.Contains(stderr, "kcleanup init --topic "+e.topic+" --control-topic "+typo) {
			t.Errorf("stderr:\n%s", stderr)
		}
		// The environment names it explicitly too.
		t.Setenv(envControlTopic, typo)
		code, stdout, stderr = e.run(t, "validate", "--markers", c0, "-o", "json")
		wantExit(t, code, exitRefused, stdout, stderr)
		if doc := decodeValidate(t, stdout); doc.Allowed || doc.Reason != "control-topic-missing" {
			t.Errorf("document:\n%s", stdout)
		}
	})

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
		want := fmt.Sprintf("Cannot restore Kafka action state for %s-0 from offset 100 because records below offset 120 are already deleted", e.topic)
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
		c1 := e.markers(t, "c1.json", events.Offsets{0: 150, 1: 120})
		code, stdout, stderr = e.run(t, "validate", "--markers", c1)
		wantExit(t, code, exitOK, stdout, stderr)
	})
}

// TestValidateFailsClosedWhenUnreachable: no broker answers, so nothing proves the projection is
// caught up; the answer is "refused", never "allowed" nor a plain error a pipeline might ignore.
func TestValidateFailsClosedWhenUnreachable(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	m := writeFile(t, dir, "m.json", `{"schemaVersion":1,"topic":"action-state","topicId":"AAAAAAAAAAAAAAAAAAAAAQ","offsets":{"0":100}}`)
	code, stdout, stderr := runCLI(t, "-b", "127.0.0.1:1", "--timeout", "3s", "validate", "--markers", m)
	wantExit(t, code, exitRefused, stdout, stderr)
	if !strings.Contains(stderr, "refused: cannot prove that the view of control topic action-state.kcleanup is caught up") ||
		!strings.Contains(stderr, "Hint: validate refuses whenever it cannot read the control topic to its end within --timeout (3s)") {
		t.Errorf("stderr:\n%s", stderr)
	}
	code, stdout, stderr = runCLI(t, "-b", "127.0.0.1:1", "--timeout", "3s", "-o", "json", "validate", "--markers", m)
	wantExit(t, code, exitRefused, stdout, stderr)
	if doc := decodeValidate(t, stdout); doc.Allowed || doc.Reason != "not-caught-up" {
		t.Errorf("document:\n%s", stdout)
	}
}

// TestValidateFailsClosedWhenNotCaughtUp: the broker answers, but the control topic's records
// never arrive (kfake holds every Fetch), so the read cannot reach the end it captured within
// --timeout. That is a refusal, not an "allowed" on a partial view.
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
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, "action-state.kcleanup"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "action-state.kcleanup", Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fk.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		fk.KeepControl()
		fk.SleepControl(func() { <-release })
		return nil, nil, false
	})

	m := writeFile(t, t.TempDir(), "m.json", `{"schemaVersion":1,"topic":"action-state","topicId":"AAAAAAAAAAAAAAAAAAAAAQ","offsets":{"0":100}}`)
	code, stdout, stderr := runCLI(t, "-b", addr, "--timeout", "2s", "validate", "--markers", m)
	wantExit(t, code, exitRefused, stdout, stderr)
	if !strings.Contains(stderr, "cannot prove that the view of control topic action-state.kcleanup is caught up") ||
		!strings.Contains(stderr, "read to offset 0 of 1") {
		t.Errorf("stderr:\n%s", stderr)
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
		{"no markers", nil, exitUsage, []string{`required flag(s) "markers" not set`}},
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
