package worker_test

// Adversarial cases of the recovery gate (issue #9) on the real broker,
// through Cluster.Validate (what `kcleanup validate` and POST /v1/validate
// both call): edges of the live range, partition sets, topic IDs, control
// topics that are not this topic's, an unreachable cluster.

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/gate"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/worker"
)

func TestValidateAdversarialOnTheRealBroker(t *testing.T) {
	bootstrap, c, cl := workertest.RealBroker(t)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), workertest.RealTimeout)
	defer cancel()

	live := workertest.Applied(t, c, cl, "adv-live")
	other := workertest.Applied(t, c, cl, "adv-other")
	opts := func(ctl string) worker.ValidateOptions {
		return worker.ValidateOptions{ControlTopic: ctl, Bootstrap: bootstrap}
	}
	check := func(t *testing.T, v gate.Verdict, class gate.Class, reason gate.Reason) {
		t.Helper()
		if v.Class != class || v.Allowed != (class == gate.Allowed) || (reason != "" && v.Reason != reason) {
			t.Fatalf("verdict %s %s, want %s %s: %s %+v", v.Class, v.Reason, class, reason, v.Message, v.Refusals)
		}
	}
	m := func(rc workertest.RealCase, id string, offs events.Offsets) []events.Marker {
		return []events.Marker{{Topic: rc.Topic, TopicID: id, Offsets: offs}}
	}

	t.Run("edges of the live range", func(t *testing.T) {
		to := kadm.Offsets{}
		to.AddOffset(live.Topic, 1, 140, -1) // one partition only, outside kcleanup
		if resp, err := adm.DeleteRecords(ctx, to); err != nil || resp.Error() != nil {
			t.Fatalf("delete records: %v %v", err, resp.Error())
		}
		check(t, c.Validate(ctx, m(live, live.ID, events.Offsets{0: 150, 1: 140}), opts(live.Ctl)), gate.Allowed, "")
		check(t, c.Validate(ctx, m(live, live.ID, events.Offsets{0: 150, 1: 139}), opts(live.Ctl)), gate.Refused, gate.OutOfRange)
		check(t, c.Validate(ctx, m(live, live.ID, events.Offsets{0: 200, 1: 200}), opts(live.Ctl)), gate.Allowed, "")
		check(t, c.Validate(ctx, m(live, live.ID, events.Offsets{0: 201, 1: 200}), opts(live.Ctl)), gate.Refused, gate.OutOfRange)
		check(t, c.Validate(ctx, m(live, live.ID, events.Offsets{0: 149, 1: 150}), opts(live.Ctl)), gate.Refused, gate.BelowBoundary)
	})
	t.Run("partition sets", func(t *testing.T) {
		check(t, c.Validate(ctx, m(live, live.ID, events.Offsets{0: 160}), opts(live.Ctl)), gate.Refused, "")
		check(t, c.Validate(ctx, m(live, live.ID, events.Offsets{0: 160, 1: 160, 2: 0}), opts(live.Ctl)), gate.Refused, gate.UnknownPartition)
		two := append(m(live, live.ID, events.Offsets{0: 160, 1: 160}), m(live, live.ID, events.Offsets{0: 100, 1: 160})...)
		check(t, c.Validate(ctx, two, opts(live.Ctl)), gate.Refused, gate.BelowBoundary)
	})
	t.Run("two topic IDs", func(t *testing.T) {
		ms := append(m(live, live.ID, events.Offsets{0: 160, 1: 160}), m(live, other.ID, events.Offsets{0: 160, 1: 160})...)
		v := c.Validate(ctx, ms, opts(live.Ctl))
		if v.Allowed {
			t.Fatalf("allowed: %+v", v)
		}
	})
	t.Run("control topic of another topic", func(t *testing.T) {
		check(t, c.Validate(ctx, m(live, live.ID, events.Offsets{0: 160, 1: 160}), opts(other.Ctl)), gate.CannotTell, gate.TopicMismatch)
	})
	t.Run("control topic is the data topic", func(t *testing.T) {
		check(t, c.Validate(ctx, m(live, live.ID, events.Offsets{0: 160, 1: 160}), opts(live.Topic)), gate.CannotTell, gate.ControlTopicPartitions)
	})
	t.Run("control topic is __consumer_offsets", func(t *testing.T) {
		v := c.Validate(ctx, m(live, live.ID, events.Offsets{0: 160, 1: 160}), opts("__consumer_offsets"))
		check(t, v, gate.CannotTell, "")
	})
	t.Run("unreachable cluster", func(t *testing.T) {
		dead, err := worker.Connect(kgo.SeedBrokers("127.0.0.1:1"))
		if err != nil {
			t.Fatal(err)
		}
		defer dead.Close()
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		check(t, dead.Validate(short, m(live, live.ID, events.Offsets{0: 160, 1: 160}), opts(live.Ctl)), gate.CannotTell, "")
	})
}
