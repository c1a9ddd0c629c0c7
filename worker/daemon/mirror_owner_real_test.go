package daemon

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/worker"
)

// TestOwnerSyncsTheMirrorOnceItCan: a mirror attached while it could not
// be written (here: cleanup.policy=compact,delete, which the job refuses)
// is brought up to the boundary by the owner once it is fixed, although
// the control topic does not move meanwhile (an idle owner still retries
// its mirror sync). Real broker.
func TestOwnerSyncsTheMirrorOnceItCan(t *testing.T) {
	_, c, admin := workertest.RealBroker(t)
	rc := workertest.RealControlled(t, c, admin, "mirror-owner", 50)
	data, ctl := rc.Topic, rc.Ctl
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	info, err := c.TopicMetadata(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := events.BuildPlan("cp-1", []events.Marker{{Topic: data, TopicID: info.ID, Offsets: events.Offsets{0: 20, 1: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	proj, err := c.Project(ctx, ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	if _, err := c.Apply(ctx, proj, plan, worker.Options{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	mirror := kafkatest.NewTopic(t, admin, data+".flink", 1, map[string]string{"cleanup.policy": "compact,delete"})
	mi, err := c.TopicMetadata(ctx, mirror)
	if err != nil {
		t.Fatal(err)
	}
	// Attached as a record (attach itself would refuse this topic).
	env := events.NewMirrorEvent(events.MirrorAttached, events.Mirror{Topic: mirror, TopicID: mi.ID, Reason: "test"}, time.Now().UTC(), "test")
	if v, err := proj.Decide(ctx, env); err != nil || v.Outcome != "accepted" {
		t.Fatalf("MIRROR_ATTACHED: %+v %v", v, err)
	}
	logs := &syncLog{t: t}
	startDaemon(t, c, WithControlTopics(ctl), WithGroupTimings(6*time.Second, 500*time.Millisecond, 10*time.Second),
		WithPollInterval(100*time.Millisecond), WithBackoff(50*time.Millisecond, time.Second), WithShutdownGrace(time.Second),
		WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	kafkatest.Eventually(t, 60*time.Second, "the owner tries to sync the mirror and cannot", func() bool {
		return logs.has("cannot bring the Flink Agents mirror up to the boundary")
	})
	if _, err := kadm.NewClient(admin).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")}}, mirror); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 60*time.Second, "the owner seeds the fixed mirror with the boundary's plan", func() bool {
		v, err := c.ReadMirror(ctx, mirror)
		if err != nil || v.Fold == nil {
			return false
		}
		ops := v.Fold.Operations()
		return len(ops) == 1 && ops[0].Plan.PlanID == plan.PlanID && ops[0].Status == flinkagents.Applied
	})
}

// syncLog keeps the daemon's log lines (and shows them in the test log).
type syncLog struct {
	t     *testing.T
	mu    sync.Mutex
	lines []string
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.lines = append(l.lines, string(p))
	l.mu.Unlock()
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (l *syncLog) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}
