package limits_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"golang.org/x/sys/unix"

	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/clustertest/netfault"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
)

// controlTopics is how many control topics the worker serves: 1,000 (issue 33), or
// KCLEANUP_LIMITS_TOPICS.
func controlTopics(t *testing.T) int {
	n := 1000
	if v := os.Getenv("KCLEANUP_LIMITS_TOPICS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 2 {
			t.Fatalf("KCLEANUP_LIMITS_TOPICS=%q: give a number of control topics, 2 or more", v)
		}
	}
	return n
}

// watch samples the worker every second for d: it must stay up (one process, never exited)
// and answer /readyz; it returns the last answer and logs a few samples.
func watch(t *testing.T, w *proc, ctl string, d time.Duration, what string) readyz {
	t.Helper()
	var last readyz
	deadline := time.Now().Add(d)
	for i := 0; time.Now().Before(deadline); i++ {
		if w.Exited() {
			t.Fatalf("%s: the worker exited (%v)", what, w.ExitState())
		}
		r, code, err := w.ready()
		if err == nil {
			last = r
		}
		if i%5 == 0 {
			t.Logf("%s +%ds: fds %d, rss %d MB, /readyz %d (err %v), not caught up %d, unowned %d, descriptors %q, memory %q; %s",
				what, i, w.fds(), w.rss(), code, err, len(r.NotReady), len(r.Unowned), short(r.Descriptors), short(r.Memory), w.statusOf(ctl))
		}
		time.Sleep(time.Second)
	}
	return last
}

// statusOf says whether the worker owns the control topic and why its operations wait.
func (p *proc) statusOf(ctl string) string {
	var st report.TopicStatus
	code, err := p.Get("/v1/status?controlTopic="+ctl, &st)
	if err != nil || code != 200 {
		return fmt.Sprintf("/v1/status %d (%v)", code, err)
	}
	out := fmt.Sprintf("%s owned %v", ctl, st.Owned)
	for _, b := range st.Blocked {
		out += fmt.Sprintf(", plan %s waits: %s", b.PlanID, short(b.Reason))
	}
	return out
}

