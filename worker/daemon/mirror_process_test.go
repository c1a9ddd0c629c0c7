package daemon_test

// Crashes at every step, failover and concurrent applies with a Flink
// Agents mirror attached, on the real broker with real kcleanup processes.
// A watcher reads, over and over, the data topic's log starts and then the
// mirror as the job reads it (the oracle): the job's fold never fails, and
// no log start is ever above the job's boundary (nothing is deleted before
// the mirror shows a boundary at or above it).

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector/invariant"
	"github.com/kcleanup/kcleanup/worker"
)

// mirrorWatch observes the data topic and the mirror until stopped.
type mirrorWatch struct {
	stop, done   chan struct{}
	mu           sync.Mutex
	violations   []string
	observations int
	deletions    int // observations that saw a log start above 0
}

func (s *scene) watchMirror(mirror string) *mirrorWatch {
	w := &mirrorWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			w.observe(s, mirror)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	s.t.Cleanup(w.end)
	return w
}

// observe: the log starts first, then the mirror. A mirror write precedes
// every deletion it covers, and the mirror's boundary never falls, so a
// start seen above the boundary read after it is a deletion the mirror
// did not show first.
func (w *mirrorWatch) observe(s *scene, mirror string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	starts, err := s.c.StartOffsets(ctx, s.topic)
	if err != nil {
		return // the broker is busy; the next observation tells
	}
	v, err := readJob(s.bootstrap, mirror)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.observations++
	if v.err != nil {
		w.violations = append(w.violations, "the job cannot recover from the mirror: "+v.err.Error())
		return
	}
	b := map[int32]int64{}
	if len(v.order) > 0 {
		if b, err = v.boundary(); err != nil {
			w.violations = append(w.violations, "the job's boundary on the mirror: "+err.Error())
			return
		}
	}
	deleted := false
	for p, start := range starts {
		if start > 0 {
			deleted = true
		}
		if start > b[p] {
			w.violations = append(w.violations, fmt.Sprintf("%s-%d: log start %d is above the job's boundary %d on the mirror: deleted before the mirror showed it", s.topic, p, start, b[p]))
		}
	}
	if deleted {
		w.deletions++
	}
}

// end stops the watcher; require reports what it saw.
func (w *mirrorWatch) end() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

func (w *mirrorWatch) require(t *testing.T) {
	t.Helper()
	w.end()
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("mirror watcher: %d observations, %d after a deletion", w.observations, w.deletions)
	for _, v := range w.violations {
		t.Error(v)
	}
	if w.observations < 3 {
		t.Errorf("the watcher observed only %d times", w.observations)
	}
}

