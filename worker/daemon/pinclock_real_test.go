package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
)

// pinClockCase is one skewed writer against a short pin (issue 30).
type pinClockCase struct {
	// pinSkew is how far the pinning host's clock runs ahead of the
	// broker's; commitSkew the committing producer's.
	pinSkew, commitSkew time.Duration
	pinFor              time.Duration
}

// TestCommitStampedAheadWaitsForThePinByTheBrokersClock: a raw franz-go
// producer whose clock runs two hours ahead writes PLANNED and COMMITTED
// for a plan above a pin of 20 seconds, as docs/events.md lets any
// producer write them. The log accepts the COMMITTED (at its "at" the pin
// has expired), but the owner deletes nothing above the pin until the pin
// has expired by the broker's clock: it lists the operation blocked,
// naming the pin and the gap, and the DELETING after which it deletes
// carries a broker time past the expiry. Real broker (the control topic
// has message.timestamp.type=LogAppendTime; the broker sets the batch's
// timestamp type).
func TestCommitStampedAheadWaitsForThePinByTheBrokersClock(t *testing.T) {
	testPinClock(t, pinClockCase{commitSkew: 2 * time.Hour, pinFor: 20 * time.Second})
}

// TestPinFromAHostADayBehindHoldsForItsDuration: the pinning host's clock
// runs a day behind, so by its "at" the 20-second pin expired a day ago
// and the log accepts a COMMITTED above it stamped by a correct clock. The
// owner still deletes nothing above it until 20 seconds after the broker
// appended the PINNED. Real broker.
func TestPinFromAHostADayBehindHoldsForItsDuration(t *testing.T) {
	testPinClock(t, pinClockCase{pinSkew: -24 * time.Hour, pinFor: 20 * time.Second})
}

