package main

// Issue 32 item 4: a real Flink job in the loop. internal/flinkjob's Flink 2.2 job writes
// action-state records to the real broker and recovery markers into checkpoints that Flink
// itself subsumes; a kcleanup worker follows the retention policy watching them.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/protocol"
)

const flinkJobPartitions = 4

// TestFlinkJobInTheLoop proves, against a real Flink job and the real broker, that the owner
// following the policy raises the log starts as Flink subsumes checkpoints, never above what an
// existing checkpoint or savepoint needs (sampled throughout); that a kept savepoint holds the
// boundary until deleted; that a worker killed the moment it commits a plan is replaced and the
// replacement goes on the same way; that validate
// refuses a copy of a subsumed checkpoint; and that the job restored from its oldest retained
// checkpoint finds every record it reads on recovery.
func TestFlinkJobInTheLoop(t *testing.T) {
	e := opTestEnv(t)
	topic := kafkatest.NewTopic(t, e.cl, "flinkjob", flinkJobPartitions, opGoodDataConfigs())
	t.Cleanup(func() { e.deleteTopic(t, protocol.ControlTopicFor(topic)) })
	e.initControlTopic(t, topic)
	dir := t.TempDir()
	chk, sp, copies := filepath.Join(dir, "checkpoints"), filepath.Join(dir, "savepoints"), filepath.Join(dir, "copies")
	for _, d := range []string{chk, sp, copies} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := &flinkSampler{e: e, topic: topic, at: localPoints{chk, sp}, root: dir}

	job := startFlinkJob(t, e, topic, chk)
	job.expect(t, "running ", 3*time.Minute) // the first run may build the job with Maven
	if code, out, errOut := e.run(t, "retention", "set", "--topic", topic, "--watch", chk, "--watch", sp,
		"--every", "1s", "--reason", "flink job in the loop"); code != 0 {
		t.Fatalf("retention set: exit %d\n%s%s", code, out, errOut)
	}
	w := startFollowingWorker(t, e, protocol.ControlTopicFor(topic), dir)

	// A checkpoint retained now and subsumed later: its copy, outside the watched locations, is
	// what a careless operator might restore from. The newest, so that Flink does not subsume it
	// while it is copied; the markers are read from the copy, so a copy missing a file fails here.
	points := s.points(t)
	first := points[len(points)-1]
	copied := filepath.Join(copies, filepath.Base(first))
	if err := os.MkdirAll(copied, 0o755); err != nil {
		t.Fatal(err)
	}
	copyDir(t, first, copied)
	firstMin := s.minimum(t, copied)

	// The worker dies (SIGKILL) the moment it logs a committed plan, its deletion perhaps still
	// to run; a replacement takes over and finishes it.
	kafkatest.Eventually(t, 60*time.Second, "the worker commits a retention plan", func() bool {
		s.sample(t)
		return strings.Contains(w.stderr.String(), "retention round committed a plan")
	})
	w.kill(t)
	s.during(t, time.Second)
	w = startFollowingWorker(t, e, protocol.ControlTopicFor(topic), dir)

	s.until(t, 90*time.Second, "the log starts rise above the copied checkpoint "+first, func(starts events.Offsets) bool {
		return allAbove(starts, firstMin)
	})

	// A savepoint, kept: the boundary stops at it while the job's checkpoints move on.
	savepoint := strings.TrimPrefix(strings.TrimPrefix(job.command(t, "savepoint "+sp, "savepoint "), "savepoint "), "file:")
	spMin := s.minimum(t, savepoint)
	s.until(t, 60*time.Second, "every retained checkpoint is past the savepoint on every partition", func(events.Offsets) bool {
		for _, p := range s.points(t) {
			if p != savepoint && !allAbove(s.minimum(t, p), spMin) {
				return false
			}
		}
		return true
	})
	s.during(t, 4*time.Second) // rounds pass; the invariant keeps the log starts at or below the savepoint

	// Killed again while the savepoint holds the boundary; the replacement follows its deletion.
	w.kill(t)
	s.during(t, time.Second)
	startFollowingWorker(t, e, protocol.ControlTopicFor(topic), dir)
	if err := os.RemoveAll(savepoint); err != nil {
		t.Fatal(err)
	}
	s.until(t, 90*time.Second, "the log starts rise above the deleted savepoint", func(starts events.Offsets) bool {
		return allAbove(starts, spMin)
	})

	code, out, errOut := e.run(t, "validate", "--checkpoint", copied)
	if code != exitRefused {
		t.Errorf("validate --checkpoint %s (a copy of subsumed %s, below the log starts): exit %d, want %d (refused)\n%s%s",
			copied, first, code, exitRefused, out, errOut)
	}

	// Restored from its oldest retained checkpoint, the job finds every record it reads.
	job.command(t, "stop", "stopped")
	s.during(t, 3*time.Second)
	oldest := s.points(t)[0]
	restored := startFlinkJob(t, e, topic, chk, "--restore", oldest)
	checks := restored.until(t, "running ", 3*time.Minute)
	var ok int
	for _, l := range checks {
		if strings.HasPrefix(l, "restore-check ok ") {
			ok++
		} else if strings.HasPrefix(l, "restore-check ") {
			t.Errorf("restored from %s: %s", oldest, l)
		}
	}
	if want := 2 * flinkJobPartitions; ok != want { // two writer subtasks, every partition
		t.Errorf("restored from %s: %d restore-check ok lines, want %d:\n%s", oldest, ok, want, strings.Join(checks, "\n"))
	}
	restored.command(t, "stop", "stopped")
	t.Logf("%d samples; log starts %v; boundary held by savepoint at %v", s.samples, s.last, spMin)
}

