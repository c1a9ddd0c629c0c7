package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker/daemon"
)

// TestCompactionNeverOutrunsSafety is the fault of issue #9 item 5, on the real broker with
// its log cleaner. Two plans are applied (boundary 100, then 300; log start 300). The owning
// worker is killed. The control topic's settings are what a control topic made by hand has
// (min.compaction.lag.ms 0, a tiny delete.retention.ms, segments rolled every 100 ms, a
// cleaner that runs at 1% dirty). A broken writer tombstones the latest accepted COMMITTED,
// and the cleaner erases both the COMMITTED and the tombstone before anyone repairs it.
//
// What must hold, at every step: every reader's boundary stays 300 (the surviving DELETING
// and APPLIED are evidence of the erased COMMITTED); `kcleanup validate` and
// `POST /v1/validate` never allow a recovery point below it; init, doctor and the worker
// report the unsafe settings with the kafka-configs fix, and the worker deletes nothing.
func TestCompactionNeverOutrunsSafety(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.dataTopic(t, 1, 400, opGoodDataConfigs())
	ctl := protocol.ControlTopicFor(topic)
	// Created without kcleanup, first with settings apply accepts (it refuses an unsafe
	// control topic), and with segments that roll every 100 ms.
	kafkatest.CreateTopic(t, e.cl, ctl, 1, map[string]string{
		"cleanup.policy": "compact", "min.compaction.lag.ms": "604800000", "delete.retention.ms": "604800000",
		"segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
	})
	dir := t.TempDir()
	p1, f1 := opTestPlan(t, dir, "C1", topic, id, events.Offsets{0: 100})
	p2, f2 := opTestPlan(t, dir, "C2", topic, id, events.Offsets{0: 300})
	for _, f := range []string{f1, f2} {
		if code, stdout, stderr := e.run(t, "apply", f); code != exitOK {
			t.Fatalf("apply %s: exit %d\n%s\n%s", f, code, stdout, stderr)
		}
	}
	if start := e.logStarts(t, topic); start[0] != 300 {
		t.Fatalf("log start %v, want 300", start)
	}
	m100 := opTestMarkers(t, dir, "m100.json", events.Marker{Topic: topic, TopicID: id, Offsets: events.Offsets{0: 100}})
	m300 := opTestMarkers(t, dir, "m300.json", events.Marker{Topic: topic, TopicID: id, Offsets: events.Offsets{0: 300}})

	// The owner is killed: nobody repairs what follows.
	owner := startWorkerProcess(t, e, ctl)
	owner.kill(t)

	// The settings become those of a control topic made by hand.
	e.setTopicConfig(t, ctl, "min.compaction.lag.ms", "0")
	e.setTopicConfig(t, ctl, "delete.retention.ms", "100")
	for _, args := range [][]string{{"doctor", "--topic", topic}, {"init", "--topic", topic}} {
		code, stdout, stderr := e.run(t, args...)
		out := stdout + stderr
		if code == exitOK || !strings.Contains(out, "min.compaction.lag.ms is 0") || !strings.Contains(out, "delete.retention.ms is 100") ||
			!strings.Contains(out, "kafka-configs --bootstrap-server "+e.bootstrap+" --alter --entity-type topics --entity-name "+ctl+" --add-config min.compaction.lag.ms=") {
			t.Errorf("%s: exit %d; want a failure that names both settings and the kafka-configs fix:\n%s", args[0], code, out)
		}
	}

	// A broken writer tombstones p2's COMMITTED.
	c, ctx := e.cluster(t)
	produce := func(key, value []byte) {
		t.Helper()
		if err := e.cl.ProduceSync(ctx, &kgo.Record{Topic: ctl, Partition: 0, Key: key, Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce([]byte(events.Key(p2.PlanID, events.Committed)), nil)

	// The cleaner runs. Segments roll only on an append, so a writer keeps appending a
	// harmless record (a duplicate of p1's PLANNED) until neither p2's COMMITTED nor the
	// tombstone is left on the log. Every reader meanwhile keeps the boundary at 300.
	dup := events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Planned, PlanID: p1.PlanID, Plan: p1, Actor: "padding"}
	deadline := time.Now().Add(90 * time.Second)
	passes := 0
	for {
		passes++
		st := e.status(t, ctl)
		if st.Boundary[0] != 300 {
			t.Fatalf("pass %d: a reader's boundary is %s; it must stay 0=300", passes, st.Boundary)
		}
		recs, _ := e.controlRecords(t, ctl)
		if !hasKey(recs, events.Key(p2.PlanID, events.Committed)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log cleaner did not erase %s/COMMITTED within 90s (%d passes)", p2.PlanID, passes)
		}
		dup.At = time.Now().UTC()
		k, v := dup.Encode()
		produce(k, v)
		time.Sleep(150 * time.Millisecond) // segment.ms is 100: the next append rolls a segment
	}
	t.Logf("the cleaner erased %s/COMMITTED and its tombstone after %d passes", p2.PlanID, passes)

	// What survives: p2's PLANNED, DELETING and APPLIED, evidence of the erased COMMITTED.
	proj, err := c.Project(ctx, ctl)
	if err != nil {
		t.Fatal(err)
	}
	op, _ := proj.State.Operation(p2.PlanID)
	if op.State != fsm.Planned || len(op.Evidence) == 0 || proj.State.Boundary()[0] != 300 || proj.State.BoundarySetBy(0) != p2.PlanID {
		t.Fatalf("after the cleaner: p2 %s evidence %v, boundary %s set by %s; want PLANNED with evidence, 0=300 set by p2",
			op.State, op.Evidence, proj.State.Boundary(), proj.State.BoundarySetBy(0))
	}
	if risk, why := proj.State.AtRisk(); !risk || !strings.Contains(why, p2.PlanID) {
		t.Fatalf("AtRisk %t %q; want the erased COMMITTED of p2 named", risk, why)
	}
	proj.Close()

	// The gate never allows: below the boundary it is refused, at it the gate cannot tell.
	for _, m := range []string{m100, m300} {
		code, stdout, stderr := e.run(t, "-o", "json", "validate", "--markers", m)
		if code != exitRefused && code != exitCannotTell {
			t.Fatalf("validate %s: exit %d; want 3 or 4\n%s\n%s", m, code, stdout, stderr)
		}
		doc := decodeValidate(t, stdout)
		if doc.Allowed || !strings.Contains(stdout, "control-topic-settings") {
			t.Errorf("validate %s: the document does not refuse on the control topic's settings:\n%s", m, stdout)
		}
	}

	// A new owner: it finds the evidence, re-appends p2's COMMITTED (the log start is at the
	// plan: nothing more would be deleted), and blocks the operation on the unsafe settings.
	d, err := daemon.New(c, daemon.WithControlTopics(ctl), daemon.WithPollInterval(100*time.Millisecond),
		daemon.WithBootstrap(e.bootstrap), daemon.WithShutdownGrace(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	}()
	var blocked string
	kafkatest.Eventually(t, 60*time.Second, "the new owner blocks p2 on the control topic's settings", func() bool {
		var st report.TopicStatus
		if code := getStatus(t, srv.URL+"/v1/status?controlTopic="+ctl, &st); code != http.StatusOK {
			return false
		}
		for _, b := range st.Blocked {
			if b.PlanID == p2.PlanID {
				blocked = b.Reason
			}
		}
		return blocked != ""
	})
	if !strings.Contains(blocked, "min.compaction.lag.ms is 0") || !strings.Contains(blocked, "no deletion starts") {
		t.Errorf("blocked reason %q does not name the unsafe setting", blocked)
	}
	for _, m := range []events.Offsets{{0: 100}, {0: 300}} {
		body, _ := json.Marshal(events.Marker{Topic: topic, TopicID: id, Offsets: m})
		resp, err := http.Post(srv.URL+"/v1/validate?controlTopic="+ctl, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK || !strings.Contains(b.String(), `"allowed": false`) {
			t.Errorf("/v1/validate %s: %d %s; want it refused or cannot tell", m, resp.StatusCode, b.String())
		}
	}
	st := e.status(t, ctl)
	if st.Boundary[0] != 300 {
		t.Fatalf("after the new owner: boundary %s, want 0=300", st.Boundary)
	}
	for _, o := range st.Operations {
		if o.PlanID == p2.PlanID && o.State != fsm.Committed {
			t.Errorf("p2 is %s after the new owner; want COMMITTED again (re-appended, blocked before DELETING)", o.State)
		}
	}
	if start := e.logStarts(t, topic); start[0] != 300 {
		t.Fatalf("log start %v: nothing more may be deleted", start)
	}
}

func hasKey(recs []opControlRecord, key string) bool {
	for _, r := range recs {
		if r.Key == key {
			return true
		}
	}
	return false
}

func getStatus(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

// workerProcess is `kcleanup worker` run from the built binary.
type workerProcess struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
}

// startWorkerProcess starts a worker on ctl and waits until it owns the control topic.
func startWorkerProcess(t *testing.T, e *opEnv, ctl string) *workerProcess {
	t.Helper()
	p := &workerProcess{stderr: &lockedBuffer{}}
	p.cmd = exec.Command(opTestBinary(t), "worker", "-b", e.bootstrap, "--control-topic", ctl,
		"--http-addr", "127.0.0.1:0", "--log-format", "json")
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	kafkatest.Eventually(t, 60*time.Second, "the worker owns "+ctl, func() bool {
		url := listeningURL(p.stderr.String())
		return url != "" && ready(url) && strings.Contains(p.stderr.String(), "took ownership of control topic")
	})
	return p
}

// kill ends the worker with SIGKILL: no shutdown, no repair, no leaving the group.
func (p *workerProcess) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}
