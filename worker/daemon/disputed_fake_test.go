package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
)

// An owner whose projection shows a disputed conflict (docs/design.md §5:
// the log cleaner removed the winner's first copy and kept the loser, and
// another worker's retraction tombstone says so) writes nothing for it: no
// re-append of the commit it accepted, no retraction of the one it
// defeated, no DELETING; it reports the operation blocked on history at
// risk and reads the control topic afresh, again and again, until a read
// no longer shows the dispute. The log here is what such a reader sees, so
// every fresh read shows it again (kfake has no log cleaner: the
// simulation, protocol/sim, shows the read after the cleaner).
func TestDisputedConflictIsReadAfresh(t *testing.T) {
	c := fakeGroupCluster(t)
	id, ctl := setup(t, c, "action-state")
	l := workertest.MustPlan(t, "CL", "action-state", id, events.Offsets{0: 150, 1: 50})
	w := workertest.MustPlan(t, "CW", "action-state", id, events.Offsets{0: 60, 1: 120})
	record := func(p events.Plan) *kgo.Record {
		env := events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Committed, PlanID: p.PlanID,
			Plan: p, Boundary: p.Offsets.Clone(), At: time.Now(), Actor: "apply/test"}
		key, value := env.Encode()
		return &kgo.Record{Topic: ctl, Partition: 0, Key: key, Value: value}
	}
	retraction := &kgo.Record{Topic: ctl, Partition: 0, Key: []byte(events.Key(l.PlanID, events.Committed)), Headers: []kgo.RecordHeader{
		{Key: projector.HeaderMaintenance, Value: []byte(projector.MaintenanceRetraction)},
		{Key: projector.HeaderActor, Value: []byte("worker/other")},
		{Key: projector.HeaderReason, Value: []byte("retracts a key whose every record was rejected")},
	}}
	ctx := context.Background()
	// l first and accepted, w's COMMITTED defeated by it, then another
	// worker's retraction of l's key.
	if err := c.Client().ProduceSync(ctx, record(l), record(w), retraction).FirstErr(); err != nil {
		t.Fatal(err)
	}
	end := controlEnd(t, c, ctl)

	logs := &countingLog{t: t, words: []string{"reading it afresh", "status view of a disputed control topic read afresh"}}
	r := startDaemon(t, c, append(fastOptions(t, ctl),
		WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		func(c *daemonConfig) { c.rereadAfter = 100 * time.Millisecond })...)
	srv := httptest.NewServer(r.d.Handler())
	defer srv.Close()
	var blocked string
	kafkatest.Eventually(t, 20*time.Second, "the owner reads the disputed control topic afresh twice and reports l blocked", func() bool {
		var st report.TopicStatus
		getJSON(t, srv.URL+"/v1/status?controlTopic="+ctl, &st)
		for _, b := range st.Blocked {
			if b.PlanID == l.PlanID {
				blocked = b.Reason
			}
		}
		return logs.count(0) >= 2 && logs.count(1) >= 2 && blocked != ""
	})
	// And the recovery gate of this replica cannot tell meanwhile.
	if a := do(t, "POST", srv.URL+"/v1/validate?controlTopic="+ctl, marker("action-state", id, events.Offsets{0: 150, 1: 120})); a.code != http.StatusServiceUnavailable {
		t.Errorf("POST /v1/validate on a disputed view: %d %s, want 503 (cannot tell)", a.code, a.body)
	}
	if !strings.Contains(blocked, "judged that conflict the other way") {
		t.Errorf("l is blocked for %q; want the disputed conflict named", blocked)
	}
	if got := controlEnd(t, c, ctl); got != end {
		t.Errorf("the control topic grew from %d to %d records: a disputed view appends nothing (no repair, retraction or DELETING)", end, got)
	}
	if start, err := c.StartOffsets(ctx, "action-state"); err != nil || start[0] != 0 || start[1] != 0 {
		t.Errorf("log starts %v (%v): nothing may be deleted on a disputed view", start, err)
	}
}

// controlEnd reads the control topic afresh and returns its end offset.
func controlEnd(t *testing.T, c *worker.Cluster, ctl string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	proj, err := c.Project(ctx, ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	return proj.State.Next()
}

// countingLog passes the daemon's log to the test log and counts the lines
// holding each of words.
type countingLog struct {
	t     *testing.T
	words []string
	mu    sync.Mutex
	n     map[int]int
}

func (l *countingLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, w := range l.words {
		if bytes.Contains(p, []byte(w)) {
			if l.n == nil {
				l.n = map[int]int{}
			}
			l.n[i]++
		}
	}
	return len(p), nil
}

func (l *countingLog) count(i int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[i]
}
