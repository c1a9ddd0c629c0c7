package daemon

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
)

// The fleet's own maintenance (a repair of an overwritten key, a retraction
// tombstone) carries headers naming the worker and why: status and metrics
// show it as maintenance, not as rejected records; the overwrite that
// caused the repair stays a rejected record, written by someone else.
func TestMaintenanceIsNotABadWrite(t *testing.T) {
	c := fakeGroupCluster(t)
	id, ctl := setup(t, c, "action-state")
	plan := workertest.MustPlan(t, "C1", "action-state", id, events.Offsets{0: 150, 1: 120})
	commit(t, c, ctl, plan)
	ctx := context.Background()
	// Someone else: a record kcleanup rejects (a grace period old, so a
	// worker retracts it at once) and a tombstone over an accepted key.
	old := &kgo.Record{Topic: ctl, Partition: 0, Key: []byte("not-a-key"), Value: []byte("{}"), Timestamp: time.Now().Add(-2 * protocol.RetractionGrace)}
	over := &kgo.Record{Topic: ctl, Partition: 0, Key: []byte(events.Key(plan.PlanID, events.Planned))}
	if err := c.Client().ProduceSync(ctx, old, over).FirstErr(); err != nil {
		t.Fatal(err)
	}

	r := startDaemon(t, c, append(fastOptions(t, ctl), WithActor("worker/test-7"))...)
	srv := httptest.NewServer(r.d.Handler())
	defer srv.Close()
	var st report.TopicStatus
	kafkatest.Eventually(t, 20*time.Second, "a repair and a retraction by the worker", func() bool {
		st = report.TopicStatus{}
		getJSON(t, srv.URL+"/v1/status?controlTopic="+ctl, &st)
		return st.MaintenanceCounts[projector.MaintenanceRepair] > 0 && st.MaintenanceCounts[projector.MaintenanceRetraction] == 1
	})
	var retraction *report.MaintenanceRecord
	for i, m := range st.Maintenance {
		if m.Kind == projector.MaintenanceRetraction {
			retraction = &st.Maintenance[i]
		}
	}
	if retraction == nil || retraction.Key != "not-a-key" || retraction.Actor != "worker/test-7" ||
		!strings.Contains(retraction.Reason, "every record was rejected") {
		t.Fatalf("maintenance %+v: want the retraction of not-a-key by worker/test-7 with its reason", st.Maintenance)
	}
	for _, rj := range st.Rejected {
		if rj.Reason == projector.ReasonTombstone {
			t.Errorf("the worker's retraction tombstone is listed as rejected: %+v", rj)
		}
	}
	foundOverwrite := false
	for _, rj := range st.Rejected {
		foundOverwrite = foundOverwrite || rj.Reason == projector.ReasonOverwritesAccepted
	}
	if !foundOverwrite {
		t.Errorf("the other writer's overwrite is not listed as rejected: %+v", st.Rejected)
	}
	m := get(t, srv.URL+"/metrics")
	for _, want := range []string{
		`kcleanup_maintenance_records_total{control_topic="` + ctl + `",kind="retraction"} 1`,
		`kcleanup_rejected_records_total{control_topic="` + ctl + `",reason="tombstone"} 0`,
		`kcleanup_rejected_records_total{control_topic="` + ctl + `",reason="overwrites-accepted"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
