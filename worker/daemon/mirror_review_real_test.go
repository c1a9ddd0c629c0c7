package daemon_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// TestReviewMirrorTooSmallForThePlanCommitsNothing: an apply checks the
// attached mirror before COMMITTED, so that a plan the mirror cannot hold
// is refused with nothing committed. A mirror whose max.message.bytes is
// below the plan's Flink Agents record (an operator-made or adopted Flink
// Agents topic keeps the broker's 1 MB default, the control topic takes
// 16 MB) must be caught by that check too: otherwise the plan is committed
// on the control topic and can never be mirrored, so it is never deleted,
// and kcleanup's gate refuses recovery points the job allows for good.
func TestReviewMirrorTooSmallForThePlanCommitsNothing(t *testing.T) {
	s := newScene(t)
	cl := kafkatest.Client(t, s.bootstrap)
	mirror := kafkatest.NewTopic(t, cl, s.topic+".flink", 1, map[string]string{"cleanup.policy": "compact", "max.message.bytes": "1024"})
	s.attach(mirror)
	p := s.plan(incompressible(1500), events.Offsets{0: 100, 1: 50})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var applyErr error
	s.withProjection(func(_ context.Context, proj *worker.Projection) {
		_, applyErr = s.c.Apply(ctx, proj, p, worker.Options{Actor: "test", Bootstrap: s.bootstrap})
	})
	if applyErr == nil {
		t.Fatalf("apply of a plan the mirror cannot hold succeeded")
	}
	t.Logf("apply refused: %v (hints %v)", applyErr, errors.GetAllHints(applyErr))
	if b := s.boundary(); len(b) > 0 {
		job, err := readJobTopic(t, s.bootstrap, mirror).boundary()
		t.Fatalf("plan committed on the control topic (boundary %v) but the mirror cannot hold it: the job's boundary is %v (%v)", b, events.Offsets(job), err)
	}
	// The operator raises the mirror's limit as the hint says: the same
	// plan is applied and the job's boundary is kcleanup's.
	v := "1048588"
	rs, err := kadm.NewClient(cl).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &v}}, mirror)
	if err == nil {
		_, err = rs.On(mirror, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	s.apply(p)
	s.requireMirrorAgrees(mirror)
	s.checkLogStart(p.Offsets)
}

// incompressible is a recovery point of n random hex characters (the
// producer compresses batches; a repeated string would fit anywhere).
func incompressible(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return "checkpoint-" + hex.EncodeToString(b)
}

// TestReviewMirrorForeignTransaction: another producer (not kcleanup's
// mirror transactional ID, so not fenced by it) holds a transaction open on
// the mirror with a plan incomparable with the one being applied. While it
// is open the mirror cannot be read as the job reads it: the apply deletes
// nothing. Once it commits, the mirror holds a plan the applied one would
// make the job's fold fail with (incomparable boundaries): the apply is
// refused with nothing committed or deleted, and the job's fold stays valid.
func TestReviewMirrorForeignTransaction(t *testing.T) {
	s := newScene(t)
	mirror := s.newMirror()
	s.attach(mirror)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q := s.plan("foreign", events.Offsets{0: 250, 1: 10})
	p := s.plan("C1", events.Offsets{0: 100, 1: 50})
	tx := kafkatest.Client(t, s.bootstrap, kgo.TransactionalID("foreign-"+mirror))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, &kgo.Record{Topic: mirror, Key: []byte(q.PlanID), Value: flinkagents.EncodeValue(flinkagents.Committed, q)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	applyWithin := func(d time.Duration) error {
		short, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		var err error
		s.withProjection(func(_ context.Context, proj *worker.Projection) {
			_, err = s.c.Apply(short, proj, p, worker.Options{Actor: "test", Bootstrap: s.bootstrap})
		})
		return err
	}
	if err := applyWithin(10 * time.Second); err == nil {
		t.Fatal("apply succeeded while a transaction was open on the mirror")
	} else {
		t.Logf("apply with an open foreign transaction: %v", err)
	}
	s.checkLogStart(events.Offsets{0: 0, 1: 0})
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	err := applyWithin(30 * time.Second)
	if err == nil || !errors.Is(err, protocol.ErrBlocked) && !strings.Contains(err.Error(), "incomparable") {
		t.Fatalf("apply against a mirror holding an incomparable plan: %v, want refused (incomparable)", err)
	}
	t.Logf("apply refused: %v (hints %v)", err, errors.GetAllHints(err))
	s.checkLogStart(events.Offsets{0: 0, 1: 0})
	if b := s.boundary(); len(b) > 0 {
		t.Fatalf("a plan the mirror cannot take was committed: boundary %v", b)
	}
	if job, err := readJobTopic(t, s.bootstrap, mirror).boundary(); err != nil || !events.Offsets(job).Equal(q.Offsets) {
		t.Fatalf("the job's fold of the mirror: %v (%v), want the foreign plan's %v", events.Offsets(job), err, q.Offsets)
	}
}

// TestReviewMirrorRecreatedBlocksTheNextDeletion: the attached mirror is
// deleted and recreated under its name (empty: the job pointed at it now
// finds no boundary, and would find only what is written next). The next
// apply sees the new topic ID and is refused with nothing committed or
// deleted; attaching the new topic seeds it with the boundary, and the
// apply then goes through with the job agreeing.
func TestReviewMirrorRecreatedBlocksTheNextDeletion(t *testing.T) {
	s := newScene(t)
	mirror := s.newMirror()
	s.attach(mirror)
	p1 := s.plan("C1", events.Offsets{0: 100, 1: 50})
	s.apply(p1)
	s.requireMirrorAgrees(mirror)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(kafkatest.Client(t, s.bootstrap))
	if _, err := adm.DeleteTopic(ctx, mirror); err != nil {
		t.Fatal(err)
	}
	compact := "compact"
	kafkatest.Eventually(t, time.Minute, "mirror recreated", func() bool {
		resp, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": &compact}, mirror)
		if err == nil {
			err = resp.Err
		}
		return err == nil // TOPIC_ALREADY_EXISTS until the deletion completes
	})
	kafkatest.Eventually(t, time.Minute, "recreated mirror has a leader", func() bool {
		lo, err := adm.ListEndOffsets(ctx, mirror)
		return err == nil && lo.Error() == nil && len(lo[mirror]) == 1
	})

	p2 := s.plan("C2", events.Offsets{0: 150, 1: 120})
	var err error
	s.withProjection(func(_ context.Context, proj *worker.Projection) {
		short, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err = s.c.Apply(short, proj, p2, worker.Options{Actor: "test", Bootstrap: s.bootstrap})
	})
	if err == nil || !strings.Contains(err.Error(), "recreated") {
		t.Fatalf("apply onto a recreated mirror: %v, want refused naming the recreation", err)
	}
	t.Logf("apply refused: %v (hints %v)", err, errors.GetAllHints(err))
	s.checkLogStart(p1.Offsets)
	if b := s.boundary(); !b.Equal(p1.Offsets) {
		t.Fatalf("boundary %v after the refusal, want p1's %v", b, p1.Offsets)
	}
	s.attach(mirror)
	s.requireMirrorAgrees(mirror)
	s.apply(p2)
	s.requireMirrorAgrees(mirror)
	s.checkLogStart(p2.Offsets)
}

// TestReviewMirrorAttachRefusesTheControlTopicItself: an operator's typo
// names the control topic (one partition, compact: the job's own settings)
// as the mirror. Refused with a hint, nothing appended, no mirror.
func TestReviewMirrorAttachRefusesTheControlTopicItself(t *testing.T) {
	s := newScene(t)
	s.apply(s.plan("C1", events.Offsets{0: 100, 1: 50}))
	s.withProjection(func(ctx context.Context, proj *worker.Projection) {
		before := proj.State.Next()
		_, err := s.c.AttachMirror(ctx, proj, s.ctl, "typo", worker.Options{Actor: "test", Bootstrap: s.bootstrap})
		if err == nil || len(errors.GetAllHints(err)) == 0 {
			t.Fatalf("attach of the control topic itself: %v (hints %v), want refused with a hint", err, errors.GetAllHints(err))
		}
		if err := proj.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		if _, ok := proj.State.Mirror(); ok || proj.State.Next() != before {
			t.Fatalf("after the refusal: mirror attached %v, control topic end %d (was %d)", ok, proj.State.Next(), before)
		}
	})
}

// TestReviewReadATruncatedMirror: a mirror (or a Flink Agents control
// topic) whose every record was deleted (DeleteRecords under a temporary
// cleanup.policy=compact,delete: log start = end > 0) is read as the job
// reads it, empty, instead of waiting for a record that never comes (the
// owner could then never read it again, nor bring it up to the boundary).
func TestReviewReadATruncatedMirror(t *testing.T) {
	s := newScene(t)
	mirror := s.newMirror()
	s.attach(mirror)
	p := s.plan("C1", events.Offsets{0: 100, 1: 50})
	s.apply(p)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(kafkatest.Client(t, s.bootstrap))
	setPolicy := func(v string) {
		rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: &v}}, mirror)
		if err == nil {
			_, err = rs.On(mirror, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	setPolicy("compact,delete")
	ends, err := adm.ListEndOffsets(ctx, mirror)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(mirror, 0)
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: mirror, Partition: 0, At: end.Offset})
	kafkatest.DeleteRecordsAfterConfigChange(t, ctx, adm, offs) // truncate the mirror
	setPolicy("compact")
	short, cancel2 := context.WithTimeout(ctx, 15*time.Second)
	defer cancel2()
	v, err := s.c.ReadMirror(short, mirror)
	if err != nil {
		t.Fatalf("read the truncated mirror (log start = end = %d): %v", end.Offset, err)
	}
	if n := len(v.Fold.Operations()); n != 0 || v.Fold.Err() != nil {
		t.Fatalf("truncated mirror folds %d plan(s), err %v; want empty", n, v.Fold.Err())
	}
	// A sync brings it back up to the boundary.
	s.withProjection(func(ctx context.Context, proj *worker.Projection) {
		if err := s.c.SyncMirror(ctx, proj, worker.Options{Actor: "test", Bootstrap: s.bootstrap}); err != nil {
			t.Fatal(err)
		}
	})
	s.requireMirrorAgrees(mirror)
}
