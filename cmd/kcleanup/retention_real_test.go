package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/flinkgentest"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
)

// followCases are flinkgentest.FollowCases: three recovery points of one Flink job, markers of
// topic "actions" on 4 partitions (1100-1103, 2100-2103, 3100-3103).
func followCases(t *testing.T) []flinkgentest.Case {
	t.Helper()
	out, err := flinkgentest.FollowCases(flinkgentest.Cases(t))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// copyAs is flinkgentest.CopyAs: real Flink bytes naming a topic the test broker holds.
func copyAs(t *testing.T, c flinkgentest.Case, dir, topic, topicID string) {
	t.Helper()
	if err := flinkgentest.CopyAs(c, dir, topic, topicID); err != nil {
		t.Fatal(err)
	}
}

// TestRetentionFollowsRealCheckpoints: a policy set on a control topic, watched by a real
// worker over a checkpoint base directory laid out as Flink lays it out (<base>/<job id>/chk-N,
// real Flink _metadata files), trims the real data topic to the oldest checkpoint, and rises
// only when the checkpoint that bounds it is deleted. retention show is the dry run; history
// says who set and cleared the policy; a location outside --checkpoint-root, and an empty
// base, block the policy with a reason in /v1/status and the metric, and commit nothing.
func TestRetentionFollowsRealCheckpoints(t *testing.T) {
	cases := followCases(t)
	e := opTestEnv(t)
	var rb [3]byte
	_, _ = rand.Read(rb[:])
	topic := "k" + hex.EncodeToString(rb[:]) // 7 characters, as "actions"
	kafkatest.CreateTopic(t, e.cl, topic, 4, opGoodDataConfigs())
	t.Cleanup(func() { e.deleteTopic(t, topic); e.deleteTopic(t, protocol.ControlTopicFor(topic)) })
	for p := int32(0); p < 4; p++ {
		kafkatest.Produce(t, e.cl, topic, p, 3200)
	}
	id := e.topicID(t, topic)
	e.initControlTopic(t, topic)
	control := protocol.ControlTopicFor(topic)

	base := t.TempDir()
	job := filepath.Join(base, "c799859f5eeb76d63173c73f0df79c67")
	for i, c := range cases {
		copyAs(t, c, filepath.Join(job, "chk-"+string(rune('1'+i))), topic, id)
	}
	// A checkpoint still being written (no _metadata) and Flink's shared directories: not points.
	for _, d := range []string{"chk-4", "shared", "taskowned"} {
		if err := os.MkdirAll(filepath.Join(job, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	want := func(i int) events.Offsets { // what checkpoint chk-(i+1) needs
		return events.Offsets{0: int64(1100 + 1000*i), 1: int64(1101 + 1000*i), 2: int64(1102 + 1000*i), 3: int64(1103 + 1000*i)}
	}

	code, stdout, stderr := e.run(t, "-o", "json", "retention", "set", "--topic", topic, "--watch", base, "--every", "1s", "--reason", "follow the job")
	if code != exitOK || !strings.Contains(stdout, `"active": true`) {
		t.Fatalf("retention set: exit %d\n%s\n%s", code, stdout, stderr)
	}

	if code, stdout, _ := e.run(t, "status", "--topic", topic); code != exitOK || !strings.Contains(stdout, "Retention policy retention@0") || !strings.Contains(stdout, "follows "+base+" every 1s") {
		t.Errorf("status does not show the policy (exit %d):\n%s", code, stdout)
	}
	if st := e.status(t, control); st.RetentionPolicy == nil || !st.RetentionPolicy.Active || st.RetentionPolicy.Reason != "follow the job" {
		t.Errorf("status -o json retentionPolicy: %+v", st.RetentionPolicy)
	}

	// The dry run: every point, the bounding one, the plan; nothing written or deleted.
	var show retentionShow
	code, stdout, stderr = e.run(t, "-o", "json", "retention", "show", "--topic", topic, "--checkpoint-root", base)
	if code != exitOK || json.Unmarshal([]byte(stdout), &show) != nil {
		t.Fatalf("retention show: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if len(show.Points) != 3 || !show.Points[0].Bounding || show.Points[1].Bounding || show.Plan == nil || !show.Plan.Offsets.Equal(want(0)) ||
		show.Plan.SourceRecoveryPoint != filepath.Join(job, "chk-1") {
		t.Fatalf("retention show: %s", stdout)
	}
	if got := e.logStarts(t, topic); !got.Equal(events.Offsets{0: 0, 1: 0, 2: 0, 3: 0}) {
		t.Fatalf("show deleted records: log starts %v", got)
	}
	code, stdout, _ = e.run(t, "retention", "show", "--topic", topic)
	for _, w := range []string{"bounds cleanup now", "Plan " + show.Plan.PlanID + " would follow", "chk-3"} {
		if code != exitOK || !strings.Contains(stdout, w) {
			t.Errorf("retention show (text) lacks %q:\n%s", w, stdout)
		}
	}
	// Outside the roots: not read, and no plan.
	code, stdout, _ = e.run(t, "-o", "json", "retention", "show", "--topic", topic, "--checkpoint-root", t.TempDir())
	if code != exitOK || !strings.Contains(stdout, `"noPlan": "outside-roots"`) {
		t.Fatalf("show outside the roots: exit %d\n%s", code, stdout)
	}

	// The worker follows: the boundary reaches the oldest checkpoint.
	url, stop := startWorker(t, e, control, base)
	defer stop()
	waitLogStarts(t, e, topic, want(0))
	st := workerStatus(t, url, control)
	if st.Retention == nil || st.Retention.Blocked || st.Retention.Points != 3 {
		t.Fatalf("/v1/status retention: %+v", st.Retention)
	}
	// Deleting a checkpoint that does not bound cleanup changes nothing; deleting the one
	// that does raises the boundary to the next.
	if err := os.RemoveAll(filepath.Join(job, "chk-3")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // several rounds at --every 1s
	if got := e.logStarts(t, topic); !got.Equal(want(0)) {
		t.Fatalf("log starts %v after deleting a point that does not bound, want %v", got, want(0))
	}
	if err := os.RemoveAll(filepath.Join(job, "chk-1")); err != nil {
		t.Fatal(err)
	}
	waitLogStarts(t, e, topic, want(1))

	// No point left: blocked, with the reason, and nothing more is deleted.
	if err := os.RemoveAll(filepath.Join(job, "chk-2")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st = workerStatus(t, url, control)
		if st.Retention != nil && st.Retention.Blocked && st.Retention.NoPlan == protocol.NoPlanNoPoint {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/v1/status never said no-point: %+v", st.Retention)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if m := get(t, url+"/metrics"); !strings.Contains(m, `kcleanup_retention_blocked{control_topic="`+control+`",reason="no-point"} 1`) {
		t.Errorf("metrics lack the blocked policy:\n%s", grepLines(m, "retention"))
	}
	if got := e.logStarts(t, topic); !got.Equal(want(1)) {
		t.Fatalf("log starts %v with no point left, want %v", got, want(1))
	}

	// Cleared: history says who set it, who cleared it and why; the plans' actor names the policy.
	code, stdout, stderr = e.run(t, "retention", "clear", "--topic", topic, "--reason", "job retired")
	if code != exitOK || !strings.Contains(stdout, "cleared") {
		t.Fatalf("retention clear: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, _ = e.run(t, "history", "--control-topic", control)
	for _, w := range []string{"RETENTION_SET", "RETENTION_CLEARED", "follow the job", "job retired", "retention@0 via"} {
		if code != exitOK || !strings.Contains(stdout, w) {
			t.Errorf("history lacks %q:\n%s", w, stdout)
		}
	}
}

// startWorker runs `kcleanup worker` in this process for control, reading checkpoints under root.
func startWorker(t *testing.T, e *opEnv, control, root string) (url string, stop func()) {
	t.Helper()
	clearWorkerEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	var log lockedBuffer
	done := make(chan int, 1)
	var gb [4]byte
	_, _ = rand.Read(gb[:])
	go func() {
		done <- execute(ctx, newRootCmd(), []string{"worker", "-b", e.bootstrap, "--control-topic", control, "--checkpoint-root", root,
			"--group", "retention-test-" + hex.EncodeToString(gb[:]), "--http-addr", "127.0.0.1:0", "--log-format", "json",
			"--session-timeout", "6s", "--heartbeat-interval", "500ms"}, io.Discard, &log)
	}()
	stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("the worker did not stop within 30s")
		}
		if t.Failed() {
			t.Logf("worker log:\n%s", log.String())
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for url == "" || !ready(url) {
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("worker not ready within 60s")
		}
		if url == "" {
			url = listeningURL(log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return url, stop
}

func waitLogStarts(t *testing.T, e *opEnv, topic string, want events.Offsets) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := e.logStarts(t, topic)
		if got.Equal(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("log starts %v, want %v within 60s", got, want)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func workerStatus(t *testing.T, url, control string) report.TopicStatus {
	t.Helper()
	var ts report.TopicStatus
	if err := json.Unmarshal([]byte(get(t, url+"/v1/status?controlTopic="+control)), &ts); err != nil {
		t.Fatal(err)
	}
	return ts
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
