package workertest

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/projector/invariant"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// Replicated is the scene of the tests on the three-broker cluster (internal/clustertest and
// below it): a data topic of one partition of 300 records with three replicas and
// min.insync.replicas=2, the name of its control topic (deleted when the test ends, after the
// nodes are back), and the clients the test reads the cluster with.
type Replicated struct {
	T     testing.TB
	K     *kafkatest.Cluster
	Cl    *kgo.Client // direct: the test's own view
	Adm   *kadm.Client
	C     *worker.Cluster
	Topic string
	ID    string
	Ctl   string
}

// NewReplicated creates the data topic named topic on k (exactly that name: a caller whose
// regular expression must match it chooses it) and connects to k. The control topic is not
// made: Init makes it, or the test does with flags of its own.
func NewReplicated(t testing.TB, k *kafkatest.Cluster, topic string) *Replicated {
	t.Helper()
	r := &Replicated{T: t, K: k, Topic: topic, Ctl: protocol.ControlTopicFor(topic)}
	r.Cl = kafkatest.Client(t, "", k.Seeds())
	r.Adm = kafkatest.Admin(t, r.Cl)
	kafkatest.CreateTopic(t, r.Cl, topic, 1, map[string]string{
		"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1", "min.insync.replicas": "2",
	})
	kafkatest.Produce(t, r.Cl, topic, 0, 300)
	r.DeleteAtEnd(r.Ctl)
	c, err := worker.Connect(k.Seeds())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	r.C = c
	info, err := c.TopicMetadata(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	r.ID = info.ID
	return r
}

// DeleteAtEnd deletes a topic kcleanup created (a control topic, a mirror) when the test
// ends, after the nodes are back.
func (r *Replicated) DeleteAtEnd(topic string) {
	r.T.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = r.Adm.DeleteTopic(ctx, topic)
	})
}

// Init runs `kcleanup init --topic TOPIC` over the direct path: the control topic.
func (r *Replicated) Init() {
	r.T.Helper()
	r.MustKcleanup(r.K.Bootstrap, "init", "--topic", r.Topic)
}

// Kcleanup runs the CLI with bootstrap (a proxied link's, or the direct one) and env, and
// returns its output, its exit code (-1: killed by a signal, a failpoint) and how long it took.
func (r *Replicated) Kcleanup(env []string, bootstrap string, args ...string) (string, int, time.Duration) {
	r.T.Helper()
	cmd := exec.Command(Binary(r.T), append(args, "-b", bootstrap)...)
	cmd.Env = CleanEnv(env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0, took
	case errors.As(err, &exit):
		return string(out), exit.ExitCode(), took
	default: // Errorf, not Fatalf: a poller runs this in a goroutine of its own
		r.T.Errorf("kcleanup %s: %v", strings.Join(args, " "), err)
		return "", -2, took
	}
}

// MustKcleanup is Kcleanup without env that fails the test unless the CLI exits 0.
func (r *Replicated) MustKcleanup(bootstrap string, args ...string) string {
	r.T.Helper()
	out, code, _ := r.Kcleanup(nil, bootstrap, args...)
	if code != 0 {
		r.T.Fatalf("kcleanup %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// PlanFile writes a plan that deletes partition 0 below boundary and returns it and its file.
func (r *Replicated) PlanFile(rp string, boundary int64) (events.Plan, string) {
	r.T.Helper()
	return PlanFile(r.T, rp, r.Topic, r.ID, events.Offsets{0: boundary})
}

// MarkersFile writes a recovery point's marker (partition 0 at offset) and returns its file.
func (r *Replicated) MarkersFile(offset int64) string {
	r.T.Helper()
	return MarkersFile(r.T, r.Topic, r.ID, events.Offsets{0: offset})
}

// Operation reads the control topic afresh: a plan's state and the log start its APPLIED
// verified.
func (r *Replicated) Operation(planID string) (fsm.State, events.Offsets) {
	r.T.Helper()
	return Operation(r.T, r.C, r.Ctl, planID)
}

// Check runs the invariant checker on the control topic (the data topic began at offset 0).
func (r *Replicated) Check() {
	r.T.Helper()
	RequireInvariants(r.T, r.C, r.Ctl, invariant.InitialLogStart(events.Offsets{0: 0}))
}
