package netfault_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kcleanup/kcleanup/internal/clustertest/netfault"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	workertest.RemoveBinary()
	os.Exit(code)
}

// scene is one test's cluster with its proxied links, a data topic (one partition of 300
// records, three replicas) and its control topic, made by `kcleanup init` over the direct path.
type scene struct {
	*workertest.Replicated
	net *netfault.Net
}

func newScene(t *testing.T) *scene {
	t.Helper()
	k := kafkatest.NewCluster(t)
	net := netfault.Start(t, k, 3)
	s := &scene{Replicated: workertest.NewReplicated(t, k, kafkatest.UniqueName("netfault")), net: net}
	s.Init()
	return s
}

// leader is the node leading topic's partition 0 now (uncached metadata, direct path).
func (s *scene) leader(topic string) int32 {
	s.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := kafkatest.Partition(ctx, s.Cl, topic, 0)
	if err != nil {
		s.T.Fatal(err)
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
	s.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offs, err := kafkatest.Admin(s.T, s.Cl).ListStartOffsets(ctx, s.Topic)
	if err != nil {
		s.T.Fatal(err)
	}
	o, ok := offs.Lookup(s.Topic, 0)
	if !ok || o.Err != nil {
		s.T.Fatalf("log start of %s/0: %v", s.Topic, o.Err)
	}
	return o.Offset
}

// startWorker starts `kcleanup worker` on the scene's control topic through bootstrap, in a
// consumer group of the test's own; it does not wait for the worker (its link may be faulted
// already). Its log is printed when the test fails; it is killed when the test ends.
func (s *scene) startWorker(name, bootstrap string) *workertest.Process {
	s.T.Helper()
	return workertest.StartProcess(s.T, name, []string{"worker", "-b", bootstrap, "--control-topic", s.Ctl,
		"--group", "kcleanup-" + s.Topic, "--replica-name", name, "--http-addr", "127.0.0.1:0", "--log-format", "json"})
}

// separateLeaders moves the data topic's leadership off the control topic's leader (a
// reassignment that puts another node first, then a preferred-leader election), so that a
// partition from one broker cuts a process off from one topic's leader but not the other's.
// It returns the control topic's leader and the data topic's.
func (s *scene) separateLeaders() (ctl, data int32) {
	s.T.Helper()
	ctl, data = s.leader(s.Ctl), s.leader(s.Topic)
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
	adm := kafkatest.Admin(s.T, s.Cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(s.Topic, 0, replicas)
	if rs, err := adm.AlterPartitionAssignments(ctx, req); err != nil || rs.Error() != nil {
		s.T.Fatalf("reassigning %s/0 to %v: %v %v", s.Topic, replicas, err, rs.Error())
	}
	kafkatest.Eventually(s.T, time.Minute, fmt.Sprintf("%s/0 led by node %d", s.Topic, want), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{s.Topic: {0: {}}})
		return s.leader(s.Topic) == want
	})
	return s.leader(s.Ctl), want
}
