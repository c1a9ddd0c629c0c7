package limits_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/topicconfig"
)

func TestMain(m *testing.M) {
	code := m.Run()
	workertest.RemoveBinary()
	os.Exit(code)
}

// fleet is a data topic governed by a control topic `kcleanup init` made, and idle control
// topics beside it, all matched by one regular expression.
type fleet struct {
	*workertest.Replicated
	prefix string
	regex  string
	idle   []string
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	k := kafkatest.NewCluster(t)
	prefix := kafkatest.UniqueName("limits")
	f := &fleet{Replicated: workertest.NewReplicated(t, k, prefix+"-data"), prefix: prefix}
	f.regex = "^" + regexp.QuoteMeta(f.prefix) + `-.*\.kcleanup$`
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for from := 0; from < len(f.idle); from += 500 {
			_, _ = f.Adm.DeleteTopics(ctx, f.idle[from:min(from+500, len(f.idle))]...)
		}
	})
	f.Init()
	return f
}

// addIdle creates n idle control topics (one partition, one replica: cheap) that the regex
// matches.
func (f *fleet) addIdle(n int) {
	f.T.Helper()
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
		resp, err := f.Adm.CreateTopics(ctx, 1, 1, configs, batch...)
		if err != nil {
			f.T.Fatal(err)
		}
		f.idle = append(f.idle, batch...)
		if err := resp.Error(); err != nil {
			f.T.Fatal(err)
		}
	}
	f.T.Logf("created %d idle control topics in %s", n, time.Since(start).Round(time.Millisecond))
}

// proc is one `kcleanup worker` process.
type proc struct{ *workertest.Process }

// startWorker starts a worker serving the fleet's regex; env adds variables (GOMEMLIMIT).
func (f *fleet) startWorker(name string, env ...string) *proc {
	f.T.Helper()
	return f.startWorkerVia(name, f.K.Bootstrap, env...)
}

// startWorkerVia starts a worker whose every connection goes to bootstrap (a proxied link's).
func (f *fleet) startWorkerVia(name, bootstrap string, env ...string) *proc {
	f.T.Helper()
	return &proc{workertest.StartWorker(f.T, name, []string{"-b", bootstrap, "--control-topic-regex", f.regex,
		"--discovery-interval", "1s", "--group", "kcleanup-" + f.prefix, "--replica-name", name}, env...)}
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
	code, err := p.Get("/readyz", &r)
	return r, code, err
}

// fds counts the process's open file descriptors.
func (p *proc) fds() int {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.Cmd.Process.Pid))
	if err != nil {
		return -1
	}
	return len(es)
}

// rss is the process's resident set in MB.
func (p *proc) rss() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Cmd.Process.Pid))
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
	if err := unix.Prlimit(p.Cmd.Process.Pid, unix.RLIMIT_NOFILE, nil, &old); err != nil {
		t.Fatal(err)
	}
	if err := unix.Prlimit(p.Cmd.Process.Pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: soft, Max: old.Max}, nil); err != nil {
		t.Fatal(err)
	}
}

// hardNofile is the process's hard RLIMIT_NOFILE.
func (p *proc) hardNofile(t *testing.T) uint64 {
	var old unix.Rlimit
	if err := unix.Prlimit(p.Cmd.Process.Pid, unix.RLIMIT_NOFILE, nil, &old); err != nil {
		t.Fatal(err)
	}
	return old.Max
}
