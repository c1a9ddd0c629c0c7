package clustertest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/worker"
)

// TestRollingRestartWithWorkers: three `kcleanup worker` processes serve the control topic
// while a plan is committed every second (apply --no-wait, in process) and each broker in
// turn is stopped, started and waited for until both topics' ISR is full again. Every plan
// whose COMMITTED was accepted reaches APPLIED (the workers finish it) and the invariants
// hold. The time from COMMITTED to APPLIED is logged (record timestamps; not asserted).
func TestRollingRestartWithWorkers(t *testing.T) {
	s := newScene(t)
	kafkatest.Produce(t, s.Cl, s.Topic, 0, 700) // 1000 records: room for a plan a second
	s.MustKcleanup(s.K.Bootstrap, "init", "--topic", s.Topic)
	s.waitISR(s.Ctl, 3)
	s.waitISR(s.Topic, 3)
	for i := range 3 {
		s.startWorker(fmt.Sprintf("w%d", i+1))
	}

	var (
		mu        sync.Mutex
		committed []string // plan IDs whose COMMITTED was accepted, in order
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		proj, err := s.C.OpenProjection(s.Ctl)
		if err != nil {
			t.Error(err)
			return
		}
		defer proj.Close()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
			boundary := int64(5 * i)
			if boundary >= 1000 {
				t.Errorf("more plans than records: the rolling restart took longer than %d s", i)
				return
			}
			p, err := events.BuildPlan(fmt.Sprintf("rp-%d", i), []events.Marker{{Topic: s.Topic, TopicID: s.ID, Offsets: events.Offsets{0: boundary}}})
			if err != nil {
				t.Error(err)
				return
			}
			// A commit cut short by a broker's restart is resumed: the same plan again.
			var last error
			for attempt := 0; attempt < 5; attempt++ {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, last = s.C.Apply(ctx, proj, p, worker.Options{NoWait: true, Actor: "rolling-restart"})
				cancel()
				if last == nil {
					break
				}
				t.Logf("commit of plan %d, attempt %d: %v", i, attempt+1, last)
			}
			if last != nil {
				t.Errorf("plan %d (boundary %d) was not committed: %+v", i, boundary, last)
				return
			}
			mu.Lock()
			committed = append(committed, p.PlanID)
			mu.Unlock()
		}
	})

	for _, id := range kafkatest.Nodes {
		began := time.Now()
		s.K.Stop(t, id)
		s.K.Start(t, id)
		s.waitISR(s.Ctl, 3)
		s.waitISR(s.Topic, 3)
		t.Logf("broker %d restarted and back in sync in %s", id, time.Since(began).Round(time.Second))
	}
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}
	mu.Lock()
	plans := slices.Clone(committed)
	mu.Unlock()
	if len(plans) == 0 {
		t.Fatal("no plan was committed during the rolling restart")
	}

	kafkatest.Eventually(t, 3*time.Minute, fmt.Sprintf("all %d plans APPLIED", len(plans)), func() bool {
		for _, id := range plans {
			if st, _ := s.Operation(id); st != fsm.Applied {
				return false
			}
		}
		return true
	})
	s.logCommitToApplied(plans)
	s.Check()
}

// logCommitToApplied logs the median and the longest time from a plan's COMMITTED record to
// its APPLIED record (the records' timestamps: one clock, this machine's).
func (s *scene) logCommitToApplied(plans []string) {
	s.T.Helper()
	at := map[string]time.Time{}
	for _, r := range s.controlRecords() {
		at[string(r.Key)] = r.Timestamp
	}
	var took []time.Duration
	for _, id := range plans {
		c, okC := at[id+"/"+string(events.Committed)]
		a, okA := at[id+"/"+string(events.Applied)]
		if okC && okA {
			took = append(took, a.Sub(c))
		}
	}
	if len(took) == 0 {
		s.T.Logf("no COMMITTED/APPLIED pair found in the control topic (compacted?)")
		return
	}
	slices.Sort(took)
	s.T.Logf("%d plans committed during the rolling restart; COMMITTED→APPLIED p50 %s, max %s",
		len(took), took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
}

// startWorker starts `kcleanup worker` on the scene's control topic, in a consumer group of
// the test's own; its log goes to a file the test prints when it fails. It is killed when the
// test ends.
func (s *scene) startWorker(name string) {
	s.T.Helper()
	log, err := os.Create(filepath.Join(s.T.TempDir(), name+".log"))
	if err != nil {
		s.T.Fatal(err)
	}
	cmd := exec.Command(workertest.Binary(s.T), "worker", "-b", s.K.Bootstrap, "--control-topic", s.Ctl,
		"--group", "kcleanup-"+s.Topic, "--replica-name", name, "--http-addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = workertest.CleanEnv()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		s.T.Fatal(err)
	}
	s.T.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = log.Close()
		if s.T.Failed() {
			b, _ := os.ReadFile(log.Name())
			s.T.Logf("worker %s's log:\n%s", name, b)
		}
	})
}
