package daemon

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/report"
)

// TestWorkerBlocksDeletionWhenTheJobWritesTombstonesAgain: after the first plan (checked: no
// tombstone above it), the job writes a tombstone above the committed boundary. The owner's
// watch blocks the next deletion as a blocked operation whose reason names the partition, the
// offset and the fix, /readyz and the kcleanup_tombstones_above_boundary metric say so, and
// nothing is deleted. A plan from a recovery point above the tombstone (the fix) is deleted.
// Real broker: the watch reads the data topic read_committed.
func TestWorkerBlocksDeletionWhenTheJobWritesTombstonesAgain(t *testing.T) {
	t.Run("unbounded", func(t *testing.T) { watchScene(t, 0) })
	// 7 records per pass: the tombstone lies beyond the first passes, which say cannot tell
	// (the operation waits, nothing is deleted) until a pass reads that far.
	t.Run("bounded", func(t *testing.T) { watchScene(t, 7) })
}

func watchScene(t *testing.T, limit int64) {
	_, c, cl := workertest.RealBroker(t)
	rc := workertest.Applied(t, c, cl, "tombstone-watch") // C1 0=150 1=120 APPLIED, 200 records each
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// C2 is committed, then the job writes a tombstone again (a plan committed after it, at or
	// below it, is refused before COMMITTED by the same rule: protocol.CommitTombstones).
	c2 := workertest.MustPlan(t, "C2", rc.Topic, rc.ID, events.Offsets{0: 180, 1: 150})
	commit(t, c, rc.Ctl, c2)
	tomb := &kgo.Record{Topic: rc.Topic, Partition: 1, Key: []byte("pruned"), Value: nil}
	if err := cl.ProduceSync(ctx, tomb).FirstErr(); err != nil {
		t.Fatal(err)
	}
	kafkatest.Produce(t, cl, rc.Topic, 1, 10) // the job goes on: 201..210

	r := startDaemon(t, c, WithControlTopics(rc.Ctl), WithGroupTimings(6*time.Second, 500*time.Millisecond, 10*time.Second),
		WithPollInterval(100*time.Millisecond), WithBackoff(50*time.Millisecond, time.Second), WithShutdownGrace(time.Second),
		WithLogger(testLogger(t)), WithTombstoneScanLimit(limit))
	srv := httptest.NewServer(r.d.Handler())
	defer srv.Close()
	var st report.TopicStatus
	kafkatest.Eventually(t, 60*time.Second, "the operation shows as blocked", func() bool {
		st = report.TopicStatus{}
		getJSON(t, srv.URL+"/v1/status?controlTopic="+rc.Ctl, &st)
		return len(st.Blocked) == 1
	})
	why := st.Blocked[0].Reason + "\nhint: " + strings.Join(st.Blocked[0].Hints, "\nhint: ")
	for _, want := range []string{"the job writes tombstones again", rc.Topic + "-1: a tombstone at offset 200, at or above the committed boundary 150",
		"hint: stop the job emitting tombstones"} {
		if !strings.Contains(why, want) {
			t.Errorf("blocked reason does not say %q:\n%s", want, why)
		}
	}
	if body := get(t, srv.URL+"/readyz"); !strings.Contains(body, `"tombstones"`) || !strings.Contains(body, "a tombstone at offset 200") {
		t.Errorf("/readyz does not say so:\n%s", body)
	}
	if body := get(t, srv.URL+"/metrics"); !strings.Contains(body, `kcleanup_tombstones_above_boundary{control_topic="`+rc.Ctl+`"} 1`) {
		t.Errorf("metrics do not say so")
	}
	// Nothing deleted while blocked: the data topic's retained offsets are its whole listing
	// (the alert KcleanupTopicGrowingWithoutCleanup reads them).
	end, err := c.EndOffsets(ctx, rc.Topic)
	if err != nil {
		t.Fatal(err)
	}
	var retained int64
	for p, e := range end {
		retained += e - rc.Plan.Offsets[p]
	}
	want := fmt.Sprintf(`kcleanup_data_retained_records{control_topic="%s",topic="%s"} %d`, rc.Ctl, rc.Topic, retained)
	kafkatest.Eventually(t, 10*time.Second, "the retained offsets are exported", func() bool { return strings.Contains(get(t, srv.URL+"/metrics"), want) })
	if got := stateOf(t, c, rc.Ctl, c2.PlanID); got != fsm.Committed {
		t.Errorf("C2 is %s, want COMMITTED (no DELETING)", got)
	}
	if start, err := c.StartOffsets(ctx, rc.Topic); err != nil || !start.Equal(rc.Plan.Offsets) {
		t.Errorf("log starts %v (%v), want C1's %v: nothing deleted", start, err, rc.Plan.Offsets)
	}

	// The fix: a recovery point after the job stopped emitting them, above the tombstone.
	c3 := workertest.MustPlan(t, "C3", rc.Topic, rc.ID, events.Offsets{0: 190, 1: 205})
	commit(t, c, rc.Ctl, c3)
	kafkatest.Eventually(t, 30*time.Second, "C3 is applied", func() bool {
		return stateOf(t, c, rc.Ctl, c3.PlanID) == fsm.Applied
	})
	kafkatest.Eventually(t, 10*time.Second, "the metric clears", func() bool {
		return strings.Contains(get(t, srv.URL+"/metrics"), `kcleanup_tombstones_above_boundary{control_topic="`+rc.Ctl+`"} 0`)
	})
}

// TestTombstoneWatchRunsWithNothingDue: the owner watches the data topic above the boundary on
// every pass, not only when an operation is due (issue 35): with every operation APPLIED, a
// tombstone the job writes again shows at once in the metric and /readyz, before anyone
// commits the next plan.
func TestTombstoneWatchRunsWithNothingDue(t *testing.T) {
	_, c, cl := workertest.RealBroker(t)
	rc := workertest.Applied(t, c, cl, "tombstone-idle") // C1 0=150 1=120 APPLIED: nothing pending
	r := startDaemon(t, c, WithControlTopics(rc.Ctl), WithGroupTimings(6*time.Second, 500*time.Millisecond, 10*time.Second),
		WithPollInterval(100*time.Millisecond), WithBackoff(50*time.Millisecond, time.Second), WithShutdownGrace(time.Second),
		WithLogger(testLogger(t)))
	srv := httptest.NewServer(r.d.Handler())
	defer srv.Close()
	metric := `kcleanup_tombstones_above_boundary{control_topic="` + rc.Ctl + `"} `
	kafkatest.Eventually(t, 30*time.Second, "the watch has read the data topic", func() bool {
		return strings.Contains(get(t, srv.URL+"/metrics"), metric+"0")
	})
	// Let the owner go idle (nothing pending, the control topic unchanged: no pass is made), so
	// that what reads the data topic next is the idle owner's watch.
	time.Sleep(3 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: rc.Topic, Partition: 0, Key: []byte("pruned"), Value: nil}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 30*time.Second, "the metric says so with nothing due", func() bool {
		return strings.Contains(get(t, srv.URL+"/metrics"), metric+"1")
	})
	if body := get(t, srv.URL+"/readyz"); !strings.Contains(body, "a tombstone at offset 200, at or above the committed boundary 150") {
		t.Errorf("/readyz does not say so:\n%s", body)
	}
}
