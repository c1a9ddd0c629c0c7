package workertest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is one running kcleanup process of a test (`kcleanup worker`, or `kcleanup apply`
// armed with a failpoint): its output, read line by line, and how it ended.
type Process struct {
	Name string
	Cmd  *exec.Cmd
	URL  string // the worker's HTTP API (http://host:port), once ServeHTTP saw it listen

	mu     sync.Mutex
	lines  []string // stdout and stderr: a worker's JSON log lines
	done   chan struct{}
	state  *os.ProcessState
	diedAt time.Time
}

// LogLine is the part of a worker's JSON log line the tests read.
type LogLine struct {
	Time         time.Time `json:"time"`
	Level        string    `json:"level"`
	Msg          string    `json:"msg"`
	Addr         string    `json:"addr"`
	Plan         string    `json:"plan"`
	Step         string    `json:"step"`
	ControlTopic string    `json:"control_topic"`
	Err          string    `json:"err"`
	Served       int       `json:"served"`
}

// StartProcess starts `kcleanup ARGS` (Binary) with CleanEnv(env...) and collects its output.
// When the test ends it is killed (resumed first: a stopped process cannot die) and, if the
// test failed, the last 80 lines of its output are logged.
func StartProcess(t testing.TB, name string, args []string, env ...string) *Process {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	cmd.Env = CleanEnv(env...)
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr // one pipe, so apply's report and a worker's log read alike
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{Name: name, Cmd: cmd, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<16), 1<<22)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
		}
		_ = cmd.Wait()
		p.mu.Lock()
		p.state, p.diedAt = cmd.ProcessState, time.Now()
		p.mu.Unlock()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("log of %s (last 80 lines):\n%s", p.Name, p.Tail(80))
		}
	})
	return p
}

// StartWorker starts `kcleanup worker ARGS --http-addr 127.0.0.1:0 --log-format json` and
// returns once it serves HTTP (within a minute), its URL set.
func StartWorker(t testing.TB, name string, args []string, env ...string) *Process {
	t.Helper()
	args = append(append([]string{"worker"}, args...), "--http-addr", "127.0.0.1:0", "--log-format", "json")
	p := StartProcess(t, name, args, env...)
	l := p.WaitLog(t, time.Minute, func(l LogLine) bool { return l.Msg == "http listening" })
	p.URL = "http://" + l.Addr
	return p
}

// LogLines is the process's output so far, the lines that are JSON log lines.
func (p *Process) LogLines() []LogLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]LogLine, 0, len(p.lines))
	for _, s := range p.lines {
		var l LogLine
		if json.Unmarshal([]byte(s), &l) == nil {
			out = append(out, l)
		}
	}
	return out
}

// FindLog returns the first log line so far that matches.
func (p *Process) FindLog(match func(LogLine) bool) (LogLine, bool) {
	for _, l := range p.LogLines() {
		if match(l) {
			return l, true
		}
	}
	return LogLine{}, false
}

// WaitLog waits for a log line that matches; the test fails if the process exits or the time
// runs out first.
func (p *Process) WaitLog(t testing.TB, within time.Duration, match func(LogLine) bool) LogLine {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if l, ok := p.FindLog(match); ok {
			return l
		}
		if p.Exited() {
			if l, ok := p.FindLog(match); ok { // logged just before it exited
				return l
			}
			t.Fatalf("%s exited (%v) before logging what the test waits for", p.Name, p.ExitState())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not log what the test waits for within %s", p.Name, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Tail is the last n lines of the output.
func (p *Process) Tail(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines[max(len(p.lines)-n, 0):], "\n")
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExitState is how the process ended (nil while it runs).
func (p *Process) ExitState() *os.ProcessState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// WaitDeath waits for the process to exit and returns how and when it did.
func (p *Process) WaitDeath(t testing.TB, within time.Duration) (*os.ProcessState, time.Time) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("%s still runs after %s", p.Name, within)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state, p.diedAt
}

// Terminate sends SIGTERM and wants exit status 0 after a logged clean stop.
func (p *Process) Terminate(t testing.TB) {
	t.Helper()
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	st, _ := p.WaitDeath(t, 30*time.Second)
	if !st.Success() {
		t.Fatalf("%s exited with %v after SIGTERM, want 0", p.Name, st)
	}
	if _, ok := p.FindLog(func(l LogLine) bool { return l.Msg == "worker stopped" }); !ok {
		t.Fatalf("%s exited without logging a clean stop", p.Name)
	}
}

// KilledBySIGKILL reports whether a process ended by SIGKILL (a failpoint's own hand).
func KilledBySIGKILL(st *os.ProcessState) bool {
	ws, ok := st.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// Get asks the worker's HTTP API for path and decodes the JSON answer into into (nil: not
// decoded); code 0 when it did not answer.
func (p *Process) Get(path string, into any) (int, error) {
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(p.URL + path)
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
