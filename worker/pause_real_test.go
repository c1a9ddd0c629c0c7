package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// TestApplySleepsThroughAPinHold: a pin from a host a day behind has
// expired by every writer's clock but not by the broker's, so the run's
// own DELETING shows it still holding. The executor with Options.Sleep
// (kcleanup apply's) is handed the run's Pause step with the hold, sleeps
// through it with nothing deleted, and the same Apply call goes on to
// delete and APPLIED; without Sleep (a worker's executor) the call ends
// on the Pause and Outcome.Paused hands the hold to the caller. Real
// broker (the broker's LogAppendTime is the clock judged).
func TestApplySleepsThroughAPinHold(t *testing.T) {
	_, c, cl := workertest.RealBroker(t)
	for _, sleeps := range []bool{false, true} {
		rc := workertest.RealControlled(t, c, cl, "pause", 200)
		data, id, ctl := rc.Topic, rc.ID, rc.Ctl
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		const pinFor = 10 * time.Second
		pinAt := time.Now().Add(-24 * time.Hour)
		pin := events.NewPin("sp", data, id, events.Offsets{0: 60, 1: 70}, pinAt.Add(pinFor), "rollback point", pinAt, "host-a-day-behind")
		k, v := pin.Encode()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: ctl, Partition: 0, Key: k, Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		plan, err := events.BuildPlan("cp-90", []events.Marker{{Topic: data, TopicID: id, Offsets: events.Offsets{0: 90, 1: 90}}})
		if err != nil {
			t.Fatal(err)
		}
		proj, err := c.Project(ctx, ctl)
		if err != nil {
			t.Fatal(err)
		}
		var pauses []protocol.Paused
		deletedAfter := -1 // how many pauses were slept through when DeleteRecords was sent
		o := worker.Options{Actor: "test", DeleteRecordsTook: func(time.Duration, error) { deletedAfter = len(pauses) }}
		if sleeps {
			o.Sleep = func(ctx context.Context, p protocol.Paused) error {
				pauses = append(pauses, p)
				starts, err := c.StartOffsets(ctx, data)
				if err != nil {
					return err
				}
				if starts[0] > 60 || starts[1] > 70 {
					t.Errorf("log starts %s during the pause, above the pin (0=60 1=70)", starts)
				}
				began := time.Now()
				select {
				case <-time.After(p.Wait(time.Now())):
				case <-ctx.Done():
					return ctx.Err()
				}
				t.Logf("slept %s through the pause", time.Since(began).Round(time.Millisecond))
				return nil
			}
		}
		out, err := c.Apply(ctx, proj, plan, o)
		if !sleeps {
			if err == nil || out.Paused == nil || out.Paused.Hold == nil || out.Paused.Hold.Pin.PinID != pin.Pin.PinID || out.State != fsm.Deleting || deletedAfter >= 0 {
				t.Fatalf("without Sleep: state %s, paused %+v, DeleteRecords sent %v (%v); want the run to end DELETING on the pin's hold, nothing deleted", out.State, out.Paused, deletedAfter >= 0, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("apply: %v", err)
		}
		if out.State != fsm.Applied || len(pauses) == 0 || pauses[0].Hold == nil || pauses[0].Hold.Pin.PinID != pin.Pin.PinID {
			t.Fatalf("state %s after %d pauses (%+v), want APPLIED after a pause for pin %s", out.State, len(pauses), pauses, pin.Pin.PinID)
		}
		if deletedAfter != len(pauses) {
			t.Fatalf("DeleteRecords was sent after %d of %d pauses: the deletion must follow the last", deletedAfter, len(pauses))
		}
		starts, err := c.StartOffsets(ctx, data)
		if err != nil {
			t.Fatal(err)
		}
		if starts[0] < 90 || starts[1] < 90 {
			t.Fatalf("log starts %s after APPLIED, want at or above 0=90 1=90", starts)
		}
	}
}
