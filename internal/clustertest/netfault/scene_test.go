package netfault_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/clustertest/netfault"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector/invariant"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

func TestMain(m *testing.M) {
	code := m.Run()
	workertest.RemoveBinary()
	os.Exit(code)
}

// scene is one test's cluster with its proxied links, a data topic (one partition of 300
// records, three replicas) and its control topic, made by `kcleanup init` over the direct path.
type scene struct {
	t     *testing.T
	k     *kafkatest.Cluster
	net   *netfault.Net
	cl    *kgo.Client // direct: the test's own view, never faulted
	c     *worker.Cluster
	topic string
	id    string
	ctl   string
	logs  map[string]string // a worker's name: its log file
}

func newScene(t *testing.T) *scene {
	t.Helper()
	k := kafkatest.NewCluster(t)
	s := &scene{t: t, k: k, net: netfault.Start(t, k, 3)}
	s.cl = kafkatest.Client(t, "", k.Seeds())
	s.topic = kafkatest.NewTopic(t, s.cl, "netfault", 1, map[string]string{
		"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1", "min.insync.replicas": "2",
	})
	kafkatest.Produce(t, s.cl, s.topic, 0, 300)
	s.ctl = protocol.ControlTopicFor(s.topic)
	c, err := worker.Connect(k.Seeds())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s.c = c
	info, err := c.TopicMetadata(context.Background(), s.topic)
	if err != nil {
		t.Fatal(err)
	}
	s.id = info.ID
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = kafkatest.Admin(t, s.cl).DeleteTopics(ctx, s.ctl)
	})
	s.must(s.k.Bootstrap, "init", "--topic", s.topic)
	return s
}

// run runs the CLI with bootstrap (a link's, or the direct one) and returns its output, exit
// code and how long it took.
func (s *scene) run(env []string, bootstrap string, args ...string) (string, int, time.Duration) {
	s.t.Helper()
	cmd := exec.Command(workertest.Binary(s.t), append(args, "-b", bootstrap)...)
	cmd.Env = workertest.CleanEnv(env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0, took
	case errors.As(err, &exit):
		return string(out), exit.ExitCode(), took
	default:
		s.t.Errorf("kcleanup %s: %v", strings.Join(args, " "), err)
		return "", -2, took
	}
}

func (s *scene) must(bootstrap string, args ...string) string {
	s.t.Helper()
	out, code, _ := s.run(nil, bootstrap, args...)
	if code != 0 {
		s.t.Fatalf("kcleanup %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// planFile writes a plan that deletes partition 0 below boundary and returns it and its file.
func (s *scene) planFile(rp string, boundary int64) (events.Plan, string) {
	s.t.Helper()
	return workertest.PlanFile(s.t, rp, s.topic, s.id, events.Offsets{0: boundary})
}

// markersFile writes a recovery point's marker (partition 0 at offset) and returns its file.
func (s *scene) markersFile(offset int64) string {
	s.t.Helper()
	return workertest.MarkersFile(s.t, s.topic, s.id, events.Offsets{0: offset})
}

// operation reads the control topic afresh: a plan's operation.
func (s *scene) operation(planID string) (fsm.State, events.Offsets) {
	s.t.Helper()
	return workertest.Operation(s.t, s.c, s.ctl, planID)
}

func (s *scene) check() {
	s.t.Helper()
	workertest.RequireInvariants(s.t, s.c, s.ctl, invariant.InitialLogStart(events.Offsets{0: 0}))
}

// leader is the node leading topic's partition 0 now (uncached metadata, direct path).
func (s *scene) leader(topic string) int32 {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := kafkatest.Partition(ctx, s.cl, topic, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	return r.Leader
}

// contains reports whether out contains any of words.
func contains(out string, words ...string) bool {
	for _, w := range words {
		if strings.Contains(out, w) {
			return true
		}
	}
	return false
}

// logStart is the data topic's partition 0 log start (direct path).
func (s *scene) logStart() int64 {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offs, err := kafkatest.Admin(s.t, s.cl).ListStartOffsets(ctx, s.topic)
	if err != nil {
		s.t.Fatal(err)
	}
	o, ok := offs.Lookup(s.topic, 0)
	if !ok || o.Err != nil {
		s.t.Fatalf("log start of %s/0: %v", s.topic, o.Err)
	}
	return o.Offset
}

// startWorker starts `kcleanup worker` on the scene's control topic through bootstrap, in a
// consumer group of the test's own; its log is printed when the test fails. It is killed when
// the test ends; stop kills it earlier.
func (s *scene) startWorker(name, bootstrap string) (stop func()) {
	s.t.Helper()
	log, err := os.Create(filepath.Join(s.t.TempDir(), name+".log"))
	if err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(workertest.Binary(s.t), "worker", "-b", bootstrap, "--control-topic", s.ctl,
		"--group", "kcleanup-"+s.topic, "--replica-name", name, "--http-addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = workertest.CleanEnv()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	if s.logs == nil {
		s.logs = map[string]string{}
	}
	s.logs[name] = log.Name()
	var once sync.Once
	stop = func() { once.Do(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) }
	s.t.Cleanup(func() {
		stop()
		_ = log.Close()
		if s.t.Failed() {
			b, _ := os.ReadFile(log.Name())
			s.t.Logf("worker %s's log:\n%s", name, b)
		}
	})
	return stop
}

// separateLeaders moves the data topic's leadership off the control topic's leader (a
// reassignment that puts another node first, then a preferred-leader election), so that a
// partition from one broker cuts a process off from one topic's leader but not the other's.
// It returns the control topic's leader and the data topic's.
func (s *scene) separateLeaders() (ctl, data int32) {
	s.t.Helper()
	ctl, data = s.leader(s.ctl), s.leader(s.topic)
	if ctl != data {
		return ctl, data
	}
	want := kafkatest.Nodes[0]
	for _, n := range kafkatest.Nodes {
		if n != ctl {
			want = n
			break
		}
	}
	replicas := []int32{want}
	for _, n := range kafkatest.Nodes {
		if n != want {
			replicas = append(replicas, n)
		}
	}
	adm := kafkatest.Admin(s.t, s.cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(s.topic, 0, replicas)
	if rs, err := adm.AlterPartitionAssignments(ctx, req); err != nil || rs.Error() != nil {
		s.t.Fatalf("reassigning %s/0 to %v: %v %v", s.topic, replicas, err, rs.Error())
	}
	kafkatest.Eventually(s.t, time.Minute, fmt.Sprintf("%s/0 led by node %d", s.topic, want), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{s.topic: {0: {}}})
		return s.leader(s.topic) == want
	})
	return s.leader(s.ctl), want
}
