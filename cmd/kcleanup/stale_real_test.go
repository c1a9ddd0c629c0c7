package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker/console"
	"github.com/kcleanup/kcleanup/worker/daemon"
)

// A PLANNED left by an apply interrupted before its commit, 8 days ago, is
// aged out of the default view (status, /v1/status, the console), which
// says so, and stays in status --all and history. A PLANNED of today stays
// in every view. Real broker.
func TestStalePlannedAgesOutOfTheDefaultView(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.dataTopic(t, 1, 200, opGoodDataConfigs())
	ctl := protocol.ControlTopicFor(topic)
	if code, stdout, stderr := e.run(t, "init", "--topic", topic); code != exitOK {
		t.Fatalf("init: exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := t.TempDir()
	stale, _ := opTestPlan(t, dir, "interrupted", topic, id, events.Offsets{0: 100})
	fresh, freshFile := opTestPlan(t, dir, "submitted", topic, id, events.Offsets{0: 120})
	// Tables and the console may show a plan ID's first 12 characters.
	staleID, freshID := stale.PlanID[:12], fresh.PlanID[:12]
	c, ctx := e.cluster(t)
	planned := workertest.Envelope(events.Planned, stale, "ops-laptop/4242")
	planned.At = time.Now().UTC().Add(-report.StalePlanned - 24*time.Hour) // as written 8 days ago
	if _, err := c.Append(ctx, ctl, planned); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := e.run(t, "submit", freshFile); code != exitOK {
		t.Fatalf("submit: exit %d\n%s\n%s", code, stdout, stderr)
	}

	code, stdout, stderr := e.run(t, "status", "--control-topic", ctl)
	if code != exitOK || strings.Contains(stdout, staleID) || !strings.Contains(stdout, freshID) ||
		!strings.Contains(stdout, "1 PLANNED untouched for more than 7 days not shown") || !strings.Contains(stdout, "Operations: 2 PLANNED") {
		t.Errorf("status: exit %d; want the fresh PLANNED listed, the stale one counted and not listed:\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = e.run(t, "-o", "json", "status", "--control-topic", ctl)
	var st report.Status
	if err := json.Unmarshal([]byte(stdout), &st); code != exitOK || err != nil || st.StalePlanned != 1 || len(st.Operations) != 1 {
		t.Errorf("status -o json: exit %d %v, stalePlanned %d, %d operations; want 1 and 1\n%s", code, err, st.StalePlanned, len(st.Operations), stderr)
	}
	for _, args := range [][]string{{"status", "--all"}, {"history"}} {
		code, stdout, stderr := e.run(t, append(args, "--control-topic", ctl)...)
		if code != exitOK || !strings.Contains(stdout, staleID) || !strings.Contains(stdout, freshID) {
			t.Errorf("%v: exit %d; want both PLANNED listed:\n%s\n%s", args, code, stdout, stderr)
		}
	}

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
	var def, all report.TopicStatus
	kafkatest.Eventually(t, 60*time.Second, "the worker reads both PLANNED", func() bool {
		return getStatus(t, srv.URL+"/v1/status?controlTopic="+ctl, &def) == http.StatusOK && def.OperationCounts["PLANNED"] == 2
	})
	if def.StalePlanned != 1 || len(def.Operations) != 1 || def.Operations[0].PlanID != fresh.PlanID {
		t.Errorf("/v1/status: stalePlanned %d, operations %+v; want only the fresh PLANNED", def.StalePlanned, def.Operations)
	}
	if getStatus(t, srv.URL+"/v1/status?controlTopic="+ctl+"&all=true", &all); len(all.Operations) != 2 {
		t.Errorf("/v1/status?all=true lists %d operations, want both PLANNED", len(all.Operations))
	}
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "1 PLANNED untouched for more than 7 days not shown") || strings.Contains(string(page), staleID) || !strings.Contains(string(page), freshID) {
		t.Errorf("the console lists the stale PLANNED, or does not say it left it out")
	}
}