// flinkSampler checks, at every sample, that no log start is above the minimum of the markers of
// any checkpoint or savepoint that existed throughout the sample.
type flinkSampler struct {
	e       *opEnv
	topic   string
	at      pointStore // where the job's checkpoints and savepoints are
	root    string     // the workers' --checkpoint-root, for retention show
	samples int
	last    events.Offsets
}

// pointStore lists the complete checkpoints and savepoints (a directory holding _metadata) of
// the watched locations, read on its own, not through kcleanup's lister.
type pointStore interface {
	list(t *testing.T) []string
	// has says whether point's _metadata still exists.
	has(t *testing.T, point string) bool
}

// localPoints are checkpoint base and savepoint directories on the local filesystem.
type localPoints []string

func (l localPoints) list(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, root := range l {
		for _, pattern := range []string{"*/chk-*/_metadata", "savepoint-*/_metadata"} {
			m, err := filepath.Glob(filepath.Join(root, pattern))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range m {
				out = append(out, filepath.Dir(f))
			}
		}
	}
	return out
}

func (l localPoints) has(t *testing.T, point string) bool {
	_, err := os.Stat(filepath.Join(point, "_metadata"))
	return !os.IsNotExist(err)
}

// points lists the complete checkpoints and savepoints sorted by age: chk-N by N, savepoints
// after them.
func (s *flinkSampler) points(t *testing.T) []string {
	t.Helper()
	out := s.at.list(t)
	sort.SliceStable(out, func(i, j int) bool { return chkNumber(out[i]) < chkNumber(out[j]) })
	return out
}

func chkNumber(path string) int {
	var n int
	if _, err := fmt.Sscanf(filepath.Base(path), "chk-%d", &n); err != nil {
		return 1 << 30
	}
	return n
}

// minimum reads a point's markers with kcleanup markers and returns their per-partition
// minimum; ok false when the point vanished meanwhile (Flink subsumed it).
func (s *flinkSampler) minimumOK(t *testing.T, path string) (events.Offsets, bool) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		code, out, errOut := runCLI(t, "markers", "--checkpoint", path, "-o", "json")
		if code == 0 {
			var ms []struct{ Offsets map[int32]int64 }
			if err := json.Unmarshal([]byte(out), &ms); err != nil {
				t.Fatalf("markers of %s: %v\n%s", path, err, out)
			}
			min := events.Offsets{}
			for _, m := range ms {
				for p, o := range m.Offsets {
					if cur, ok := min[p]; !ok || o < cur {
						min[p] = o
					}
				}
			}
			if len(min) != flinkJobPartitions {
				t.Fatalf("markers of %s cover %d partitions, want %d: %s", path, len(min), flinkJobPartitions, out)
			}
			return min, true
		}
		if !s.at.has(t, path) {
			return nil, false
		}
		if attempt == 3 { // not a _metadata still being written
			t.Fatalf("kcleanup markers --checkpoint %s: exit %d\n%s", path, code, errOut)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *flinkSampler) minimum(t *testing.T, path string) events.Offsets {
	t.Helper()
	m, ok := s.minimumOK(t, path)
	if !ok {
		t.Fatalf("%s vanished", path)
	}
	return m
}

// sample reads the points, then the log starts, then lists the points again: every point listed
// both times existed when the log starts were read, and none may be below them.
func (s *flinkSampler) sample(t *testing.T) events.Offsets {
	t.Helper()
	mins := map[string]events.Offsets{}
	for _, p := range s.points(t) {
		if m, ok := s.minimumOK(t, p); ok {
			mins[p] = m
		}
	}
	starts := s.e.logStarts(t, s.topic)
	for _, p := range s.points(t) {
		m, ok := mins[p]
		if !ok {
			continue
		}
		for part, off := range m {
			if starts[part] > off {
				t.Fatalf("log start of %s-%d is %d, above %d that existing %s needs", s.topic, part, starts[part], off, p)
			}
		}
	}
	s.samples++
	s.last = starts
	return starts
}

