package limits_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector/invariant"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/topicconfig"
	"github.com/kcleanup/kcleanup/worker"
)

func TestMain(m *testing.M) {
	code := m.Run()
	workertest.RemoveBinary()
	os.Exit(code)
}

// fleet is a data topic governed by a control topic `kcleanup init` made, and idle control
// topics beside it, all matched by one regular expression.
type fleet struct {
	t      *testing.T
	k      *kafkatest.Cluster
	cl     *kgo.Client
	adm    *kadm.Client
	c      *worker.Cluster
	prefix string
	regex  string
	topic  string // one partition of 300 records, three replicas
	id     string
	ctl    string
	idle   []string
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	k := kafkatest.NewCluster(t)
	f := &fleet{t: t, k: k, prefix: "limits-" + randomHex()}
	f.cl = kafkatest.Client(t, "", k.Seeds())
	f.adm = kafkatest.Admin(t, f.cl)
	f.regex = "^" + regexp.QuoteMeta(f.prefix) + `-.*\.kcleanup$`
	f.topic = f.prefix + "-data"
	kafkatest.CreateTopic(t, f.cl, f.topic, 1, map[string]string{
		"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1", "min.insync.replicas": "2",
	})
	kafkatest.Produce(t, f.cl, f.topic, 0, 300)
	f.ctl = protocol.ControlTopicFor(f.topic)
	c, err := worker.Connect(k.Seeds())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	f.c = c
	info, err := c.TopicMetadata(context.Background(), f.topic)
	if err != nil {
		t.Fatal(err)
	}
	f.id = info.ID
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, _ = f.adm.DeleteTopics(ctx, f.ctl)
		for from := 0; from < len(f.idle); from += 500 {
			_, _ = f.adm.DeleteTopics(ctx, f.idle[from:min(from+500, len(f.idle))]...)
		}
	})
	f.kcleanup("init", "--topic", f.topic)
	return f
}

func randomHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// kcleanup runs the CLI on the cluster and fails the test unless it exits 0.
func (f *fleet) kcleanup(args ...string) string {
	f.t.Helper()
	cmd := exec.Command(workertest.Binary(f.t), append(args, "-b", f.k.Bootstrap)...)
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		f.t.Fatalf("kcleanup %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func cleanEnv(extra ...string) []string {
	return append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "KCLEANUP_") || strings.HasPrefix(kv, "GOMEMLIMIT=") || strings.HasPrefix(kv, "GOGC=")
	}), extra...)
}

// addIdle creates n idle control topics (one partition, one replica: cheap) that the regex
// matches.
func (f *fleet) addIdle(n int) {
	f.t.Helper()
	cfg := topicconfig.CreateSettings()
	cfg["min.insync.replicas"] = "1"
	configs := map[string]*string{}
	for k, v := range cfg {
		configs[k] = &v
	}
	start := time.Now()
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("%s-idle-%04d.kcleanup", f.prefix, len(f.idle)+i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for from := 0; from < len(names); from += 250 {
		batch := names[from:min(from+250, len(names))]
		resp, err := f.adm.CreateTopics(ctx, 1, 1, configs, batch...)
		if err != nil {
			f.t.Fatal(err)
		}
		f.idle = append(f.idle, batch...)
		if err := resp.Error(); err != nil {
			f.t.Fatal(err)
		}
	}
	f.t.Logf("created %d idle control topics in %s", n, time.Since(start).Round(time.Millisecond))
}

// planFile writes a plan that deletes partition 0 below boundary and returns it and its file.
func (f *fleet) planFile(rp string, boundary int64) (events.Plan, string) {
	f.t.Helper()
	return workertest.PlanFile(f.t, rp, f.topic, f.id, events.Offsets{0: boundary})
}

// operation reads the control topic afresh: a plan's operation.
func (f *fleet) operation(planID string) (fsm.State, events.Offsets) {
	f.t.Helper()
	return workertest.Operation(f.t, f.c, f.ctl, planID)
}

func (f *fleet) check() {
	f.t.Helper()
	workertest.RequireInvariants(f.t, f.c, f.ctl, invariant.InitialLogStart(events.Offsets{0: 0}))
}

// proc is one `kcleanup worker` process.
type proc struct {
	name string
	cmd  *exec.Cmd
	url  string

	mu    sync.Mutex
	lines []string // stderr: JSON log lines
	done  chan struct{}
	state *os.ProcessState
}

// startWorker starts a worker serving the fleet's regex; env adds variables (GOMEMLIMIT).
func (f *fleet) startWorker(name string, env ...string) *proc {
	f.t.Helper()
	return f.startWorkerVia(name, f.k.Bootstrap, env...)
}

// startWorkerVia starts a worker whose every connection goes to bootstrap (a proxied link's).
func (f *fleet) startWorkerVia(name, bootstrap string, env ...string) *proc {
	f.t.Helper()
	cmd := exec.Command(workertest.Binary(f.t), "worker", "-b", bootstrap, "--control-topic-regex", f.regex,
		"--discovery-interval", "1s", "--group", "kcleanup-"+f.prefix, "--replica-name", name,
		"--http-addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = cleanEnv(env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<16), 1<<22)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
		}
		_ = cmd.Wait()
		p.mu.Lock()
		p.state = cmd.ProcessState
		p.mu.Unlock()
		close(p.done)
	}()
	f.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if f.t.Failed() {
			f.t.Logf("log of %s (last 80 lines):\n%s", p.name, p.tail(80))
		}
	})
	l := p.waitLog(f.t, time.Minute, func(l logLine) bool { return l.Msg == "http listening" })
	p.url = "http://" + l.Addr
	return p
}