// TestMirrorWorkerDiesAtEachStepAndASurvivorFinishes is
// TestWorkerDiesAtEachStepAndASurvivorFinishes with a mirror attached and
// the mirror's own failpoints: whoever dies, a survivor finishes the
// operation, the mirror is never behind a deletion, and at the end the
// job's boundary on the mirror is kcleanup's.
func TestMirrorWorkerDiesAtEachStepAndASurvivorFinishes(t *testing.T) {
	for _, step := range []string{worker.AfterCommitted, worker.AfterMirrorCommitted, worker.AfterDeleting,
		worker.AfterDeleteRecords, worker.AfterMirrorApplied} {
		t.Run(step, func(t *testing.T) {
			s := newScene(t)
			mirror := s.newMirror()
			s.apply(s.plan("C0", events.Offsets{0: 50, 1: 40})) // a boundary before the mirror
			s.attach(mirror)
			watch := s.watchMirror(mirror)
			plan := s.plan("C1", events.Offsets{0: 150, 1: 120})
			var victim *proc
			var survivors []*proc
			if step == worker.AfterCommitted {
				survivors = []*proc{s.startWorker("w1"), s.startWorker("w2"), s.startWorker("w3")}
				s.owner(survivors...)
				victim = s.startApply(plan, step)
			} else {
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
			watch.observe(s, mirror) // right after the crash, before a survivor takes over
			appliedAt := s.waitApplied(plan.PlanID, time.Minute)
			t.Logf("failpoint %s: %s died; APPLIED %s later", step, victim.Name, appliedAt.Sub(diedAt).Round(10*time.Millisecond))
			s.checkLogStart(events.Offsets{0: 150, 1: 120})
			watch.require(t)
			s.requireMirrorAgrees(mirror)
			if st := readJobTopic(t, s.bootstrap, mirror).status[plan.PlanID]; st != "APPLIED" {
				t.Fatalf("the plan is %q on the mirror, want APPLIED", st)
			}
			for _, p := range survivors {
				p.Terminate(t)
			}
			s.check(invariant.WantAllApplied())
		})
	}
}

// TestMirrorApplyDiesAtEachStepAndResumes: `kcleanup apply` dies at each
// step; running it again finishes the plan, mirror included.
func TestMirrorApplyDiesAtEachStepAndResumes(t *testing.T) {
	for _, step := range []string{worker.AfterCommitted, worker.AfterMirrorCommitted, worker.AfterDeleting,
		worker.AfterDeleteRecords, worker.AfterMirrorApplied} {
		t.Run(step, func(t *testing.T) {
			s := newScene(t)
			mirror := s.newMirror()
			s.attach(mirror) // no boundary yet: the mirror stays empty until the first plan
			watch := s.watchMirror(mirror)
			plan := s.plan("C1", events.Offsets{0: 150, 1: 120})
			victim := s.startApply(plan, step)
			if st, _ := victim.WaitDeath(t, time.Minute); !workertest.KilledBySIGKILL(st) {
				t.Fatalf("apply exited with %v, want death by SIGKILL at %s:\n%s", st, step, victim.Tail(20))
			}
			// Nothing runs now: the state the crash left, observed once more.
			watch.observe(s, mirror)
			if out, err := s.applyCmd(plan).CombinedOutput(); err != nil {
				t.Fatalf("apply again: %v\n%s", err, out)
			}
			if st := s.state(plan.PlanID); st != fsm.Applied {
				t.Fatalf("state %s after the second apply", st)
			}
			watch.require(t)
			s.requireMirrorAgrees(mirror)
			s.check(invariant.WantAllApplied())
		})
	}
}

// TestMirrorConcurrentAppliesAndFailover: three workers with a mirror
// attached, plans committed by concurrent `kcleanup apply` processes (some
// superseded), and the owner killed while they are finished. The job's
// fold stays valid throughout and ends at kcleanup's boundary.
func TestMirrorConcurrentAppliesAndFailover(t *testing.T) {
	s := newScene(t)
	mirror := s.newMirror()
	s.attach(mirror)
	watch := s.watchMirror(mirror)
	ws := []*proc{s.startWorker("w1"), s.startWorker("w2"), s.startWorker("w3")}
	first := s.owner(ws...)
	plans := []events.Plan{
		s.plan("C1", events.Offsets{0: 60, 1: 40}),
		s.plan("C2", events.Offsets{0: 120, 1: 90}),
		s.plan("C3", events.Offsets{0: 100, 1: 100}), // incomparable with C2: one of them loses
		s.plan("C4", events.Offsets{0: 200, 1: 150}),
	}
	var wg sync.WaitGroup
	for i, p := range plans {
		cmd := s.applyCmd(p)
		wg.Go(func() {
			if i == 2 {
				time.Sleep(300 * time.Millisecond)
			}
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if err != nil && !errorsAs(err, &exit) {
				t.Errorf("apply %d: %v\n%s", i, err, out)
			}
			t.Logf("apply %d (%s): %v", i, p.Offsets, err)
		})
	}
	time.Sleep(500 * time.Millisecond)
	if err := first.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	var rest []*proc
	for _, p := range ws {
		if p != first {
			rest = append(rest, p)
		}
	}
	kafkatest.Eventually(t, 2*time.Minute, "every committed plan APPLIED", func() bool {
		var pending int
		s.withProjection(func(_ context.Context, proj *worker.Projection) { pending = len(proj.State.Pending()) })
		return pending == 0
	})
	watch.require(t)
	s.requireMirrorAgrees(mirror)
	for _, p := range rest {
		p.Terminate(t)
	}
	s.check(invariant.WantAllApplied())
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}
