package clustertest_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	workertest.RemoveBinary()
	os.Exit(code)
}

// scene is one test's cluster, data topic (one partition of 300 records, three replicas,
// min.insync.replicas=2) and the name of its control topic: the test runs `kcleanup init`.
type scene struct{ *workertest.Replicated }

func newScene(t *testing.T) *scene {
	t.Helper()
	k := kafkatest.NewCluster(t)
	return &scene{workertest.NewReplicated(t, k, kafkatest.UniqueName("action-state"))}
}

// partition is what uncached metadata says of topic's partition 0 now.
func (s *scene) partition(topic string) kafkatest.Replicas {
	s.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := kafkatest.Partition(ctx, s.Cl, topic, 0)
	if err != nil {
		s.T.Fatal(err)
	}
	return r
}

// waitISR waits until topic's partition 0 has exactly want in sync (the controller fences a
// killed broker after broker.session.timeout.ms; a returning one catches up).
func (s *scene) waitISR(topic string, want int) kafkatest.Replicas {
	s.T.Helper()
	var r kafkatest.Replicas
	kafkatest.Eventually(s.T, 2*time.Minute, fmt.Sprintf("%s/0 with %d in-sync replicas", topic, want), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		r, err = kafkatest.Partition(ctx, s.Cl, topic, 0) // a topic created a moment ago may not show yet
		return err == nil && len(r.ISR) == want && r.Leader >= 0
	})
	return r
}