// logLine is the part of a worker log line the tests read.
type logLine struct {
	Time         time.Time `json:"time"`
	Level        string    `json:"level"`
	Msg          string    `json:"msg"`
	Addr         string    `json:"addr"`
	ControlTopic string    `json:"control_topic"`
	Err          string    `json:"err"`
	Served       int       `json:"served"`
}

func (p *proc) logLines() []logLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]logLine, 0, len(p.lines))
	for _, s := range p.lines {
		var l logLine
		if json.Unmarshal([]byte(s), &l) == nil {
			out = append(out, l)
		}
	}
	return out
}

func (p *proc) waitLog(t *testing.T, within time.Duration, match func(logLine) bool) logLine {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		for _, l := range p.logLines() {
			if match(l) {
				return l
			}
		}
		if p.exited() {
			t.Fatalf("%s exited (%v) before logging what the test waits for", p.name, p.state)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not log what the test waits for within %s", p.name, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) tail(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines[max(len(p.lines)-n, 0):], "\n")
}

// get asks the worker's HTTP API; code 0 when it did not answer.
func (p *proc) get(path string, into any) (int, error) {
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(p.url + path)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			return resp.StatusCode, fmt.Errorf("%v: %s", err, b)
		}
	}
	return resp.StatusCode, nil
}

// readyz is the part of /readyz the tests read.
type readyz struct {
	Ready       bool              `json:"ready"`
	Reason      string            `json:"reason"`
	NotReady    map[string]string `json:"notReady"`
	Group       string            `json:"group"`
	Unowned     map[string]string `json:"unowned"`
	Descriptors string            `json:"descriptors"`
	Memory      string            `json:"memory"`
}

func (p *proc) ready() (readyz, int, error) {
	var r readyz
	code, err := p.get("/readyz", &r)
	return r, code, err
}

// fds counts the process's open file descriptors.
func (p *proc) fds() int {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	return len(es)
}

// rss is the process's resident set in MB.
func (p *proc) rss() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			var kb int64
			_, _ = fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb >> 10
		}
	}
	return -1
}

// setNofile sets the process's soft RLIMIT_NOFILE (the hard limit stays).
func (p *proc) setNofile(t *testing.T, soft uint64) {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Prlimit(p.cmd.Process.Pid, unix.RLIMIT_NOFILE, nil, &old); err != nil {
		t.Fatal(err)
	}
	if err := unix.Prlimit(p.cmd.Process.Pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: soft, Max: old.Max}, nil); err != nil {
		t.Fatal(err)
	}
}

// hardNofile is the process's hard RLIMIT_NOFILE.
func (p *proc) hardNofile(t *testing.T) uint64 {
	var old unix.Rlimit
	if err := unix.Prlimit(p.cmd.Process.Pid, unix.RLIMIT_NOFILE, nil, &old); err != nil {
		t.Fatal(err)
	}
	return old.Max
}
