package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/worker"
	"github.com/kcleanup/kcleanup/worker/daemon"
)

// clearWorkerEnv unsets the worker's environment fallbacks too.
func clearWorkerEnv(t *testing.T) {
	t.Helper()
	clearEnv(t)
	for _, k := range []string{envWorkerTopics, envWorkerRegex, envWorkerGroup, envWorkerHTTPAddr, envWorkerLogFormat, envWorkerLogLevel} {
		unsetEnv(t, k)
	}
}

// parseWorker runs the worker command line in the real frame, up to the parsed options.
func parseWorker(t *testing.T, args ...string) (workerOptions, int, string) {
	t.Helper()
	g := &globalOptions{}
	var got workerOptions
	cmd := newWorkerCmd(g)
	cmd.RunE = func(c *cobra.Command, _ []string) error {
		var err error
		got, err = parseWorkerFlags(c, *g)
		return err
	}
	code, _, stderr := runWith(t, g, append([]string{"worker"}, args...), cmd)
	return got, code, stderr
}

func TestWorkerFlags(t *testing.T) {
	clearWorkerEnv(t)
	o, code, stderr := parseWorker(t, "--control-topic", "a", "--control-topics", "b, c", "--control-topics", "d")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !slices.Equal(o.topics, []string{"a", "b", "c", "d"}) {
		t.Fatalf("topics %q, want a b c d", o.topics)
	}
	if o.httpAddr != defaultHTTPAddr || o.logFormat != "text" || o.group != "" ||
		o.session != daemon.DefaultSessionTimeout || o.heartbeat != daemon.DefaultHeartbeatInterval {
		t.Fatalf("defaults %+v", o)
	}

	t.Setenv(envWorkerTopics, "x,y")
	t.Setenv(envWorkerLogFormat, "JSON")
	t.Setenv(envWorkerGroup, "fleet")
	o, code, _ = parseWorker(t)
	if code != exitOK || !slices.Equal(o.topics, []string{"x", "y"}) || o.logFormat != "json" || o.group != "fleet" {
		t.Fatalf("environment: exit %d, %+v", code, o)
	}
	o, _, _ = parseWorker(t, "--control-topics", "z", "--log-format", "text", "--http-addr", "")
	if !slices.Equal(o.topics, []string{"z"}) || o.logFormat != "text" || o.httpAddr != "" {
		t.Fatalf("flags must win over the environment: %+v", o)
	}
}

// TestRestoreGraceFlag: --restore-grace is off by default, read from KCLEANUP_RESTORE_GRACE,
// the flag wins, and days are understood.
func TestRestoreGraceFlag(t *testing.T) {
	clearWorkerEnv(t)
	o, code, stderr := parseWorker(t, "--control-topic", "a")
	if code != exitOK || o.restoreGrace != 0 {
		t.Fatalf("default: exit %d (%s), grace %s; want 0 (off)", code, stderr, o.restoreGrace)
	}
	t.Setenv(envRestoreGrace, "15m")
	if o, code, _ = parseWorker(t, "--control-topic", "a"); code != exitOK || o.restoreGrace != 15*time.Minute {
		t.Fatalf("environment: exit %d, grace %s; want 15m", code, o.restoreGrace)
	}
	if o, code, _ = parseWorker(t, "--control-topic", "a", "--restore-grace", "1d"); code != exitOK || o.restoreGrace != 24*time.Hour {
		t.Fatalf("flag: exit %d, grace %s; want 24h, over the environment", code, o.restoreGrace)
	}
}

// TestRestoreGraceUsageErrors: negative, unparsable and absurdly large graces are usage
// errors with a hint, from the flag of worker and apply and from the environment.
func TestRestoreGraceUsageErrors(t *testing.T) {
	clearWorkerEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"worker", "--control-topic", "a", "--restore-grace", "-1m"}, `invalid --restore-grace "-1m": negative`},
		{[]string{"worker", "--control-topic", "a", "--restore-grace", "soon"}, `invalid --restore-grace "soon": not a duration`},
		{[]string{"worker", "--control-topic", "a", "--restore-grace", "30"}, `invalid --restore-grace "30": not a duration`},
		{[]string{"worker", "--control-topic", "a", "--restore-grace", "400d"}, `invalid --restore-grace "400d": above the longest grace, 24h0m0s`},
		{[]string{"apply", "plan.json", "--restore-grace", "-5s"}, `invalid --restore-grace "-5s": negative`},
		{[]string{"apply", "plan.json", "--restore-grace", "2d"}, "Hint: give a duration such as 90s, 15m or 2h"},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	t.Setenv(envRestoreGrace, "forever")
	if code, _, stderr := runCLI(t, "worker", "--control-topic", "a"); code != exitUsage || !strings.Contains(stderr, `invalid KCLEANUP_RESTORE_GRACE "forever"`) {
		t.Errorf("environment: exit %d, stderr %q; want exit 2 naming KCLEANUP_RESTORE_GRACE", code, stderr)
	}
}

