package daemon

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
)

// fakeGroupCluster is fakeCluster with a broker that accepts short group
// session timeouts, so that failover takes a fraction of a second here.
func fakeGroupCluster(t *testing.T) *worker.Cluster {
	t.Helper()
	c, _ := fakeGroupBroker(t)
	return c
}

// fakeGroupBroker is fakeGroupCluster that also returns the broker, for
// tests that take it away.
func fakeGroupBroker(t *testing.T) (*worker.Cluster, *kfake.Cluster) {
	t.Helper()
	return workertest.FakeBroker(t, kfake.GroupMinSessionTimeout(100*time.Millisecond))
}

// fastOptions keep kfake tests quick: short group timings and polls.
func fastOptions(t *testing.T, topics ...string) []Option {
	return []Option{
		WithControlTopics(topics...),
		WithGroupTimings(600*time.Millisecond, 100*time.Millisecond, 2*time.Second),
		WithPollInterval(50 * time.Millisecond),
		WithBackoff(20*time.Millisecond, 200*time.Millisecond),
		WithShutdownGrace(time.Second),
		WithLogger(testLogger(t)),
	}
}

// testLogger sends the daemon's logs to the test log (shown on failure or -v).
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// running is a daemon started by startDaemon.
type running struct {
	d      *Daemon
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error         // Run's result, once done
}

// stop cancels the daemon (as SIGTERM does) and returns Run's result.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
		return r.err
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return within 20s of the cancel")
		return nil
	}
}

