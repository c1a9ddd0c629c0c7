package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/protocol"
)

// A tombstone over the MIRROR_ATTACHED that decides the mirror (any
// producer's): the history is at risk until Repair re-appends the attach,
// and the attachment survives it (kfake: no Kafka-specific behaviour is
// involved, only appends and reads).
func TestRepairReappendsTheDecidingMirrorEvent(t *testing.T) {
	c, _ := workertest.FakeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	workertest.DataTopic(t, c, "action-state", 1, 10)
	ctl := protocol.ControlTopicFor("action-state")
	proj := workertest.ControlProjection(t, ctx, c, ctl, "action-state")
	att := events.NewMirrorEvent(events.MirrorAttached, events.Mirror{Topic: "action-state.flink", TopicID: "AAECAwQFBgcICQoLDA0ODw", Reason: "test"}, time.Now().UTC(), "test")
	if v, err := proj.Decide(ctx, att); err != nil || v.Outcome != "accepted" {
		t.Fatalf("MIRROR_ATTACHED: %+v %v", v, err)
	}
	key, _ := att.Encode()
	if err := c.Client().ProduceSync(ctx, &kgo.Record{Topic: ctl, Partition: 0, Key: key}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := proj.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if risk, _ := proj.State.AtRisk(); !risk {
		t.Fatal("a tombstone over the deciding MIRROR_ATTACHED is not history at risk")
	}
	if err := proj.Repair(ctx); err != nil {
		t.Fatal(err)
	}
	if risk, why := proj.State.AtRisk(); risk {
		t.Fatalf("at risk after Repair: %s", why)
	}
	// A fresh read of the log, as compaction leaves it or not, attaches it.
	fresh := workertest.ControlProjection(t, ctx, c, ctl, "action-state")
	if m, ok := fresh.State.Mirror(); !ok || m.Topic != "action-state.flink" {
		t.Fatalf("after the repair the log attaches %+v (%v)", m, ok)
	}
}
