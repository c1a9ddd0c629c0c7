package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// withMirror creates a mirror topic and attaches it (as a super user).
func (e *aclEnv) withMirror(t *testing.T) string {
	t.Helper()
	mirror := kafkatest.NewTopic(t, e.admin, e.data+".flink", 1, map[string]string{"cleanup.policy": "compact"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	proj, err := e.super.Project(ctx, e.ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	if _, err := e.super.AttachMirror(ctx, proj, mirror, "acl test", worker.Options{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	return mirror
}

// mirrorACLs is the mirror's part of docs/deploy.md ("Kafka ACLs").
func (e *aclEnv) mirrorACLs(mirror string) []kafkatest.ACL {
	topic := kmsg.ACLResourceTypeTopic
	return []kafkatest.ACL{
		{Principal: e.principal, Resource: topic, Name: mirror, Operation: kmsg.ACLOperationRead},
		{Principal: e.principal, Resource: topic, Name: mirror, Operation: kmsg.ACLOperationWrite},
		{Principal: e.principal, Resource: topic, Name: mirror, Operation: kmsg.ACLOperationDescribeConfigs},
		{Principal: e.principal, Resource: kmsg.ACLResourceTypeTransactionalId, Name: worker.MirrorTransactionalID(mirror), Operation: kmsg.ACLOperationWrite},
	}
}

func (e *aclEnv) applyAsUser(t *testing.T) error {
	t.Helper()
	c := e.userCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	proj, err := c.Project(ctx, e.ctl)
	if err != nil {
		return err
	}
	defer proj.Close()
	_, err = c.Apply(ctx, proj, e.plan, worker.Options{Actor: "test"})
	return err
}

// TestApplyWithTheDocumentedMirrorACLs: with the worker's ACLs and the
// mirror's (docs/deploy.md), apply over SASL_SSL finishes the protocol,
// the mirror's records included.
func TestApplyWithTheDocumentedMirrorACLs(t *testing.T) {
	e := newACLEnv(t)
	mirror := e.withMirror(t)
	kafkatest.Grant(t, e.admin, append(e.workerACLs(), e.mirrorACLs(mirror)...)...)
	if err := e.applyAsUser(t); err != nil {
		t.Fatalf("apply: %+v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := e.super.ReadMirror(ctx, mirror)
	if err != nil {
		t.Fatal(err)
	}
	ops := v.Fold.Operations()
	if len(ops) != 1 || ops[0].Plan.PlanID != e.plan.PlanID || ops[0].Status != flinkagents.Applied {
		t.Fatalf("mirror holds %+v, want the plan APPLIED", ops)
	}
}

// TestApplyWithoutEachMirrorACL: without one of the mirror's ACLs apply
// deletes nothing and names the grant. The topic ACLs are checked before
// COMMITTED (nothing written); the transactional ID's cannot be asked of
// Metadata, so that one stops the run after COMMITTED, at the first
// mirror write, before DELETING.
func TestApplyWithoutEachMirrorACL(t *testing.T) {
	for i, name := range []string{"Read on the mirror", "Write on the mirror", "DescribeConfigs on the mirror", "Write on the transactional ID"} {
		t.Run(name, func(t *testing.T) {
			e := newACLEnv(t)
			mirror := e.withMirror(t)
			drop := e.mirrorACLs(mirror)[i]
			kafkatest.Grant(t, e.admin, append(e.workerACLs(), without(e.mirrorACLs(mirror), drop)...)...)
			before := e.snapshot(t)
			err := e.applyAsUser(t)
			if err == nil {
				t.Fatal("apply succeeded without " + name)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("apply waited for its deadline: %v", err)
			}
			kind := "topic"
			if drop.Resource == kmsg.ACLResourceTypeTransactionalId {
				kind = "transactional-id"
			}
			want := "grant " + aclOpName(drop.Operation) + " on " + kind + " " + drop.Name + " to " + e.principal
			if !strings.Contains(err.Error(), want) || !errors.Is(err, protocol.ErrBlocked) {
				t.Fatalf("error %q\ndoes not name %q (or is not ErrBlocked)", err, want)
			}
			after := e.snapshot(t)
			if kind == "topic" && after != before {
				t.Fatalf("something was written or deleted: before %s, after %s", before, after)
			}
			if !strings.Contains(after, "data log start 0=0 1=0") {
				t.Fatalf("something was deleted: %s", after)
			}
			if st := stateOf(t, e.super, e.ctl, e.plan.PlanID); kind != "topic" && st != fsm.Committed {
				t.Fatalf("plan is %s, want COMMITTED (blocked before DELETING)", st)
			}
		})
	}
}
