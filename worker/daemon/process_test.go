package daemon_test

// Integration tests of the worker fleet: real Apache Kafka broker
// (kafkatest.Bootstrap), real `kcleanup worker` processes, crashes by
// failpoint (SIGKILL), pauses by SIGSTOP. Each scenario ends with the
// invariant checker. Skipped under -short.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector/invariant"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/topicconfig"
	"github.com/kcleanup/kcleanup/worker"
	"github.com/kcleanup/kcleanup/worker/daemon"
)

func TestMain(m *testing.M) {
	code := m.Run()
	workertest.RemoveBinary()
	kafkatest.Cleanup()
	os.Exit(code)
}

// scene is one scenario's broker, topics and consumer group.
type scene struct {
	t         *testing.T
	bootstrap string
	c         *worker.Cluster
	topic     string // data topic: 2 partitions of 300 records
	id        string
	ctl       string
	group     string
}

func newScene(t *testing.T) *scene {
	t.Helper()
	bootstrap := kafkatest.Bootstrap(t)
	cl := kafkatest.Client(t, bootstrap)
	s := &scene{t: t, bootstrap: bootstrap}
	s.topic = kafkatest.NewTopic(t, cl, "action-state", 2, map[string]string{
		"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1",
	})
	for p := int32(0); p < 2; p++ {
		kafkatest.Produce(t, cl, s.topic, p, 300)
	}
	s.ctl = kafkatest.NewTopic(t, cl, s.topic+".kcleanup", 1, topicconfig.CreateSettings())
	s.group = "kcleanup-test-" + randomHex()
	c := workertest.Connect(t, bootstrap)
	s.c = c
	info, err := c.TopicMetadata(context.Background(), s.topic)
	if err != nil {
		t.Fatal(err)
	}
	s.id = info.ID
	return s
}

func randomHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *scene) plan(rp string, offs events.Offsets) events.Plan {
	s.t.Helper()
	return workertest.MustPlan(s.t, rp, s.topic, s.id, offs)
}

// commit runs `kcleanup apply PLAN --no-wait`: check, PLANNED, COMMITTED,
// and return, leaving the rest to the workers.
func (s *scene) commit(p events.Plan) {
	s.t.Helper()
	cmd := s.applyCmd(p, "--no-wait")
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("kcleanup apply --no-wait: %v\n%s", err, out)
	}
	if st := s.state(p.PlanID); st != fsm.Committed && st != fsm.Deleting && st != fsm.Applied {
		s.t.Fatalf("apply --no-wait left %s", st)
	}
}

// applyCmd is `kcleanup apply` of a plan, written to a file, on the scene's
// control topic.
func (s *scene) applyCmd(p events.Plan, args ...string) *exec.Cmd {
	s.t.Helper()
	cmd := exec.Command(workertest.Binary(s.t), append(s.applyArgs(p), args...)...)
	cmd.Env = workertest.CleanEnv()
	return cmd
}

// applyArgs are the arguments of `kcleanup apply` of a plan, written to a
// file, on the scene's control topic.
func (s *scene) applyArgs(p events.Plan) []string {
	s.t.Helper()
	file := filepath.Join(s.t.TempDir(), p.PlanID+".plan.json")
	if err := os.WriteFile(file, p.Encode(), 0o600); err != nil {
		s.t.Fatal(err)
	}
	return []string{"apply", file, "-b", s.bootstrap, "--control-topic", s.ctl}
}

// state reads the control topic afresh: a plan's state.
func (s *scene) state(planID string) fsm.State {
	s.t.Helper()
	st, _ := workertest.Operation(s.t, s.c, s.ctl, planID)
	return st
}

