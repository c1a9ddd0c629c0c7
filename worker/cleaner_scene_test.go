package worker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/worker"
)

// cleanerScene is a compacted control topic on the real broker whose cleaner runs as soon as a
// segment closes (segment.ms 100, dirty ratio 0.01, no compaction lag), for the tests that
// catch Kafka's cleaner at a chosen moment (disputed_real_test.go, pinwindow_real_test.go).
type cleanerScene struct {
	t   *testing.T
	ctx context.Context
	cl  *kgo.Client
	c   *worker.Cluster
	ctl string
}

func newCleanerScene(t *testing.T, prefix string, extra map[string]string) *cleanerScene {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a Kafka broker")
	}
	bootstrap := kafkatest.Bootstrap(t)
	cl := kafkatest.Client(t, bootstrap)
	configs := map[string]string{
		"cleanup.policy":            "compact",
		"segment.ms":                "100", // the next append after 100 ms rolls the segment
		"min.cleanable.dirty.ratio": "0.01",
		"min.compaction.lag.ms":     "0",
	}
	for k, v := range extra {
		configs[k] = v
	}
	ctl := kafkatest.NewTopic(t, cl, prefix, 1, configs)
	c, err := worker.Connect(kgo.SeedBrokers(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return &cleanerScene{t: t, ctx: ctx, cl: cl, c: c, ctl: ctl}
}

// produce appends recs and fails the test unless every one is acknowledged.
func (s *cleanerScene) produce(recs ...*kgo.Record) {
	s.t.Helper()
	for _, r := range recs {
		r.Topic, r.Partition = s.ctl, 0
	}
	if err := s.cl.ProduceSync(s.ctx, recs...).FirstErr(); err != nil {
		s.t.Fatal(err)
	}
}

// survivors reads the control topic afresh and returns the offsets on it and the projection.
func (s *cleanerScene) survivors() ([]int64, *worker.Projection) {
	s.t.Helper()
	proj, err := s.c.Project(s.ctx, s.ctl, projector.KeepAudit())
	if err != nil {
		s.t.Fatal(err)
	}
	var offs []int64
	for _, v := range proj.State.Audit() {
		offs = append(offs, v.Offset)
	}
	return offs, proj
}

// waitRemoved reads afresh until the cleaner has removed offset off, calling nudge (if any)
// before each read, and returns what the fresh read found; the caller closes the projection.
func (s *cleanerScene) waitRemoved(what string, off int64, nudge func()) ([]int64, *worker.Projection) {
	s.t.Helper()
	var proj *worker.Projection
	var offs []int64
	kafkatest.Eventually(s.t, 90*time.Second, what, func() bool {
		if nudge != nil {
			nudge()
		}
		offs, proj = s.survivors()
		if !slices.Contains(offs, off) {
			return true
		}
		proj.Close()
		return false
	})
	return offs, proj
}
