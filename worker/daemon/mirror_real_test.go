package daemon

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// TestWorkerReportsAMirrorItCannotWrite: a worker whose principal may read
// the attached Flink Agents mirror but not write it says so, with the
// grant, in /readyz (still ready: it serves status and validation), in
// /v1/status (mirror.standing cannot-be-written) and in the mirror
// metrics; once the grant is added, all three show the mirror in step.
// Real broker, SASL_SSL with ACLs.
func TestWorkerReportsAMirrorItCannotWrite(t *testing.T) {
	e := newACLEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mirror := e.data + ".flink-cleanup"
	if _, err := e.super.CreateMirrorTopic(ctx, mirror, 1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = kadm.NewClient(e.admin).DeleteTopics(context.Background(), mirror) })

	// The plan applied, the mirror holding it, the mirror attached.
	proj, err := e.super.Project(ctx, e.ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	if _, err := e.super.Apply(ctx, proj, e.plan, worker.Options{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	for _, status := range []string{"COMMITTED", "APPLIED"} {
		r := &kgo.Record{Topic: mirror, Key: []byte(e.plan.PlanID), Value: kafkatest.FlinkRecord(status, e.plan)}
		if err := e.admin.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	info, err := e.super.TopicMetadata(ctx, mirror)
	if err != nil {
		t.Fatal(err)
	}
	env := events.NewMirrorEvent(events.MirrorAttached, events.Mirror{Topic: mirror, TopicID: info.ID, Reason: "test"}, time.Now().UTC(), "test")
	if v, err := proj.Decide(ctx, env); err != nil || v.Outcome != "accepted" {
		t.Fatalf("MIRROR_ATTACHED: %+v %v", v, err)
	}

	topic := kmsg.ACLResourceTypeTopic
	readOnly := []kafkatest.ACL{
		{Principal: e.principal, Resource: topic, Name: mirror, Operation: kmsg.ACLOperationDescribe},
		{Principal: e.principal, Resource: topic, Name: mirror, Operation: kmsg.ACLOperationRead},
		{Principal: e.principal, Resource: topic, Name: mirror, Operation: kmsg.ACLOperationDescribeConfigs},
	}
	write := kafkatest.ACL{Principal: e.principal, Resource: topic, Name: mirror, Operation: kmsg.ACLOperationWrite}
	kafkatest.Grant(t, e.admin, append(e.workerACLs(), readOnly...)...)
	r := startDaemon(t, e.userCluster(t), WithControlTopics(e.ctl), WithGroupTimings(6*time.Second, 500*time.Millisecond, 10*time.Second),
		WithPollInterval(100*time.Millisecond), WithBackoff(50*time.Millisecond, time.Second), WithShutdownGrace(time.Second),
		WithBootstrap(e.s.SASLSSL), WithLogger(testLogger(t)))
	srv := httptest.NewServer(r.d.Handler())
	defer srv.Close()

	want := "grant Write on topic " + mirror + " to " + e.principal
	var code int
	var body string
	kafkatest.Eventually(t, 60*time.Second, "/readyz says the mirror cannot be written: "+want, func() bool {
		code, body = getBody(t, srv.URL+"/readyz")
		return code == http.StatusOK && strings.Contains(body, `"mirror"`) && strings.Contains(body, "cannot-be-written") && strings.Contains(body, want)
	})
	labels := `{control_topic="` + e.ctl + `",mirror_topic="` + mirror + `"}`
	if _, m := getBody(t, srv.URL+"/metrics"); !strings.Contains(m, "kcleanup_mirror_writable"+labels+" 0") ||
		!strings.Contains(m, "kcleanup_mirror_in_step"+labels+" 0") || !strings.Contains(m, "kcleanup_mirror_lag"+labels+" 70") {
		t.Errorf("metrics of an unwritable mirror:\n%s", grepLines(m, "kcleanup_mirror"))
	}
	_, st := getBody(t, srv.URL+"/v1/status")
	if !strings.Contains(st, `"standing": "cannot-be-written"`) || !strings.Contains(st, want) {
		t.Errorf("/v1/status does not say the mirror cannot be written:\n%s", st)
	}
	workertest.ValidateWorkerStatus(t, []byte(st))

	kafkatest.Grant(t, e.admin, write)
	kafkatest.Eventually(t, 60*time.Second, "/readyz no longer names the mirror", func() bool {
		code, body = getBody(t, srv.URL+"/readyz")
		return code == http.StatusOK && !strings.Contains(body, `"mirror"`)
	})
	if _, m := getBody(t, srv.URL+"/metrics"); !strings.Contains(m, "kcleanup_mirror_writable"+labels+" 1") ||
		!strings.Contains(m, "kcleanup_mirror_in_step"+labels+" 1") || !strings.Contains(m, "kcleanup_mirror_lag"+labels+" 0") {
		t.Errorf("metrics of a mirror in step:\n%s", grepLines(m, "kcleanup_mirror"))
	}
	if _, st := getBody(t, srv.URL+"/v1/status?all=true"); !strings.Contains(st, `"standing": "in-step"`) {
		t.Errorf("/v1/status does not show the mirror in step:\n%s", st)
	} else {
		workertest.ValidateWorkerStatus(t, []byte(st))
	}

	// What a check of the mirror costs a view (it runs after every read
	// that folded records, else every mirrorCheckEvery).
	var took []time.Duration
	for range 5 {
		start := time.Now()
		if _, ok, err := e.super.AssessMirror(ctx, protocol.MirrorControlOf(proj.State), true, e.s.Plaintext); err != nil || !ok {
			t.Fatalf("AssessMirror: %v %v", ok, err)
		}
		took = append(took, time.Since(start))
	}
	t.Logf("one check of the mirror (metadata, configs, read to the end, permissions), five times: %v", took)
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestWorkerSaysWhenTheMirrorCannotBeRead: while another producer's open
// transaction holds the mirror's last stable offset, the mirror cannot be
// read to its end (the job's reader waits the same way): the worker counts
// kcleanup_mirror_errors_total and /readyz says it is held and by whose
// transaction (still ready; a foreign producer is not fenced); once the
// transaction is aborted the mirror is in step again. Real broker.
func TestWorkerSaysWhenTheMirrorCannotBeRead(t *testing.T) {
	b, c, cl := workertest.RealBroker(t)
	rc := workertest.Applied(t, c, cl, "mirror-hold")
	ctx, cancel := context.WithTimeout(context.Background(), 2*workertest.RealTimeout)
	defer cancel()
	mirror := rc.Topic + ".flink"
	if _, err := c.CreateMirrorTopic(ctx, mirror, 1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = kadm.NewClient(cl).DeleteTopics(context.Background(), mirror) })
	proj, err := c.Project(ctx, rc.Ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	if _, err := c.AttachMirror(ctx, proj, mirror, "test", worker.Options{Actor: "test"}); err != nil {
		t.Fatal(err)
	}

	r := startDaemon(t, c, WithControlTopics(rc.Ctl), WithGroupTimings(6*time.Second, 500*time.Millisecond, 10*time.Second),
		WithPollInterval(100*time.Millisecond), WithReadTimeout(2*time.Second), WithShutdownGrace(time.Second), WithLogger(testLogger(t)))
	srv := httptest.NewServer(r.d.Handler())
	defer srv.Close()
	labels := `{control_topic="` + rc.Ctl + `",mirror_topic="` + mirror + `"}`
	kafkatest.Eventually(t, 60*time.Second, "the mirror in step", func() bool {
		_, m := getBody(t, srv.URL+"/metrics")
		return strings.Contains(m, "kcleanup_mirror_in_step"+labels+" 1")
	})

	hold := kafkatest.Client(t, b, kgo.TransactionalID("test-hold-"+mirror), kgo.TransactionTimeout(time.Minute))
	if err := hold.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	rec := &kgo.Record{Topic: mirror, Key: []byte(rc.Plan.PlanID), Value: kafkatest.FlinkRecord("APPLIED", rc.Plan)}
	if err := hold.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var code int
	var body string
	kafkatest.Eventually(t, 60*time.Second, "/readyz says whose transaction holds the mirror", func() bool {
		code, body = getBody(t, srv.URL+"/readyz")
		return code == http.StatusOK && strings.Contains(body, "held by an open transaction of a foreign producer, transactional ID test-hold-"+mirror)
	})
	if _, m := getBody(t, srv.URL+"/metrics"); strings.Contains(m, `kcleanup_mirror_errors_total{control_topic="`+rc.Ctl+`"} 0`) ||
		!strings.Contains(m, `kcleanup_mirror_errors_total{control_topic="`+rc.Ctl+`"}`) {
		t.Errorf("no mirror error counted:\n%s", grepLines(m, "kcleanup_mirror"))
	}

	if err := hold.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 60*time.Second, "/readyz no longer names the mirror", func() bool {
		code, body = getBody(t, srv.URL+"/readyz")
		return code == http.StatusOK && !strings.Contains(body, `"mirror"`)
	})
}
