package daemon

// The recovery gate's cases of issue #9 through POST /v1/validate on a running worker, on the
// real broker: the same verdicts as `kcleanup validate` (cmd/kcleanup/validate_gate_test.go),
// 409 where restoring is proved unsafe and 503 where the gate cannot tell.

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/gate"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/topicconfig"
)

// post asks the worker and decodes the verdict.
func post(t *testing.T, url string, rc workertest.RealCase, id string, offs events.Offsets) (int, gate.Verdict) {
	t.Helper()
	a := do(t, "POST", url+"/v1/validate?controlTopic="+rc.Ctl, marker(rc.Topic, id, offs))
	var v gate.Verdict
	a.decode(t, &v)
	if v.SchemaVersion != gate.SchemaVersion || v.Hints == nil || v.Refusals == nil || v.Notes == nil {
		t.Fatalf("answer %d is not a verdict document:\n%s", a.code, a.body)
	}
	return a.code, v
}

func wantVerdict(t *testing.T, code int, v gate.Verdict, wantCode int, reason gate.Reason, fragments ...string) {
	t.Helper()
	if code != wantCode || v.Reason != reason || v.Allowed != (wantCode == 200) || v.Class.HTTPStatus() != wantCode {
		t.Fatalf("answer %d %s (%s), want %d %s: %s", code, v.Reason, v.Class, wantCode, reason, v.Message)
	}
	for _, f := range fragments {
		if !strings.Contains(v.Message+strings.Join(v.Notes, "\n"), f) {
			t.Errorf("answer does not say %q: %s %q", f, v.Message, v.Notes)
		}
	}
}

