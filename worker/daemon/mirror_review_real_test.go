package daemon_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/worker"
	"github.com/kcleanup/kcleanup/worker/kafkatest"
)

// TestReviewMirrorTooSmallForThePlanCommitsNothing: an apply checks the
// attached mirror before COMMITTED, so that a plan the mirror cannot hold
// is refused with nothing committed. A mirror whose max.message.bytes is
// below the plan's Flink Agents record (an operator-made or adopted Flink
// Agents topic keeps the broker's 1 MB default, the control topic takes
// 16 MB) must be caught by that check too: otherwise the plan is committed
// on the control topic and can never be mirrored, so it is never deleted,
// and kcleanup's gate refuses recovery points the job allows for good.
func TestReviewMirrorTooSmallForThePlanCommitsNothing(t *testing.T) {
	s := newScene(t)
	cl := kafkatest.Client(t, s.bootstrap)
	mirror := kafkatest.NewTopic(t, cl, s.topic+".flink", 1, map[string]string{"cleanup.policy": "compact", "max.message.bytes": "1024"})
	s.attach(mirror)
	p := s.plan(incompressible(1500), events.Offsets{0: 100, 1: 50})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var applyErr error
	s.withProjection(func(_ context.Context, proj *worker.Projection) {
		_, applyErr = s.c.Apply(ctx, proj, p, worker.Options{Actor: "test", Bootstrap: s.bootstrap})
	})
	if applyErr == nil {
		t.Fatalf("apply of a plan the mirror cannot hold succeeded")
	}
	t.Logf("apply refused: %v (hints %v)", applyErr, errors.GetAllHints(applyErr))
	if b := s.boundary(); len(b) > 0 {
		job, err := readJobTopic(t, s.bootstrap, mirror).boundary()
		t.Fatalf("plan committed on the control topic (boundary %v) but the mirror cannot hold it: the job's boundary is %v (%v)", b, events.Offsets(job), err)
	}
	// The operator raises the mirror's limit as the hint says: the same
	// plan is applied and the job's boundary is kcleanup's.
	v := "1048588"
	rs, err := kadm.NewClient(cl).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &v}}, mirror)
	if err == nil {
		_, err = rs.On(mirror, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	s.apply(p)
	s.requireMirrorAgrees(mirror)
	s.checkLogStart(p.Offsets)
}

// incompressible is a recovery point of n random hex characters (the
// producer compresses batches; a repeated string would fit anywhere).
func incompressible(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return "checkpoint-" + hex.EncodeToString(b)
}
