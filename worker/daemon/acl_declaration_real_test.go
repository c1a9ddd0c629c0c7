package daemon

// Issue 35 item 8: the reduced ACL set of docs/deploy.md ("Kafka ACLs"), without Read on the
// data topic, works once an operator declares that the job writes no tombstones, over SASL_SSL
// on the real broker with StandardAuthorizer.

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// reducedACLs is the table without Read on the data topic.
func (e *aclEnv) reducedACLs() []kafkatest.ACL {
	return without(e.workerACLs(), kafkatest.ACL{Principal: e.principal, Resource: kmsg.ACLResourceTypeTopic, Name: e.data, Operation: kmsg.ACLOperationRead})
}

func (e *aclEnv) apply(t *testing.T, c *worker.Cluster) (worker.Outcome, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	proj, err := c.Project(ctx, e.ctl)
	if err != nil {
		return worker.Outcome{}, err
	}
	defer proj.Close()
	return c.Apply(ctx, proj, e.plan, worker.Options{Actor: "test"})
}

func (e *aclEnv) declare(t *testing.T, c *worker.Cluster, req worker.DeclarationRequest) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	proj, err := c.Project(ctx, e.ctl)
	if err != nil {
		t.Fatalf("%+v", err)
	}
	defer proj.Close()
	if _, err := c.Declare(ctx, proj, req, worker.Options{Actor: "ops"}); err != nil {
		t.Fatalf("declare as %s (no Read on the data topic): %+v", e.principal, err)
	}
}

// TestApplyWithTheReducedACLsUnderADeclaration: apply by a principal without Read on the data
// topic is refused before anything is written, naming that ACL and the declaration; a
// declaration of the default kind (from the topic's end now) still leaves the plan's range to
// read, so apply is still refused; one that covers the records already there (--since start),
// written by the same principal, lets the apply commit, delete and reach APPLIED.
func TestApplyWithTheReducedACLsUnderADeclaration(t *testing.T) {
	e := newACLEnv(t)
	kafkatest.Grant(t, e.admin, e.reducedACLs()...)
	c := e.userCluster(t)
	want := "grant Read on topic " + e.data + " to " + e.principal
	refused := func(when string) {
		before := e.snapshot(t)
		_, err := e.apply(t, c)
		if err == nil || !errors.Is(err, protocol.ErrUnauthorized) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "declare-none") {
			t.Fatalf("%s: apply without Read on the data topic: %v\nwant ErrUnauthorized naming %q and the declaration", when, err, want)
		}
		if after := e.snapshot(t); after != before {
			t.Fatalf("%s: something was written or deleted: before %s, after %s", when, before, after)
		}
	}
	refused("no declaration")
	e.declare(t, c, worker.DeclarationRequest{Topic: e.data, Reason: "cleanup mode rejects tombstones"})
	refused("declared from the end only")
	e.declare(t, c, worker.DeclarationRequest{Topic: e.data, FromStart: true, Reason: "the job never wrote tombstones"})
	out, err := e.apply(t, c)
	if err != nil {
		t.Fatalf("apply under the declaration: %+v", err)
	}
	if out.State != fsm.Applied || !out.LogStart.Equal(e.plan.Offsets) {
		t.Fatalf("outcome %+v", out)
	}
}

// TestWorkerWithTheReducedACLsUnderADeclaration: a worker without Read on the data topic
// leaves a committed operation as it is and says which grant is missing (/readyz); once an
// operator declares (--since start) it deletes and appends APPLIED, with no Read granted.
func TestWorkerWithTheReducedACLsUnderADeclaration(t *testing.T) {
	e := newACLEnv(t)
	kafkatest.Grant(t, e.admin, e.reducedACLs()...)
	commit(t, e.super, e.ctl, e.plan)
	c := e.userCluster(t)
	r := startDaemon(t, c, WithControlTopics(e.ctl), WithGroupTimings(6*time.Second, 500*time.Millisecond, 10*time.Second),
		WithPollInterval(100*time.Millisecond), WithBackoff(50*time.Millisecond, time.Second), WithShutdownGrace(time.Second),
		WithLogger(testLogger(t)))
	srv := httptest.NewServer(r.d.Handler())
	defer srv.Close()
	want := "grant Read on topic " + e.data + " to " + e.principal
	kafkatest.Eventually(t, 60*time.Second, "/readyz names "+want, func() bool {
		_, body := getBody(t, srv.URL+"/readyz")
		return strings.Contains(body, want)
	})
	if got := stateOf(t, e.super, e.ctl, e.plan.PlanID); got != fsm.Committed {
		t.Fatalf("state %s before the declaration, want COMMITTED", got)
	}
	e.declare(t, c, worker.DeclarationRequest{Topic: e.data, FromStart: true, Reason: "the job never wrote tombstones"})
	kafkatest.Eventually(t, 60*time.Second, "the worker applies the plan under the declaration", func() bool {
		return stateOf(t, e.super, e.ctl, e.plan.PlanID) == fsm.Applied
	})
	if got := e.snapshot(t); !strings.Contains(got, "data log start 0=40 1=30") {
		t.Fatalf("after APPLIED: %s", got)
	}
	var status string
	defer func() {
		if t.Failed() {
			t.Logf("/v1/status: %s", status)
		}
	}()
	kafkatest.Eventually(t, 30*time.Second, "/v1/status shows the declaration", func() bool {
		_, status = getBody(t, srv.URL+"/v1/status")
		return strings.Contains(status, `"noTombstones": {`) && strings.Contains(status, `"inForce": true`) && strings.Contains(status, `"reason": "the job never wrote tombstones"`)
	})
}