func testPinClock(t *testing.T, tc pinClockCase) {
	_, c, admin := workertest.RealBroker(t)
	rc := workertest.RealControlled(t, c, admin, "pin-clock", 100)
	data, ctl := rc.Topic, rc.Ctl
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfgs, err := kadm.NewClient(admin).DescribeTopicConfigs(ctx, ctl)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := cfgs.On(ctl, nil); err != nil || !strings.Contains(describeValue(v, "message.timestamp.type"), "LogAppendTime") {
		t.Fatalf("control topic %s: message.timestamp.type %q (%v), want LogAppendTime", ctl, describeValue(v, "message.timestamp.type"), err)
	}
	info, err := c.TopicMetadata(ctx, data)
	if err != nil {
		t.Fatal(err)
	}

	// The pin, from the pinning host's clock; then PLANNED and COMMITTED
	// from the committing producer's, straight onto the control topic.
	produce := func(env events.Envelope) time.Time {
		t.Helper()
		k, v := env.Encode()
		r := &kgo.Record{Topic: ctl, Partition: 0, Key: k, Value: v}
		if err := admin.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		return r.Timestamp // the broker's, from the produce response (LogAppendTime)
	}
	pinAt := time.Now().Add(tc.pinSkew)
	pinEnv := events.NewPin("sp", data, info.ID, events.Offsets{0: 60, 1: 70}, pinAt.Add(tc.pinFor), "rollback point", pinAt, "pinning-host")
	pinAppended := produce(pinEnv)
	brokerExpiry := pinAppended.Add(tc.pinFor)
	plan, err := events.BuildPlan("cp-90", []events.Marker{{Topic: data, TopicID: info.ID, Offsets: events.Offsets{0: 90, 1: 90}}})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(tc.commitSkew)
	produce(events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Planned, PlanID: plan.PlanID, Plan: plan, At: at, Actor: "skewed-host"})
	produce(events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Committed, PlanID: plan.PlanID, Plan: plan,
		Boundary: plan.Offsets.Clone(), At: at.Add(time.Millisecond), Actor: "skewed-host"})
	if st := stateOf(t, c, ctl, plan.PlanID); st != fsm.Committed {
		t.Fatalf("the log did not accept the COMMITTED (state %s): the scenario needs the writer's clock to have let it past the pin", st)
	}

	r := startDaemon(t, c, WithControlTopics(ctl), WithGroupTimings(6*time.Second, 500*time.Millisecond, 10*time.Second),
		WithPollInterval(100*time.Millisecond), WithBackoff(50*time.Millisecond, time.Second), WithShutdownGrace(time.Second))
	// Until the broker's clock passes the expiry, the data topic keeps
	// every record above the pin, and the owner says why.
	sawBlocked := false
	for time.Now().Before(brokerExpiry.Add(-time.Second)) {
		starts, err := c.StartOffsets(ctx, data)
		if err != nil {
			t.Fatal(err)
		}
		if starts[0] > 60 || starts[1] > 70 {
			t.Fatalf("log starts %s at %s, above pin sp (0=60 1=70), which the broker's clock holds until %s", starts, time.Now().Format(time.RFC3339Nano), brokerExpiry.Format(time.RFC3339Nano))
		}
		for _, ts := range r.d.WorkerStatusView(false).ControlTopics {
			for _, b := range ts.Blocked {
				if b.PlanID == plan.PlanID && strings.Contains(b.Reason, pinEnv.Pin.PinID) && strings.Contains(b.Reason, "before the pin expires") {
					sawBlocked = true
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !sawBlocked {
		t.Fatalf("the owner never listed plan %s blocked by pin %s", plan.PlanID, pinEnv.Pin.PinID)
	}
	body := serve(t, r.d.Handler(), "/v1/status")
	workertest.ValidateWorkerStatus(t, body)
	if !strings.Contains(string(body), `"pinHolds"`) {
		t.Fatalf("/v1/status does not list the hold:\n%s", body)
	}
	// A COMMITTED stamped ahead of the broker is shown with its writer,
	// whatever the pins.
	metrics := string(serve(t, r.d.Handler(), "/metrics"))
	ahead := 0
	for _, ts := range r.d.WorkerStatusView(false).ControlTopics {
		for _, a := range ts.ClockAhead {
			if a.PlanID == plan.PlanID && a.Actor == "skewed-host" {
				ahead++
			}
		}
	}
	if tc.commitSkew > time.Minute {
		if ahead != 1 || !strings.Contains(metrics, `kcleanup_clock_ahead_commits{control_topic="`+ctl+`"} 1`) {
			t.Fatalf("the COMMITTED stamped %s ahead is not shown: %d in /v1/status clockAhead; metrics:\n%s", tc.commitSkew, ahead, metrics)
		}
	} else if ahead != 0 {
		t.Fatalf("a COMMITTED stamped by a correct clock is listed as ahead")
	}
	if !strings.Contains(metrics, `kcleanup_pin_held_operations{control_topic="`+ctl+`"} 1`) {
		t.Fatalf("/metrics does not count the hold:\n%s", metrics)
	}
	// Then it proceeds by itself.
	kafkatest.Eventually(t, 60*time.Second, "the owner applies the plan once the broker's clock passed the pin", func() bool {
		return stateOf(t, c, ctl, plan.PlanID) == fsm.Applied
	})
	starts, err := c.StartOffsets(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	if starts[0] < 90 || starts[1] < 90 {
		t.Fatalf("log starts %s after APPLIED, want at or above 0=90 1=90", starts)
	}
	// The DeleteRecords followed the last DELETING before APPLIED: its
	// broker time is past the expiry.
	last := lastDeletingAppended(t, admin, ctl, plan.PlanID)
	if last.Before(brokerExpiry) {
		t.Fatalf("the last DELETING was appended at %s by the broker's clock, before the pin's expiry %s by it", last.Format(time.RFC3339Nano), brokerExpiry.Format(time.RFC3339Nano))
	}
}

// describeValue is a config's value in a describe answer ("" when absent).
func describeValue(rc kadm.ResourceConfig, name string) string {
	for _, c := range rc.Configs {
		if c.Key == name {
			return c.MaybeValue()
		}
	}
	return ""
}

// lastDeletingAppended reads the control topic and returns the broker time
// of the plan's last DELETING record.
func lastDeletingAppended(t *testing.T, cl *kgo.Client, ctl, planID string) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, ctl)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(ctl, 0)
	rd, err := kgo.NewClient(kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{ctl: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var last time.Time
	key := events.Key(planID, events.Deleting)
	for next := int64(0); next < end.Offset; {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %s: %v", ctl, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if string(r.Key) != key {
				return
			}
			if r.Attrs.TimestampType() != 1 {
				t.Fatalf("DELETING at offset %d carries timestamp type %d, not the broker's (LogAppendTime)", r.Offset, r.Attrs.TimestampType())
			}
			last = r.Timestamp
		})
	}
	if last.IsZero() {
		t.Fatalf("no DELETING of plan %s on %s", planID, ctl)
	}
	return last
}