// waitApplied polls until the plan is APPLIED and returns when it saw it.
func (s *scene) waitApplied(planID string, within time.Duration) time.Time {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for s.state(planID) != fsm.Applied {
		if time.Now().After(deadline) {
			s.t.Fatalf("plan %s not APPLIED within %s (state %s)", planID, within, s.state(planID))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Now()
}

func (s *scene) check(opts ...invariant.Option) {
	s.t.Helper()
	workertest.RequireInvariants(s.t, s.c, s.ctl, append([]invariant.Option{invariant.InitialLogStart(events.Offsets{0: 0, 1: 0})}, opts...)...)
}

// proc is one `kcleanup worker` (or failpoint-armed `kcleanup apply`) process of a scene.
type proc struct{ *workertest.Process }

// startWorker starts a worker process with the default timings; env adds
// variables (a failpoint). It returns once the process serves HTTP.
func (s *scene) startWorker(name string, env ...string) *proc {
	s.t.Helper()
	return s.startWorkerServing(name, []string{"--control-topic", s.ctl}, env...)
}

// startWorkerServing is startWorker with the flags that say which control
// topics it serves.
func (s *scene) startWorkerServing(name string, serve []string, env ...string) *proc {
	s.t.Helper()
	args := append([]string{"-b", s.bootstrap}, serve...)
	return &proc{workertest.StartWorker(s.t, name, append(args, "--group", s.group), env...)}
}

// owns asks the process whether it owns the control topic.
func (p *proc) owns(ctl string) bool {
	if p.Exited() {
		return false
	}
	resp, err := http.Get(p.URL + "/v1/status?controlTopic=" + ctl)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var st report.TopicStatus
	if json.NewDecoder(resp.Body).Decode(&st) != nil {
		return false
	}
	return st.Owned
}

func (p *proc) ready() bool {
	resp, err := http.Get(p.URL + "/readyz")
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// owner returns the one process that owns the control topic, waiting for
// ownership to settle.
func (s *scene) owner(ps ...*proc) *proc {
	s.t.Helper()
	var who *proc
	kafkatest.Eventually(s.t, 30*time.Second, "exactly one owner", func() bool {
		n := 0
		for _, p := range ps {
			if p.owns(s.ctl) {
				n, who = n+1, p
			}
		}
		return n == 1
	})
	return who
}

func (s *scene) checkLogStart(want events.Offsets) {
	s.t.Helper()
	start, err := s.c.StartOffsets(context.Background(), s.topic)
	if err != nil {
		s.t.Fatal(err)
	}
	if !start.Equal(want) {
		s.t.Fatalf("log start %v, want %v", start, want)
	}
}

// TestWorkerDiesAtEachStepAndASurvivorFinishes: for each failpoint, the
// process executing the operation dies exactly there (SIGKILL, by its own
// hand), and one of the two other replicas finishes the operation.
func TestWorkerDiesAtEachStepAndASurvivorFinishes(t *testing.T) {
	for _, step := range []string{worker.AfterCommitted, worker.AfterDeleting, worker.AfterDeleteRecords} {
		t.Run(step, func(t *testing.T) {
			s := newScene(t)
			plan := s.plan("C1", events.Offsets{0: 150, 1: 120})
			var victim *proc
			var survivors []*proc
			if step == worker.AfterCommitted {
				// Only apply passes this step: the apply process dies right after
				// its COMMITTED was accepted, while three workers run.
				survivors = []*proc{s.startWorker("w1"), s.startWorker("w2"), s.startWorker("w3")}
				s.owner(survivors...)
				victim = s.startApply(plan, step)
			} else {
				// The armed worker starts alone, so it owns the control topic;
				// the others join later and the group keeps it there (sticky).
				victim = s.startWorker("armed", worker.FailpointEnv+"="+step)
				kafkatest.Eventually(t, 30*time.Second, "the armed worker owns the control topic", func() bool { return victim.owns(s.ctl) })
				survivors = []*proc{s.startWorker("w2"), s.startWorker("w3")}
				kafkatest.Eventually(t, 30*time.Second, "survivors ready", func() bool { return survivors[0].ready() && survivors[1].ready() })
				if who := s.owner(append(survivors, victim)...); who != victim {
					t.Fatalf("ownership moved to %s before the test began", who.Name)
				}
				s.commit(plan)
			}
			st, diedAt := victim.WaitDeath(t, time.Minute)
			if !workertest.KilledBySIGKILL(st) {
				t.Fatalf("%s exited with %v, want death by SIGKILL at %s", victim.Name, st, step)
			}
			appliedAt := s.waitApplied(plan.PlanID, time.Minute)
			t.Logf("failpoint %s: %s died; APPLIED %s later", step, victim.Name, appliedAt.Sub(diedAt).Round(10*time.Millisecond))
			for _, p := range survivors {
				if l, ok := p.FindLog(func(l workertest.LogLine) bool {
					return l.Msg == "took ownership of control topic" && l.Time.After(diedAt)
				}); ok {
					t.Logf("failpoint %s: %s took over %s after the death", step, p.Name, l.Time.Sub(diedAt).Round(10*time.Millisecond))
				}
			}
			s.checkLogStart(events.Offsets{0: 150, 1: 120})
			for _, p := range survivors {
				p.Terminate(t)
			}
			s.check(invariant.WantAllApplied())
		})
	}
}

// startApply starts `kcleanup apply PLAN` armed with the failpoint step.
func (s *scene) startApply(plan events.Plan, step string) *proc {
	s.t.Helper()
	return &proc{workertest.StartProcess(s.t, "apply", s.applyArgs(plan), worker.FailpointEnv+"="+step)}
}

// TestApplyNoWaitWithoutWorkersThenOneWorkerFinishes: with no worker
// running a committed operation stays COMMITTED; one worker finishes it.
func TestApplyNoWaitWithoutWorkersThenOneWorkerFinishes(t *testing.T) {
	s := newScene(t)
	plan := s.plan("C1", events.Offsets{0: 200, 1: 100})
	s.commit(plan)
	// Nothing else runs, so nothing can move it: one look is enough.
	if st := s.state(plan.PlanID); st != fsm.Committed {
		t.Fatalf("state %s without a worker, want COMMITTED", st)
	}
	s.checkLogStart(events.Offsets{0: 0, 1: 0})
	s.check() // I1 holds before the deletion too; I3 is not asked yet
	started := time.Now()
	w := s.startWorker("w1")
	appliedAt := s.waitApplied(plan.PlanID, time.Minute)
	t.Logf("one worker started: APPLIED %s after its start", appliedAt.Sub(started).Round(10*time.Millisecond))
	s.checkLogStart(events.Offsets{0: 200, 1: 100})
	w.Terminate(t)
	s.check(invariant.WantAllApplied())
}

// TestPausedOwnerDoesNoHarm: an owner frozen (SIGSTOP, by its own
// failpoint) in the middle of an operation loses the control topic after the
// session timeout; another replica finishes that operation and a newer one
// that raises the boundary; the old owner, resumed (SIGCONT), carries on with
// its stale step for a moment and learns it lost the group. Nothing is
// deleted beyond the boundary, no state regresses, and every transition is
// accepted once.
func TestPausedOwnerDoesNoHarm(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("detects the frozen process through /proc")
	}
	for _, step := range []string{worker.AfterDeleting, worker.AfterDeleteRecords} {
		t.Run(step, func(t *testing.T) { pausedOwner(t, step) })
	}
}

func pausedOwner(t *testing.T, step string) {
	s := newScene(t)
	a := s.startWorker("a", worker.FailpointEnv+"="+step+worker.FailpointStop)
	kafkatest.Eventually(t, 30*time.Second, "a owns the control topic", func() bool { return a.owns(s.ctl) })
	b, c := s.startWorker("b"), s.startWorker("c")
	kafkatest.Eventually(t, 30*time.Second, "b and c ready", func() bool { return b.ready() && c.ready() })
	if who := s.owner(a, b, c); who != a {
		t.Fatalf("ownership moved to %s before the test began", who.Name)
	}

	p1 := s.plan("C1", events.Offsets{0: 100, 1: 100})
	s.commit(p1)
	kafkatest.Eventually(t, 30*time.Second, "a stops itself at "+step, func() bool { return stopped(a.Cmd.Process.Pid) })
	pausedAt := time.Now()

	// While a is frozen, a newer plan raises the boundary; b or c takes over
	// and finishes both.
	p2 := s.plan("C2", events.Offsets{0: 250, 1: 180})
	s.commit(p2)
	appliedAt := s.waitApplied(p1.PlanID, time.Minute)
	s.waitApplied(p2.PlanID, time.Minute)
	t.Logf("owner frozen at %s; its operation APPLIED by a survivor %s later", step, appliedAt.Sub(pausedAt).Round(10*time.Millisecond))
	s.owner(b, c)
	s.checkLogStart(events.Offsets{0: 250, 1: 180})

	// a wakes up inside its stale step: whatever it does must be harmless.
	resumedAt := time.Now()
	if err := a.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	a.WaitLog(t, 30*time.Second, func(l workertest.LogLine) bool {
		return l.Plan == p1.PlanID && (l.Msg == "operation applied" || strings.HasPrefix(l.Msg, "step in flight abandoned") ||
			strings.HasPrefix(l.Msg, "operation attempt failed") || strings.HasPrefix(l.Msg, "operation blocked"))
	})
	a.WaitLog(t, 30*time.Second, func(l workertest.LogLine) bool { return l.Msg == "released control topic" })
	kafkatest.Eventually(t, 30*time.Second, "a no longer owns the control topic", func() bool { return !a.owns(s.ctl) })
	for _, l := range a.LogLines() {
		if l.Time.After(resumedAt) {
			t.Logf("a after SIGCONT: %s %q step=%s err=%s", l.Level, l.Msg, l.Step, l.Err)
		}
	}
	s.checkLogStart(events.Offsets{0: 250, 1: 180})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	proj, err := s.c.Project(ctx, s.ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	if b := proj.State.Boundary(); !b.Equal(events.Offsets{0: 250, 1: 180}) {
		t.Fatalf("boundary %v, want 0:250 1:180", b)
	}
	for _, op := range proj.State.Operations() {
		if op.State != fsm.Applied {
			t.Fatalf("plan %s is %s", op.PlanID, op.State)
		}
		seen := map[events.Event]int{}
		for _, st := range op.History {
			seen[st.Event]++
		}
		if seen[events.Planned] != 1 || seen[events.Committed] != 1 || seen[events.Applied] != 1 {
			t.Fatalf("plan %s history %v: a transition was accepted twice", op.PlanID, op.History)
		}
	}
	for _, v := range proj.State.Rejected() {
		t.Logf("rejected at offset %d: %s %s: %s", v.Offset, v.Key, v.Reason, v.Detail)
	}
	for _, p := range []*proc{a, b, c} {
		p.Terminate(t)
	}
	s.check(invariant.WantAllApplied())
}

// stopped reports whether a process is stopped (state T in /proc/<pid>/stat).
func stopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'T'
}

// TestFailoverTime measures, with the default timings, how long an
// operation committed right after the owner died waits for a survivor to
// apply it. It is measured and logged, not asserted: it depends on the
// machine.
func TestFailoverTime(t *testing.T) {
	s := newScene(t)
	live := []*proc{s.startWorker("w1"), s.startWorker("w2"), s.startWorker("w3")}
	var took []time.Duration
	for round := 1; round <= 3; round++ {
		victim := s.owner(live...)
		live = slices.DeleteFunc(live, func(p *proc) bool { return p == victim })
		if err := victim.Cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_, diedAt := victim.WaitDeath(t, 30*time.Second)
		plan := s.plan(fmt.Sprintf("R%d", round), events.Offsets{0: int64(100 + round), 1: int64(100 + round)})
		s.commit(plan)
		d := s.waitApplied(plan.PlanID, time.Minute).Sub(diedAt)
		took = append(took, d)
		t.Logf("round %d: owner %s killed; APPLIED %s later", round, victim.Name, d.Round(10*time.Millisecond))
		live = append(live, s.startWorker(fmt.Sprintf("w%d", 3+round)))
	}
	slices.Sort(took)
	t.Logf("failover with session timeout %s, heartbeat %s: median %s (min %s, max %s)",
		daemon.DefaultSessionTimeout, daemon.DefaultHeartbeatInterval,
		took[len(took)/2].Round(10*time.Millisecond), took[0].Round(10*time.Millisecond), took[len(took)-1].Round(10*time.Millisecond))
	for _, p := range live {
		p.Terminate(t)
	}
	s.check(invariant.WantAllApplied())
}
