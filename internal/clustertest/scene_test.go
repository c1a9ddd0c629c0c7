package clustertest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
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

// scene is one test's cluster, data topic (one partition of 300 records, three replicas,
// min.insync.replicas=2) and the control topic `kcleanup init` made for it.
type scene struct {
	t     *testing.T
	k     *kafkatest.Cluster
	cl    *kgo.Client
	adm   *kadm.Client
	c     *worker.Cluster
	topic string
	id    string
	ctl   string
}

var dataConfigs = map[string]string{
	"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1", "min.insync.replicas": "2",
}

func newScene(t *testing.T) *scene {
	t.Helper()
	k := kafkatest.NewCluster(t)
	cl := kafkatest.Client(t, "", k.Seeds())
	s := &scene{t: t, k: k, cl: cl, adm: kadm.NewClient(cl)}
	s.topic = kafkatest.NewTopic(t, cl, "action-state", 1, dataConfigs)
	kafkatest.Produce(t, cl, s.topic, 0, 300)
	s.ctl = protocol.ControlTopicFor(s.topic)
	s.deleteAtEnd(s.ctl)
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
	return s
}

// deleteAtEnd deletes a topic kcleanup created when the test ends (after the nodes are back).
func (s *scene) deleteAtEnd(topic string) {
	s.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = s.adm.DeleteTopic(ctx, topic)
	})
}

// kcleanup runs the CLI against the cluster and returns its output and exit code.
func (s *scene) kcleanup(env []string, args ...string) (string, int) {
	s.t.Helper()
	cmd := exec.Command(workertest.Binary(s.t), append(args, "-b", s.k.Bootstrap)...)
	cmd.Env = workertest.CleanEnv(env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode() // -1: killed by a signal (a failpoint)
	default: // Errorf, not Fatalf: a poller runs this in a goroutine of its own
		s.t.Errorf("kcleanup %s: %v", strings.Join(args, " "), err)
		return "", -2
	}
}

func (s *scene) mustKcleanup(args ...string) string {
	s.t.Helper()
	out, code := s.kcleanup(nil, args...)
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

// partition is what uncached metadata says of topic's partition 0 now.
func (s *scene) partition(topic string) kafkatest.Replicas {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := kafkatest.Partition(ctx, s.cl, topic, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	return r
}

// waitISR waits until topic's partition 0 has exactly want in sync (the controller fences a
// killed broker after broker.session.timeout.ms; a returning one catches up).
func (s *scene) waitISR(topic string, want int) kafkatest.Replicas {
	s.t.Helper()
	var r kafkatest.Replicas
	kafkatest.Eventually(s.t, 2*time.Minute, fmt.Sprintf("%s/0 with %d in-sync replicas", topic, want), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		r, err = kafkatest.Partition(ctx, s.cl, topic, 0) // a topic created a moment ago may not show yet
		return err == nil && len(r.ISR) == want && r.Leader >= 0
	})
	return r
}
