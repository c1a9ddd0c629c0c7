package daemon

// The least-privilege ACLs of docs/deploy.md, as tests on the real broker over SASL_SSL with
// StandardAuthorizer and allow.everyone.if.no.acl.found=false.

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/clientconfig"
	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// aclEnv is one data topic with 100 records in each of two partitions, its control topic, a
// plan to offset 40/30, and a SCRAM user with no ACL yet.
type aclEnv struct {
	s          kafkatest.SecureBroker
	admin      *kgo.Client     // super user (PLAINTEXT)
	super      *worker.Cluster // kcleanup over PLAINTEXT, as a super user
	data, ctl  string
	plan       events.Plan
	user       string
	principal  string
	configPath string
}

func newACLEnv(t *testing.T) *aclEnv {
	t.Helper()
	s := kafkatest.Secure(t)
	e := &aclEnv{s: s, admin: kafkatest.Client(t, s.Plaintext)}
	var err error
	if e.super, err = worker.Connect(kgo.SeedBrokers(s.Plaintext)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.super.Close)
	e.data = kafkatest.NewTopic(t, e.admin, "acl-data", 2, map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1"})
	kafkatest.Produce(t, e.admin, e.data, 0, 100)
	kafkatest.Produce(t, e.admin, e.data, 1, 100)
	e.ctl = protocol.ControlTopicFor(e.data)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.super.EnsureControlTopic(ctx, e.ctl, e.data, worker.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = kadm.NewClient(e.admin).DeleteTopics(context.Background(), e.ctl) })
	info, err := e.super.TopicMetadata(ctx, e.data)
	if err != nil {
		t.Fatal(err)
	}
	if e.plan, err = events.BuildPlan("cp-acl", []events.Marker{{Topic: e.data, TopicID: info.ID, Offsets: events.Offsets{0: 40, 1: 30}}}); err != nil {
		t.Fatal(err)
	}
	var pw string
	e.user, pw = s.NewUser(t, e.admin, "kcleanup-worker")
	e.principal = "User:" + e.user
	e.configPath = s.SCRAMConfig(t, clientconfig.MechSCRAMSHA512, e.user, pw)
	return e
}

// workerACLs is the table of docs/deploy.md ("Kafka ACLs") for this environment.
func (e *aclEnv) workerACLs() []kafkatest.ACL {
	topic, group := kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup
	return []kafkatest.ACL{
		{Principal: e.principal, Resource: topic, Name: e.ctl, Operation: kmsg.ACLOperationDescribe},
		{Principal: e.principal, Resource: topic, Name: e.ctl, Operation: kmsg.ACLOperationRead},
		{Principal: e.principal, Resource: topic, Name: e.ctl, Operation: kmsg.ACLOperationWrite},
		{Principal: e.principal, Resource: group, Name: GroupFor(e.ctl), Operation: kmsg.ACLOperationRead},
		{Principal: e.principal, Resource: topic, Name: e.data, Operation: kmsg.ACLOperationDescribe},
		{Principal: e.principal, Resource: topic, Name: e.data, Operation: kmsg.ACLOperationDescribeConfigs},
		{Principal: e.principal, Resource: topic, Name: e.data, Operation: kmsg.ACLOperationDelete},
		{Principal: e.principal, Resource: topic, Name: e.ctl, Operation: kmsg.ACLOperationDescribeConfigs},
		{Principal: e.principal, Resource: topic, Name: e.data, Operation: kmsg.ACLOperationRead},
	}
}

