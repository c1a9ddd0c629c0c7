package main

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/topicconfig"
	"github.com/kcleanup/kcleanup/worker/console"
	"github.com/kcleanup/kcleanup/worker/daemon"
)

// A worker blocked on its control topic's unsafe settings: the exact
// kafka-configs fix is in /v1/status (blocked[].hints), on the console, and in
// `kcleanup status` (table and JSON), not only in the worker's log. Real broker.
func TestABlockedWorkerShowsTheFixEverywhere(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.dataTopic(t, 1, 200, opGoodDataConfigs())
	ctl := protocol.ControlTopicFor(topic)
	if code, stdout, stderr := e.run(t, "init", "--topic", topic); code != exitOK {
		t.Fatalf("init: exit %d\n%s\n%s", code, stdout, stderr)
	}
	plan, f := opTestPlan(t, t.TempDir(), "C1", topic, id, events.Offsets{0: 100})
	if code, stdout, stderr := e.run(t, "submit", f); code != exitOK {
		t.Fatalf("submit: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// COMMITTED (as an apply interrupted after its commit leaves it), then the
	// control topic's settings become unsafe: no worker may delete.
	c, ctx := e.cluster(t)
	commit := workertest.Envelope(events.Committed, plan, "script")
	commit.Boundary = plan.Offsets.Clone()
	if _, err := c.Append(ctx, ctl, commit); err != nil {
		t.Fatal(err)
	}
	e.setTopicConfig(t, ctl, "min.compaction.lag.ms", "0")
	fix := "kafka-configs --bootstrap-server " + e.bootstrap + " --alter --entity-type topics --entity-name " + ctl +
		" --add-config min.compaction.lag.ms=" + strconv.FormatInt(topicconfig.CreatedCompactionLag.Milliseconds(), 10)

	d, err := daemon.New(c, daemon.WithControlTopics(ctl), daemon.WithPollInterval(100*time.Millisecond),
		daemon.WithBootstrap(e.bootstrap), daemon.WithShutdownGrace(time.Second), console.Mount())
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

	var blocked report.BlockedOperation
	kafkatest.Eventually(t, 60*time.Second, "the owner blocks the plan on the control topic's settings", func() bool {
		var st report.TopicStatus
		if getStatus(t, srv.URL+"/v1/status?controlTopic="+ctl, &st) != http.StatusOK {
			return false
		}
		for _, b := range st.Blocked {
			if b.PlanID == plan.PlanID {
				blocked = b
				return true
			}
		}
		return false
	})
	if !strings.Contains(blocked.Reason, "min.compaction.lag.ms is 0") || !slices.Contains(blocked.Hints, fix) {
		t.Errorf("/v1/status blocked %+v: want the unsafe setting in reason and %q in hints", blocked, fix)
	}

	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if text := html.UnescapeString(string(page)); !strings.Contains(text, "Blocked operation") || !strings.Contains(text, fix) {
		t.Errorf("the console does not show the fix %q for the blocked operation", fix)
	}

	code, stdout, stderr := e.run(t, "status", "--control-topic", ctl)
	if code != exitOK || !strings.Contains(stdout, "BLOCKED: control topic "+ctl+" is unsafe") ||
		!strings.Contains(stdout, plan.PlanID) || !strings.Contains(stdout, "fix: "+fix) {
		t.Errorf("kcleanup status: exit %d; want the block, its plan and %q:\n%s\n%s", code, fix, stdout, stderr)
	}
	code, stdout, stderr = e.run(t, "-o", "json", "status", "--control-topic", ctl)
	var st report.Status
	if err := json.Unmarshal([]byte(stdout), &st); code != exitOK || err != nil {
		t.Fatalf("kcleanup -o json status: exit %d %v\n%s\n%s", code, err, stdout, stderr)
	}
	if len(st.Blocked) != 1 || st.Blocked[0].PlanID != plan.PlanID || !slices.Contains(st.Blocked[0].Hints, fix) {
		t.Errorf("kcleanup -o json status: blocked %+v; want plan %s with hint %q", st.Blocked, plan.PlanID, fix)
	}
	if start := e.logStarts(t, topic); start[0] != 0 {
		t.Fatalf("log start %v: nothing may be deleted while the control topic is unsafe", start)
	}
}
