package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// Append never writes a record that would read back as another one: an
// actor that is not valid UTF-8 (Encode would write U+FFFD) is refused and
// the control topic stays as it was. worker.Actor is always valid UTF-8.
func TestAppendRefusesWhatWouldDecodeDifferently(t *testing.T) {
	c, _ := workertest.FakeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := workertest.DataTopic(t, c, "action-state", 1, 10)
	ctl := protocol.ControlTopicFor("action-state")
	proj := workertest.ControlProjection(t, ctx, c, ctl, "action-state")
	p := workertest.MustPlan(t, "C1", "action-state", id, events.Offsets{0: 5})

	if _, err := c.Append(ctx, ctl, workertest.Envelope(events.Planned, p, "host-\x8e/1")); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Fatalf("Append of an actor that is not valid UTF-8 = %v", err)
	}
	if err := proj.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if n := proj.State.Next(); n != 0 {
		t.Fatalf("the control topic holds %d records after a refused Append", n)
	}
	if _, err := c.Append(ctx, ctl, workertest.Envelope(events.Planned, p, worker.Actor())); err != nil {
		t.Fatalf("Append with worker.Actor() %q: %v", worker.Actor(), err)
	}
}