// userCluster connects as the test's user over SASL_SSL, as kcleanup does.
func (e *aclEnv) userCluster(t *testing.T) *worker.Cluster {
	t.Helper()
	cfg, err := clientconfig.Load(e.configPath)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := cfg.Opts()
	if err != nil {
		t.Fatal(err)
	}
	c, err := worker.Connect(append([]kgo.Opt{kgo.SeedBrokers(e.s.SASLSSL)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	c.SetPrincipal(cfg.Principal())
	t.Cleanup(c.Close)
	return c
}

// snapshot is what "nothing written or deleted" compares: the control topic's end and the
// data topic's log starts.
func (e *aclEnv) snapshot(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	end, err := e.super.EndOffsets(ctx, e.ctl)
	if err != nil {
		t.Fatal(err)
	}
	start, err := e.super.StartOffsets(ctx, e.data)
	if err != nil {
		t.Fatal(err)
	}
	return "control end " + end.String() + ", data log start " + start.String()
}

func without(acls []kafkatest.ACL, drop kafkatest.ACL) []kafkatest.ACL {
	var out []kafkatest.ACL
	for _, a := range acls {
		if a != drop {
			out = append(out, a)
		}
	}
	return out
}

// TestApplyWithTheDocumentedACLs: apply, run by a principal with exactly the worker's ACLs,
// finishes the whole protocol over SASL_SSL.
func TestApplyWithTheDocumentedACLs(t *testing.T) {
	e := newACLEnv(t)
	kafkatest.Grant(t, e.admin, e.workerACLs()...)
	c := e.userCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	proj, err := c.Project(ctx, e.ctl)
	if err != nil {
		t.Fatalf("%+v", err)
	}
	defer proj.Close()
	out, err := c.Apply(ctx, proj, e.plan, worker.Options{Actor: "test"})
	if err != nil {
		t.Fatalf("apply: %+v", err)
	}
	if out.State != fsm.Applied || !out.LogStart.Equal(e.plan.Offsets) {
		t.Fatalf("outcome %+v", out)
	}
}

// TestWorkerWithTheDocumentedACLs: a worker with exactly the documented ACLs finishes an
// operation committed by someone else (here a super user's apply --no-wait).
func TestWorkerWithTheDocumentedACLs(t *testing.T) {
	e := newACLEnv(t)
	kafkatest.Grant(t, e.admin, e.workerACLs()...)
	commit(t, e.super, e.ctl, e.plan)
	c := e.userCluster(t)
	startDaemon(t, c, WithControlTopics(e.ctl), WithGroupTimings(6*time.Second, 500*time.Millisecond, 10*time.Second),
		WithPollInterval(100*time.Millisecond), WithBackoff(50*time.Millisecond, time.Second), WithShutdownGrace(time.Second),
		WithLogger(testLogger(t)))
	kafkatest.Eventually(t, 60*time.Second, "the worker applies the plan", func() bool {
		return stateOf(t, e.super, e.ctl, e.plan.PlanID) == fsm.Applied
	})
	if got := e.snapshot(t); !strings.Contains(got, "data log start 0=40 1=30") {
		t.Fatalf("after APPLIED: %s", got)
	}
}

// TestApplyWithoutEachDocumentedACL: for each ACL of the table that no other implies, apply
// by a principal without it stops before writing anything, with an error that names the
// operation, the resource and the principal, long before its deadline.
func TestApplyWithoutEachDocumentedACL(t *testing.T) {
	for _, tc := range []struct {
		name string
		drop func(e *aclEnv) kafkatest.ACL
	}{
		{"Read on the control topic", func(e *aclEnv) kafkatest.ACL { return e.workerACLs()[1] }},
		{"Write on the control topic", func(e *aclEnv) kafkatest.ACL { return e.workerACLs()[2] }},
		{"DescribeConfigs on the data topic", func(e *aclEnv) kafkatest.ACL { return e.workerACLs()[5] }},
		{"Delete on the data topic", func(e *aclEnv) kafkatest.ACL { return e.workerACLs()[6] }},
		{"DescribeConfigs on the control topic", func(e *aclEnv) kafkatest.ACL { return e.workerACLs()[7] }},
		{"Read on the data topic", func(e *aclEnv) kafkatest.ACL { return e.workerACLs()[8] }}, // the first plan's tombstone scan
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newACLEnv(t)
			drop := tc.drop(e)
			kafkatest.Grant(t, e.admin, without(e.workerACLs(), drop)...)
			before := e.snapshot(t)
			c := e.userCluster(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			err := func() error {
				proj, err := c.Project(ctx, e.ctl)
				if err != nil {
					return err
				}
				defer proj.Close()
				_, err = c.Apply(ctx, proj, e.plan, worker.Options{Actor: "test"})
				return err
			}()
			if err == nil {
				t.Fatal("apply succeeded without " + tc.name)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("apply waited for its deadline: %v", err)
			}
			op := aclOpName(drop.Operation)
			want := "grant " + op + " on topic " + drop.Name + " to " + e.principal
			if !strings.Contains(err.Error(), want) || !errors.Is(err, protocol.ErrUnauthorized) {
				t.Fatalf("error %q\ndoes not name %q (or is not ErrUnauthorized)", err, want)
			}
			if after := e.snapshot(t); after != before {
				t.Fatalf("something was written or deleted: before %s, after %s", before, after)
			}
		})
	}
}

// TestWorkerWithoutEachDocumentedACL: a worker whose principal lacks one of the documented
// ACLs leaves a committed operation as it is (no DELETING, nothing deleted), and says which
// grant is missing in /readyz, in /v1/status (the blocked operation's reason) and in the
// kcleanup_unauthorized metric. Without Read on the control topic it is not ready, nor
// without Read on the group: a replica the group does not admit owns nothing (issue #9).
func TestWorkerWithoutEachDocumentedACL(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drop  int  // index in workerACLs
		ready bool // /readyz answers 200
	}{
		{"Read on the control topic", 1, false},
		{"Write on the control topic", 2, true},
		{"DescribeConfigs on the data topic", 5, true},
		{"Delete on the data topic", 6, true},
		{"Read on the group", 3, false},
		{"DescribeConfigs on the control topic", 7, true},
		{"Read on the data topic", 8, true}, // the tombstone watch above the boundary
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newACLEnv(t)
			drop := e.workerACLs()[tc.drop]
			kafkatest.Grant(t, e.admin, without(e.workerACLs(), drop)...)
			commit(t, e.super, e.ctl, e.plan)
			before := e.snapshot(t)
			c := e.userCluster(t)
			r := startDaemon(t, c, WithControlTopics(e.ctl), WithGroupTimings(6*time.Second, 500*time.Millisecond, 10*time.Second),
				WithPollInterval(100*time.Millisecond), WithBackoff(50*time.Millisecond, time.Second), WithShutdownGrace(time.Second),
				WithLogger(testLogger(t)))
			srv := httptest.NewServer(r.d.Handler())
			defer srv.Close()
			op := aclOpName(drop.Operation)
			want := "grant " + op + " on " + strings.ToLower(drop.Resource.String()) + " " + drop.Name + " to " + e.principal
			var body string
			var code int
			defer func() { t.Logf("/readyz %d: %s", code, body) }()
			kafkatest.Eventually(t, 60*time.Second, "/readyz names "+want, func() bool {
				code, body = getBody(t, srv.URL+"/readyz")
				return strings.Contains(body, want) && (code == http.StatusOK) == tc.ready
			})
			if _, metrics := getBody(t, srv.URL+"/metrics"); !strings.Contains(metrics, `kcleanup_unauthorized{control_topic="`+e.ctl+`"} 1`) {
				t.Errorf("metrics do not say unauthorized:\n%s", metrics)
			}
			if tc.ready && drop.Resource != kmsg.ACLResourceTypeGroup { // the owner knows the blocked operation; status shows it
				if _, status := getBody(t, srv.URL+"/v1/status?all=true"); !strings.Contains(status, want) {
					t.Errorf("/v1/status does not name %q:\n%s", want, status)
				}
			}
			if got := stateOf(t, e.super, e.ctl, e.plan.PlanID); got != fsm.Committed {
				t.Errorf("state %s, want COMMITTED (nothing written)", got)
			}
			if after := e.snapshot(t); after != before {
				t.Errorf("something was written or deleted: before %s, after %s", before, after)
			}
		})
	}
}

func aclOpName(op kmsg.ACLOperation) string {
	if op == kmsg.ACLOperationDescribeConfigs {
		return "DescribeConfigs"
	}
	return strings.Title(strings.ToLower(op.String())) //nolint:staticcheck // ASCII
}

func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
