package daemon

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/worker"
)

// TestReviewOwnerResyncsAMirrorThatLostItsPlan: after the owner synced the
// mirror, the mirror loses the plan that carries the boundary while the
// control topic does not move (here an operator truncates it with
// DeleteRecords under a temporary cleanup.policy=compact,delete; the same
// happens when another writer's tombstone over the plan is cleaned, with
// the plan under it, by the log cleaner). The job pointed at the mirror now
// finds no boundary, or a lower one, below records already deleted. The
// owner must bring the mirror back up to the boundary by itself. Real
// broker.
func TestReviewOwnerResyncsAMirrorThatLostItsPlan(t *testing.T) {
	_, c, admin := workertest.RealBroker(t)
	adm := kadm.NewClient(admin)
	rc := workertest.RealControlled(t, c, admin, "mirror-resync", 50)
	data, ctl := rc.Topic, rc.Ctl
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
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
	mirror := kafkatest.NewTopic(t, admin, data+".flink", 1, map[string]string{"cleanup.policy": "compact"})
	if _, err := c.AttachMirror(ctx, proj, mirror, "the job reads it", worker.Options{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(ctx, proj, plan, worker.Options{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	holdsPlan := func() bool {
		short, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		v, err := c.ReadMirror(short, mirror)
		if err != nil || v.Fold == nil || v.Fold.Err() != nil {
			return false
		}
		b, err := v.Fold.Boundary(data, info.ID, []int32{0, 1})
		return err == nil && b.Equal(plan.Offsets)
	}
	if !holdsPlan() {
		t.Fatal("after apply the mirror does not hold the plan APPLIED")
	}
	logs := &syncLog{t: t}
	startDaemon(t, c, WithControlTopics(ctl), WithGroupTimings(6*time.Second, 500*time.Millisecond, 10*time.Second),
		WithPollInterval(100*time.Millisecond), WithBackoff(50*time.Millisecond, time.Second), WithShutdownGrace(time.Second),
		WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	// Let the owner take the topic and sync once (nothing to write).
	kafkatest.Eventually(t, 60*time.Second, "the owner synced the mirror", func() bool {
		return logs.has("agrees with the boundary")
	})

	setPolicy := func(p string) {
		rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr(p)}}, mirror)
		if err == nil {
			_, err = rs.On(mirror, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	setPolicy("compact,delete")
	ends, err := adm.ListEndOffsets(ctx, mirror)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(mirror, 0)
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: mirror, Partition: 0, At: end.Offset})
	kafkatest.DeleteRecordsAfterConfigChange(t, ctx, adm, offs) // truncate the mirror
	setPolicy("compact")
	// Another writer then puts an older, lower plan there (a Flink Agents
	// tool still running, say): the mirror is readable again, its fold
	// valid, its boundary below the records already deleted.
	old, err := events.BuildPlan("cp-0", []events.Marker{{Topic: data, TopicID: info.ID, Offsets: events.Offsets{0: 5, 1: 5}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: mirror, Partition: 0, Key: []byte(old.PlanID), Value: flinkagents.EncodeValue(flinkagents.Committed, old)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if holdsPlan() {
		t.Fatal("setup: the truncated mirror still holds the plan")
	}
	kafkatest.Eventually(t, 60*time.Second, "the owner brings the mirror that lost its plan back up to the boundary", holdsPlan)
}