func startDaemon(t *testing.T, c *worker.Cluster, opts ...Option) *running {
	t.Helper()
	d, err := New(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{d: d, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(r.done); r.err = d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// setup creates a data topic with records and its control topic.
func setup(t *testing.T, c *worker.Cluster, topic string) (id, ctl string) {
	t.Helper()
	id = workertest.DataTopic(t, c, topic, 2, 200)
	ctl = protocol.ControlTopicFor(topic)
	if err := c.EnsureControlTopic(context.Background(), ctl, topic, worker.Options{}); err != nil {
		t.Fatal(err)
	}
	return id, ctl
}

// commit applies a plan with NoWait: it leaves the operation COMMITTED, as an
// apply --no-wait (or an apply that died after COMMITTED) does.
func commit(t *testing.T, c *worker.Cluster, ctl string, plan events.Plan) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	proj, err := c.Project(ctx, ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	out, err := c.Apply(ctx, proj, plan, worker.Options{NoWait: true, Actor: "test"})
	if err != nil {
		t.Fatalf("apply --no-wait: %+v", err)
	}
	if out.State != fsm.Committed {
		t.Fatalf("state %s after apply --no-wait, want COMMITTED", out.State)
	}
}

// stateOf reads the control topic afresh and returns a plan's state.
func stateOf(t *testing.T, c *worker.Cluster, ctl, planID string) fsm.State {
	t.Helper()
	st, _ := workertest.Operation(t, c, ctl, planID)
	return st
}

func ownerCount(rs ...*running) (n int, who *running) {
	for _, r := range rs {
		if len(r.d.ownedTopics()) > 0 {
			n++
			who = r
		}
	}
	return n, who
}

func TestDaemonFinishesACommittedOperation(t *testing.T) {
	c := fakeGroupCluster(t)
	id, ctl := setup(t, c, "action-state")
	plan := workertest.MustPlan(t, "C1", "action-state", id, events.Offsets{0: 150, 1: 120})
	commit(t, c, ctl, plan)

	r := startDaemon(t, c, fastOptions(t, ctl)...)
	kafkatest.Eventually(t, 20*time.Second, "plan APPLIED", func() bool { return stateOf(t, c, ctl, plan.PlanID) == fsm.Applied })
	start, err := c.StartOffsets(context.Background(), "action-state")
	if err != nil {
		t.Fatal(err)
	}
	if start[0] != 150 || start[1] != 120 {
		t.Fatalf("log start %v, want 0:150 1:120", start)
	}
	if err := r.stop(t); err != nil {
		t.Fatalf("Run returned %v after a shutdown, want nil", err)
	}
}

func TestDaemonOwnershipMovesWhenTheOwnerLeaves(t *testing.T) {
	c := fakeGroupCluster(t)
	id, ctl := setup(t, c, "action-state")
	a := startDaemon(t, c, fastOptions(t, ctl)...)
	b := startDaemon(t, c, fastOptions(t, ctl)...)
	kafkatest.Eventually(t, 20*time.Second, "exactly one owner", func() bool { n, _ := ownerCount(a, b); return n == 1 })
	_, first := ownerCount(a, b)
	survivor := a
	if first == a {
		survivor = b
	}
	if err := first.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	kafkatest.Eventually(t, 20*time.Second, "the survivor owns the control topic", func() bool { return len(survivor.d.ownedTopics()) == 1 })

	plan := workertest.MustPlan(t, "C1", "action-state", id, events.Offsets{0: 100, 1: 100})
	commit(t, c, ctl, plan)
	kafkatest.Eventually(t, 20*time.Second, "plan APPLIED by the survivor", func() bool { return stateOf(t, c, ctl, plan.PlanID) == fsm.Applied })
	if got := survivor.d.metrics.takeoverCount(); got != 1 {
		t.Fatalf("survivor counted %v takeovers, want 1", got)
	}
}

func TestDaemonShutdownLeavesTheGroup(t *testing.T) {
	c := fakeGroupCluster(t)
	_, ctl := setup(t, c, "action-state")
	r := startDaemon(t, c, fastOptions(t, ctl)...)
	kafkatest.Eventually(t, 20*time.Second, "the daemon owns the control topic", func() bool { return len(r.d.ownedTopics()) == 1 })
	members := func() int {
		gs, err := kadm.NewClient(c.Client()).DescribeGroups(context.Background(), r.d.Group())
		if err != nil {
			t.Fatal(err)
		}
		g, ok := gs[r.d.Group()]
		if !ok {
			return 0
		}
		return len(g.Members)
	}
	if n := members(); n != 1 {
		t.Fatalf("group has %d members while running, want 1", n)
	}
	if err := r.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	// The group's session timeout is 600ms; a member that left at once is
	// gone immediately, so look without waiting.
	if n := members(); n != 0 {
		t.Fatalf("group has %d members after shutdown, want 0 (the worker must leave, not time out)", n)
	}
	if n := len(r.d.ownedTopics()); n != 0 {
		t.Fatalf("still owns %d control topics after shutdown", n)
	}
}

func TestDaemonBlocksAnOperationOnARecreatedTopic(t *testing.T) {
	c := fakeGroupCluster(t)
	id, ctl := setup(t, c, "action-state")
	plan := workertest.MustPlan(t, "C1", "action-state", id, events.Offsets{0: 150, 1: 120})
	commit(t, c, ctl, plan)
	// The data topic is deleted and recreated: same name, new topic ID.
	ctx := context.Background()
	if _, err := kadm.NewClient(c.Client()).DeleteTopic(ctx, "action-state"); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 10*time.Second, "topic gone", func() bool {
		_, err := c.TopicMetadata(ctx, "action-state")
		return errors.Is(err, worker.ErrTopicNotFound)
	})
	// A new client: the old one caches the old incarnation's topic ID.
	fresh, err := worker.Connect(c.ConnOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if newID := workertest.DataTopic(t, fresh, "action-state", 2, 200); newID == id {
		t.Fatal("kfake reused the topic ID")
	}

	r := startDaemon(t, c, fastOptions(t, ctl)...)
	srv := httptest.NewServer(r.d.Handler())
	defer srv.Close()
	var st report.TopicStatus
	kafkatest.Eventually(t, 20*time.Second, "the operation shows as blocked", func() bool {
		st = report.TopicStatus{}
		getJSON(t, srv.URL+"/v1/status?controlTopic="+ctl, &st)
		return len(st.Blocked) == 1
	})
	if st.Blocked[0].PlanID != plan.PlanID || !strings.Contains(st.Blocked[0].Reason, "recreated") {
		t.Fatalf("blocked %+v, want plan %s blocked because the topic was recreated", st.Blocked[0], plan.PlanID)
	}
	if !st.Owned {
		t.Fatal("status of the owner says owned=false")
	}
	// Nothing was deleted from the new incarnation, and the operation did
	// not move past DELETING.
	start, err := c.StartOffsets(ctx, "action-state")
	if err != nil {
		t.Fatal(err)
	}
	if start[0] != 0 || start[1] != 0 {
		t.Fatalf("log start of the recreated topic is %v, want 0:0 1:0", start)
	}
	if s := stateOf(t, c, ctl, plan.PlanID); s != fsm.Deleting && s != fsm.Committed {
		t.Fatalf("blocked operation is %s", s)
	}
	body := get(t, srv.URL+"/metrics")
	if !strings.Contains(body, `kcleanup_blocked_operations{control_topic="`+ctl+`"} 1`) {
		t.Fatalf("metrics do not show the blocked operation:\n%s", body)
	}
	// Blocked means not retried until the blocked-retry interval (2 min by
	// default): the attempt counter stays at one.
	time.Sleep(300 * time.Millisecond) // several poll intervals; asserting that nothing happens needs time
	n := r.d.metrics.attemptCount(ctl, "blocked")
	if n != 1 {
		t.Fatalf("blocked operation was attempted %v times within 300ms, want 1", n)
	}
}

func TestDaemonRetriesABlockedOperationAfterTheInterval(t *testing.T) {
	c := fakeGroupCluster(t)
	id, ctl := setup(t, c, "action-state")
	plan := workertest.MustPlan(t, "C1", "action-state", id, events.Offsets{0: 150, 1: 120})
	commit(t, c, ctl, plan)
	// The policy changes after the commit: DeleteRecords is no longer allowed.
	setPolicy(t, c, "action-state", "compact")
	opts := append(fastOptions(t, ctl), WithBlockedRetry(200*time.Millisecond))
	r := startDaemon(t, c, opts...)
	kafkatest.Eventually(t, 20*time.Second, "blocked", func() bool {
		o := r.d.owned(ctl)
		return o != nil && len(o.blocked()) == 1
	})
	// The operator fixes the policy; the next retry finishes the operation.
	setPolicy(t, c, "action-state", "compact,delete")
	kafkatest.Eventually(t, 20*time.Second, "plan APPLIED", func() bool { return stateOf(t, c, ctl, plan.PlanID) == fsm.Applied })
	kafkatest.Eventually(t, 5*time.Second, "blocked list empty", func() bool { return len(r.d.owned(ctl).blocked()) == 0 })
}

func setPolicy(t *testing.T, c *worker.Cluster, topic, policy string) {
	t.Helper()
	rs, err := kadm.NewClient(c.Client()).AlterTopicConfigs(context.Background(),
		[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: &policy}}, topic)
	if err == nil {
		_, err = rs.On(topic, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode
}

func TestNewRejectsBadConfigurations(t *testing.T) {
	c := &worker.Cluster{}
	for name, opts := range map[string][]Option{
		"no control topic": nil,
		"duplicate topic":  {WithControlTopics("a", "a")},
		"blank topic":      {WithControlTopics(" ")},
		"heartbeat too slow": {WithControlTopics("a"),
			WithGroupTimings(6*time.Second, 6*time.Second, 10*time.Second)},
		"grace beyond rebalance": {WithControlTopics("a"), WithShutdownGrace(20 * time.Second)},
		"names and a regex":      {WithControlTopics("a"), WithControlTopicRegex(`\.kcleanup$`)},
		"regex that fails":       {WithControlTopicRegex(`(`)},
		"negative restore grace": {WithControlTopics("a"), WithRestoreGrace(-time.Second)},
		"restore grace over 24h": {WithControlTopics("a"), WithRestoreGrace(25 * time.Hour)},
	} {
		if _, err := New(c, opts...); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: err %v, want ErrConfig", name, err)
		}
	}
	d, err := New(c, WithControlTopics("orders.kcleanup", "b"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Group() != "kcleanup-worker.orders.kcleanup" {
		t.Fatalf("default group %q", d.Group())
	}
	d, err = New(c, WithControlTopicRegex(`^orders\..*\.kcleanup$`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Group() != `kcleanup-worker.regex.^orders\..*\.kcleanup$` || len(d.ControlTopics()) != 0 {
		t.Fatalf("by regex: group %q, serving %v before discovery", d.Group(), d.ControlTopics())
	}
}

func TestBackoffDoublesUpToTheCap(t *testing.T) {
	var got []time.Duration
	for n := 1; n <= 8; n++ {
		got = append(got, protocol.OwnerRetry{BackoffMin: 500 * time.Millisecond, BackoffMax: 30 * time.Second}.Backoff(n))
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
		8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("backoff sequence %v, want %v", got, want)
		}
	}
}