// until samples every 300 ms until cond holds on the log starts.
func (s *flinkSampler) until(t *testing.T, within time.Duration, what string, cond func(events.Offsets) bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond(s.sample(t)) {
		if time.Now().After(deadline) {
			_, show, showErr := s.e.run(t, "retention", "show", "--topic", s.topic, "--checkpoint-root", s.root)
			t.Fatalf("not within %v: %s (log starts %v)\nretention show:\n%s%s", within, what, s.last, show, showErr)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// during samples every 300 ms for d.
func (s *flinkSampler) during(t *testing.T, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		s.sample(t)
	}
}

func allAbove(starts, min events.Offsets) bool {
	for p, o := range min {
		if starts[p] <= o {
			return false
		}
	}
	return true
}

// startFollowingWorker starts a worker with the test directory as its checkpoint root and waits
// until it owns ctl.
func startFollowingWorker(t *testing.T, e *opEnv, ctl, root string) *workerProcess {
	t.Helper()
	p := &workerProcess{stderr: &lockedBuffer{}}
	p.cmd = exec.Command(opTestBinary(t), "worker", "-b", e.bootstrap, "--control-topic", ctl,
		"--http-addr", "127.0.0.1:0", "--log-format", "json", "--checkpoint-root", root)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Signal(syscall.SIGKILL); _ = p.cmd.Wait() })
	kafkatest.Eventually(t, 60*time.Second, "the worker owns "+ctl, func() bool {
		url := listeningURL(p.stderr.String())
		return url != "" && ready(url) && strings.Contains(p.stderr.String(), "took ownership of control topic")
	})
	return p
}

// flinkJobProcess is internal/flinkjob's job, driven on stdin, its stdout lines on a channel.
type flinkJobProcess struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *lockedBuffer
}

// startFlinkJob runs internal/flinkjob/run.sh, which builds the job with Maven (jars cached in
// ~/.cache/kcleanup and ~/.m2) and runs it on a MiniCluster.
func startFlinkJob(t *testing.T, e *opEnv, topic, checkpoints string, extra ...string) *flinkJobProcess {
	t.Helper()
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to run the Flink job of internal/flinkjob (Java 17+ and Maven: apt-get install openjdk-17-jdk-headless maven)", tool)
		}
	}
	args := append([]string{"--bootstrap", e.bootstrap, "--topic", topic, "--checkpoints", checkpoints, "--rate", "200"}, extra...)
	j := &flinkJobProcess{cmd: exec.Command("../../internal/flinkjob/run.sh", args...), lines: make(chan string, 4096), stderr: &lockedBuffer{}}
	j.cmd.Stderr = j.stderr
	var err error
	if j.stdin, err = j.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := j.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			j.lines <- sc.Text()
		}
		close(j.lines)
	}()
	t.Cleanup(func() {
		_ = j.stdin.Close() // end of stdin stops the job
		done := make(chan struct{})
		go func() { _ = j.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = j.cmd.Process.Kill()
			<-done
		}
	})
	return j
}

// until returns every stdout line up to and including the first starting with prefix.
func (j *flinkJobProcess) until(t *testing.T, prefix string, within time.Duration) []string {
	t.Helper()
	var seen []string
	timeout := time.After(within)
	for {
		select {
		case l, ok := <-j.lines:
			if !ok {
				t.Fatalf("the Flink job ended before %q; stdout:\n%s\nstderr (tail):\n%s", prefix, strings.Join(seen, "\n"), tail(j.stderr.String(), 40))
			}
			seen = append(seen, l)
			if strings.HasPrefix(l, prefix) {
				return seen
			}
		case <-timeout:
			t.Fatalf("no %q from the Flink job within %v; stdout:\n%s\nstderr (tail):\n%s", prefix, within, strings.Join(seen, "\n"), tail(j.stderr.String(), 40))
		}
	}
}

func (j *flinkJobProcess) expect(t *testing.T, prefix string, within time.Duration) string {
	t.Helper()
	seen := j.until(t, prefix, within)
	return seen[len(seen)-1]
}

// command sends one command and returns its answer.
func (j *flinkJobProcess) command(t *testing.T, cmd, answer string) string {
	t.Helper()
	if _, err := io.WriteString(j.stdin, cmd+"\n"); err != nil {
		t.Fatalf("to the Flink job: %v", err)
	}
	return j.expect(t, answer, 60*time.Second)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