func short(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// served is the number of control topics the worker logged it serves.
func served(w *proc) int {
	n := 0
	for _, l := range w.LogLines() {
		if l.Msg == "serving control topic" {
			n = max(n, l.Served)
		}
	}
	return n
}

// noFalseClaims fails when the worker called one of the fleet's control topics something
// else, or dropped one the group assigned it (the two answers it gave, before the fix, to
// settings it could not read for want of file descriptors).
func noFalseClaims(t *testing.T, w *proc) {
	t.Helper()
	for _, l := range w.LogLines() {
		if strings.HasPrefix(l.Msg, "the control topic regex matches a topic that is not a control topic") ||
			l.Msg == "assigned a control topic it cannot serve; not owning it" {
			t.Errorf("the worker said %q of %s, a control topic", l.Msg, l.ControlTopic)
		}
	}
}

// counts tallies the worker's warnings by message (and says how many named "too many open
// files").
func counts(t *testing.T, w *proc) {
	seen, emfile := map[string]int{}, 0
	for _, l := range w.LogLines() {
		if l.Level == "WARN" || l.Level == "ERROR" {
			if seen[l.Msg] == 0 && l.Err != "" {
				t.Logf("first %q: %s", l.Msg, short(l.Err))
			}
			seen[l.Msg]++
		}
		if strings.Contains(l.Err, "too many open files") {
			emfile++
		}
	}
	t.Logf("warnings: %v; %d named \"too many open files\"", seen, emfile)
}

// applied commits a plan to 100 through the direct CLI and waits until the worker applied it.
func (f *fleet) applied(within time.Duration) (bool, time.Duration) {
	f.T.Helper()
	p, file := f.PlanFile("limits", 100)
	start := time.Now()
	f.MustKcleanup(f.K.Bootstrap, "apply", file, "--no-wait")
	for time.Since(start) < within {
		if st, _ := f.Operation(p.PlanID); st == fsm.Applied {
			return true, time.Since(start)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return false, time.Since(start)
}

// TestWorkerWithFewFileDescriptors: a worker serving 1,000 control topics whose open-file
// limit is lowered to 256 (prlimit, soft limit; the runtime raised it to the hard limit at
// start) before it finds them. It stays up, serves every one, says why it is degraded
// (/readyz "descriptors", naming the limit), never calls a control topic it could not read
// something else nor drops one the group assigned it, deletes nothing it should not; raised
// again, it says so and owns every control topic.
func TestWorkerWithFewFileDescriptors(t *testing.T) {
	f := newFleet(t)
	n := controlTopics(t)
	w := f.startWorker("w1")
	kafkatest.Eventually(t, time.Minute, "the worker ready with one control topic", func() bool { _, code, _ := w.ready(); return code == 200 })
	t.Logf("one control topic: %d descriptors open, hard limit %d", w.fds(), w.hardNofile(t))
	if why := protocol.DescriptorShortfall(w.hardNofile(t), n); why != "" {
		t.Fatalf("the hard open-file limit cannot be raised to what the test lifts the worker to: %s", why)
	}
	const soft = 256
	w.setNofile(t, soft)
	f.addIdle(n - 1)
	kafkatest.Eventually(t, 2*time.Minute, fmt.Sprintf("the worker serving %d control topics", n), func() bool { return w.Exited() || served(w) == n })
	kafkatest.Eventually(t, time.Minute, "/readyz saying the open-file limit is too low", func() bool {
		r, _, _ := w.ready()
		return w.Exited() || strings.Contains(r.Descriptors, "open-file limit is 256")
	})
	r := watch(t, w, f.Ctl, 20*time.Second, "at 256 descriptors")
	t.Logf("at 256 descriptors /readyz says: %s", r.Descriptors)
	ok, took := f.applied(30 * time.Second)
	t.Logf("a plan committed at 256 descriptors: APPLIED %v after %s (%s)", ok, took.Round(100*time.Millisecond), w.statusOf(f.Ctl))

	w.setNofile(t, w.hardNofile(t))
	lifted := time.Now()
	kafkatest.Eventually(t, 2*time.Minute, "ready, no shortfall, nothing unowned after the limit is raised", func() bool {
		r, code, _ := w.ready()
		return w.Exited() || code == 200 && r.Descriptors == "" && len(r.Unowned) == 0
	})
	t.Logf("limit raised: ready with nothing unowned %s later, %d descriptors open", time.Since(lifted).Round(100*time.Millisecond), w.fds())
	if !ok {
		if ok, took = f.applied(time.Minute); !ok {
			t.Fatalf("a plan committed after the limit was raised is not APPLIED after %s", took)
		}
	}
	if w.Exited() {
		t.Fatalf("the worker exited (%v)", w.ExitState())
	}
	noFalseClaims(t, w)
	counts(t, w)
	f.Check()
}

// TestWorkerWithASmallGOMEMLIMIT: a worker started with GOMEMLIMIT=32MiB serves 1,000 control
// topics (a live heap of about 130 MB, docs/benchmarks.md B6). It stays up, serves every one,
// says why it is slower (/readyz "memory", naming the heap and the limit), applies a plan, and
// the invariants hold. GOMEMLIMIT is the runtime's, read at start: not raised in flight.
func TestWorkerWithASmallGOMEMLIMIT(t *testing.T) {
	f := newFleet(t)
	n := controlTopics(t)
	w := f.startWorker("w1", "GOMEMLIMIT=32MiB")
	f.addIdle(n - 1)
	kafkatest.Eventually(t, 3*time.Minute, fmt.Sprintf("the worker serving %d control topics", n), func() bool { return w.Exited() || served(w) == n })
	kafkatest.Eventually(t, time.Minute, "/readyz saying the heap is above GOMEMLIMIT", func() bool {
		r, _, _ := w.ready()
		return w.Exited() || strings.Contains(r.Memory, "GOMEMLIMIT (32 MiB)")
	})
	r := watch(t, w, f.Ctl, 15*time.Second, "GOMEMLIMIT=32MiB")
	t.Logf("/readyz says: %s", r.Memory)
	ok, took := f.applied(2 * time.Minute)
	if !ok {
		t.Fatalf("a plan committed under GOMEMLIMIT=32MiB is not APPLIED after %s", took)
	}
	t.Logf("a plan committed under GOMEMLIMIT=32MiB: APPLIED after %s", took.Round(100*time.Millisecond))
	kafkatest.Eventually(t, 2*time.Minute, "ready", func() bool { _, code, _ := w.ready(); return w.Exited() || code == 200 })
	if w.Exited() {
		t.Fatalf("the worker exited (%v)", w.ExitState())
	}
	noFalseClaims(t, w)
	counts(t, w)
	f.Check()
}

// TestWorkerWhileTheBrokersRefuseConnections: the brokers' max.connections on the listener
// the worker uses (listener.name.linka.max.connections, a dynamic cluster-wide config set with
// IncrementalAlterConfigs) is 100 when a worker starts to serve 1,000 control topics (about
// 700 connections to each broker): the brokers accept no connection above it (the rest wait).
// The worker reaches them through link A only (the network-fault harness's proxies, no fault),
// so the test's own clients, on the PLAINTEXT listener, and replication are not limited. It
// stays up, says what it has not read (/readyz), deletes nothing it should not; with the config
// removed it is ready and applies the plan committed meanwhile. (A limit lowered under a running
// worker bites only as its connections are re-made: an idle view publishes that it is caught up
// from one listing for all, and the owner reads on the shared client; measured, not asserted.)
func TestWorkerWhileTheBrokersRefuseConnections(t *testing.T) {
	f := newFleet(t)
	n := controlTopics(t)
	// The proxies hold two descriptors for each of the worker's connections.
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < uint64(5*n) {
		t.Fatalf("the test process may open %d files (%v): its proxies need about %d for %d control topics; raise ulimit -n (the hard limit)", lim.Cur, err, 5*n, n)
	}
	link := netfault.Start(t, f.K, 1).Links()[0]
	f.addIdle(n - 1)
	key := "listener.name." + strings.ToLower(link.Name) + ".max.connections"
	maxConnections(t, f.Adm, key, "100")
	restored := false
	restore := func() {
		if !restored {
			restored = true
			maxConnections(t, f.Adm, key, "")
		}
	}
	t.Cleanup(restore)
	w := f.startWorkerVia("w1", link.Bootstrap)
	p, file := f.PlanFile("limited", 100)
	f.MustKcleanup(f.K.Bootstrap, "apply", file, "--no-wait") // the CLI's path is not limited
	var said readyz
	kafkatest.Eventually(t, 2*time.Minute, fmt.Sprintf("the worker serving %d control topics, /readyz saying which it has not read", n), func() bool {
		r, code, _ := w.ready()
		if code == 503 && len(r.NotReady) > 0 {
			said = r
		}
		return w.Exited() || served(w) == n && said.NotReady != nil
	})
	r := watch(t, w, f.Ctl, 20*time.Second, "max.connections 100")
	if len(r.NotReady) > 0 {
		said = r
	}
	for topic, why := range said.NotReady {
		t.Logf("at max.connections 100 /readyz says (one of %d): %s: %s", len(said.NotReady), topic, why)
		break
	}
	st, _ := f.Operation(p.PlanID)
	t.Logf("a plan committed at max.connections 100 is %s", st)
	f.Check() // nothing deleted that the log does not allow, limited or not
	restore()
	lifted := time.Now()
	kafkatest.Eventually(t, 3*time.Minute, "ready after max.connections is removed", func() bool {
		_, code, _ := w.ready()
		return w.Exited() || code == 200
	})
	t.Logf("max.connections removed: ready %s later", time.Since(lifted).Round(100*time.Millisecond))
	kafkatest.Eventually(t, 2*time.Minute, "the plan committed while limited APPLIED", func() bool {
		st, _ := f.Operation(p.PlanID)
		return st == fsm.Applied
	})
	t.Logf("the plan committed while limited: APPLIED (seen %s after the limit was removed)", time.Since(lifted).Round(100*time.Millisecond))
	if w.Exited() {
		t.Fatalf("the worker exited (%v)", w.ExitState())
	}
	noFalseClaims(t, w)
	counts(t, w)
	f.Check()
}

// maxConnections sets a cluster-wide max.connections config, or removes it ("").
func maxConnections(t *testing.T, adm *kadm.Client, key, v string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	op := kadm.SetConfig
	var value *string
	if v == "" {
		op = kadm.DeleteConfig
	} else {
		value = &v
	}
	resp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: op, Name: key, Value: value}})
	if err == nil {
		for _, r := range resp {
			if r.Err != nil {
				err = fmt.Errorf("%v: %s", r.Err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		t.Fatalf("%s=%q: %v", key, v, err)
	}
	t.Logf("brokers' %s: %q", key, v)
}