func TestValidateOnAWorkerOfTheRealBroker(t *testing.T) {
	bootstrap, c, cl := workertest.RealBroker(t)
	adm := kadm.NewClient(cl)

	live := workertest.Applied(t, c, cl, "gate-live")
	deleted := workertest.Applied(t, c, cl, "gate-deleted")
	recreated := workertest.Applied(t, c, cl, "gate-recreated")

	empty := workertest.RealCase{}
	empty.Topic, empty.ID = workertest.RealDataTopic(t, cl, "gate-empty")
	empty.Ctl = protocol.ControlTopicFor(empty.Topic)
	kafkatest.CreateTopic(t, cl, empty.Ctl, 1, topicconfig.CreateSettings())

	compactOnly := workertest.RealCase{}
	compactOnly.Topic, compactOnly.ID = workertest.RealDataTopic(t, cl, "gate-compact-only")
	compactOnly.Ctl = protocol.ControlTopicFor(compactOnly.Topic)
	kafkatest.CreateTopic(t, cl, compactOnly.Ctl, 1, map[string]string{"cleanup.policy": "compact"})

	twoPartitions := workertest.RealCase{}
	twoPartitions.Topic, twoPartitions.ID = workertest.RealDataTopic(t, cl, "gate-two")
	twoPartitions.Ctl = protocol.ControlTopicFor(twoPartitions.Topic)
	kafkatest.CreateTopic(t, cl, twoPartitions.Ctl, 2, map[string]string{"cleanup.policy": "delete"})

	flink := workertest.RealCase{}
	flink.Topic, flink.ID = workertest.RealDataTopic(t, cl, "gate-flink")
	flink.Ctl = protocol.ControlTopicFor(flink.Topic)
	kafkatest.CreateTopic(t, cl, flink.Ctl, 1, topicconfig.CreateSettings())
	fplan := workertest.MustPlan(t, "chk-7", flink.Topic, flink.ID, events.Offsets{0: 150, 1: 120})
	ctx, cancel := context.WithTimeout(context.Background(), workertest.RealTimeout)
	defer cancel()
	value := `{"schemaVersion":1,"status":"COMMITTED","plan":` + strings.TrimSpace(string(fplan.Encode())) + `}`
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: flink.Ctl, Partition: 0, Key: []byte(fplan.PlanID), Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	cases := []workertest.RealCase{live, deleted, recreated, empty, compactOnly, twoPartitions, flink}
	var ctls []string
	for _, rc := range cases {
		ctls = append(ctls, rc.Ctl)
	}
	r := startDaemon(t, c, WithControlTopics(ctls...), WithBootstrap(bootstrap), WithLogger(testLogger(t)), WithShutdownGrace(time.Second))
	srv := httptest.NewServer(r.d.Handler())
	t.Cleanup(srv.Close)
	kafkatest.Eventually(t, workertest.RealTimeout, "ready", func() bool { return do(t, "GET", srv.URL+"/readyz", "").code == 200 })

	t.Run("allowed, then refused below the boundary and above the high watermark", func(t *testing.T) {
		code, v := post(t, srv.URL, live, live.ID, events.Offsets{0: 150, 1: 120})
		wantVerdict(t, code, v, 200, "")
		code, v = post(t, srv.URL, live, live.ID, events.Offsets{0: 100, 1: 120})
		wantVerdict(t, code, v, 409, gate.BelowBoundary,
			fmt.Sprintf("Cannot restore Kafka action state for %s-0 from offset 100 because the committed cleanup boundary is 150 (set by plan %s)", live.Topic, live.Plan.PlanID))
		code, v = post(t, srv.URL, live, live.ID, events.Offsets{0: 250, 1: 120})
		wantVerdict(t, code, v, 409, gate.OutOfRange, "requested offset 250 is outside the available range [150, 200]")
	})
	t.Run("records deleted outside kcleanup", func(t *testing.T) {
		offs := events.Offsets{0: 160, 1: 130}
		code, v := post(t, srv.URL, live, live.ID, offs)
		wantVerdict(t, code, v, 200, "")
		to := kadm.Offsets{}
		to.AddOffset(live.Topic, 0, 170, -1)
		if resp, err := adm.DeleteRecords(ctx, to); err != nil || resp.Error() != nil {
			t.Fatalf("delete records: %v %v", err, resp.Error())
		}
		code, v = post(t, srv.URL, live, live.ID, offs)
		wantVerdict(t, code, v, 409, gate.OutOfRange, "requested offset 160 is outside the available range [170, 200]")
	})
	t.Run("data topic deleted after apply", func(t *testing.T) {
		if _, err := adm.DeleteTopic(ctx, deleted.Topic); err != nil {
			t.Fatal(err)
		}
		kafkatest.Eventually(t, workertest.RealTimeout, "refused", func() bool {
			code, v := post(t, srv.URL, deleted, deleted.ID, events.Offsets{0: 150, 1: 120})
			return code == 409 && v.Reason == gate.DataTopicMissing
		})
	})
	t.Run("data topic deleted and recreated", func(t *testing.T) {
		if _, err := adm.DeleteTopic(ctx, recreated.Topic); err != nil {
			t.Fatal(err)
		}
		kafkatest.Eventually(t, workertest.RealTimeout, "recreated", func() bool {
			resp, err := adm.CreateTopic(ctx, 2, -1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact,delete")}, recreated.Topic)
			return err == nil && resp.Err == nil
		})
		var code int
		var v gate.Verdict
		// Until the broker's metadata shows the new incarnation, the topic is missing (409 too).
		kafkatest.Eventually(t, workertest.RealTimeout, "the new incarnation seen", func() bool {
			code, v = post(t, srv.URL, recreated, recreated.ID, events.Offsets{0: 150, 1: 120})
			return code == 409 && v.Reason != gate.DataTopicMissing
		})
		wantVerdict(t, code, v, 409, gate.TopicRecreated, "the recovery point is from topic ID "+recreated.ID+" but the topic now has ID ")
	})
	t.Run("an empty control topic as init makes it", func(t *testing.T) {
		code, v := post(t, srv.URL, empty, empty.ID, events.Offsets{0: 0, 1: 0})
		wantVerdict(t, code, v, 200, "", "control topic "+empty.Ctl+" is empty: no cleanup boundary is committed")
		code, v = post(t, srv.URL, empty, empty.ID, events.Offsets{0: 201, 1: 0})
		wantVerdict(t, code, v, 409, gate.OutOfRange, "[0, 200]")
	})
	t.Run("a control topic with cleanup.policy=compact only", func(t *testing.T) {
		code, v := post(t, srv.URL, compactOnly, compactOnly.ID, events.Offsets{0: 0, 1: 0})
		wantVerdict(t, code, v, 503, gate.ControlTopicSettings, "min.compaction.lag.ms is 0")
		if !strings.HasSuffix(v.Hints[0], "--entity-name "+compactOnly.Ctl+" --add-config min.compaction.lag.ms=604800000") ||
			!strings.Contains(v.Hints[0], "--bootstrap-server "+bootstrap) {
			t.Errorf("hints %q", v.Hints)
		}
	})
	t.Run("not a control topic", func(t *testing.T) {
		code, v := post(t, srv.URL, twoPartitions, twoPartitions.ID, events.Offsets{0: 0, 1: 0})
		wantVerdict(t, code, v, 503, gate.ControlTopicPartitions, "has 2 partitions")
	})
	t.Run("a control topic of Flink Agents' format", func(t *testing.T) {
		// Folded by the job's own rules: its COMMITTED boundary holds.
		code, v := post(t, srv.URL, flink, flink.ID, events.Offsets{0: 0, 1: 0})
		wantVerdict(t, code, v, 409, gate.BelowBoundary, fplan.PlanID)
		code, v = post(t, srv.URL, flink, flink.ID, events.Offsets{0: 150, 1: 120})
		wantVerdict(t, code, v, 200, "", "is in Flink Agents' format")
	})
}