func TestWorkerUsageErrors(t *testing.T) {
	clearWorkerEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"worker"}, "no control topic to serve"},
		{[]string{"worker", "--control-topic", "a", "--log-format", "xml"}, `invalid --log-format "xml"`},
		{[]string{"worker", "--control-topic", "a", "--log-level", "loud"}, `invalid --log-level "loud"`},
		{[]string{"worker", "--control-topic", "a", "--session-timeout", "0s"}, "--session-timeout"},
		{[]string{"worker", "--control-topics", "a,a"}, `control topic "a" is given twice`},
		{[]string{"worker", "--control-topic", "a", "--heartbeat-interval", "10s"}, "--heartbeat-interval 10s must be below --session-timeout 6s"},
		{[]string{"worker", "--control-topic", "a", "--heartbeat-interval", "6s"}, "Hint: give --heartbeat-interval at most a third of --session-timeout (2s for --session-timeout=6s)"},
		{[]string{"worker", "--control-topic", "a", "extra"}, "unknown command"},
		{[]string{"worker", "--control-topic", "a", "--control-topic-regex", "b"}, "control topics are given both by name (a) and by --control-topic-regex"},
		{[]string{"worker", "--control-topic-regex", "("}, `invalid --control-topic-regex "(": error parsing regexp`},
		{[]string{"worker", "--control-topic-regex", "x", "--discovery-interval", "0s"}, "invalid --discovery-interval 0s"},
		{[]string{"worker", "--control-topic", "a", "--replica-name", "kc 1"}, `invalid --replica-name: replica name "kc 1" is blank, longer than 100 bytes, or has spaces`},
		{[]string{"worker", "--control-topic", "a", "--replica-name", ""}, "--replica-name is given but blank"},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// lockedBuffer collects a command's stderr while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestWorkerCommandServesAndExitsZeroOnSignal runs `kcleanup worker` against kfake, waits
// until it is ready, then cancels its context as SIGTERM does: the exit code is 0, the log
// is JSON lines and says the replica left the group.
func TestWorkerCommandServesAndExitsZeroOnSignal(t *testing.T) {
	clearWorkerEnv(t)
	fk, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer fk.Close()
	addr := fk.ListenAddrs()[0]
	c, err := worker.Connect(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CreateControlTopic(context.Background(), "orders.kcleanup", 1); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, newRootCmd(), []string{"worker", "-b", addr, "--control-topic", "orders.kcleanup",
			"--http-addr", "127.0.0.1:0", "--log-format", "json", "--session-timeout", "1s", "--heartbeat-interval", "100ms"},
			io.Discard, &stderr)
	}()
	var url string
	deadline := time.Now().Add(20 * time.Second)
	for url == "" || !ready(url) {
		if time.Now().After(deadline) {
			t.Fatalf("worker not ready within 20s; log:\n%s", stderr.String())
		}
		if url == "" {
			url = listeningURL(stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d after the signal, want 0; log:\n%s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the worker did not exit within 20s of the signal")
	}
	log := stderr.String()
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if !json.Valid([]byte(line)) {
			t.Fatalf("log line is not JSON: %q", line)
		}
	}
	for _, want := range []string{`"msg":"took ownership of control topic"`, `"msg":"left consumer group"`, `"msg":"worker stopped"`} {
		if !strings.Contains(log, want) {
			t.Fatalf("log lacks %s:\n%s", want, log)
		}
	}
}

// listeningURL finds the address the worker logged as "http listening".
func listeningURL(log string) string {
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var line struct{ Msg, Addr string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "http listening" {
			return "http://" + line.Addr
		}
	}
	return ""
}

func ready(url string) bool {
	resp, err := http.Get(url + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
