package daemon_test

// The Flink Agents mirror on the real broker: the job's boundary, read by
// the oracle (mirror_oracle_test.go) as the job reads it, follows
// kcleanup's; the mirror writer is linearizable (a fenced writer cannot
// commit); crashes at every step and failover never leave the mirror
// behind a deletion or make the job's fold fail.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/projector/invariant"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// newMirror creates an empty mirror topic as a Flink Agents job needs it.
func (s *scene) newMirror() string {
	s.t.Helper()
	cl := kafkatest.Client(s.t, s.bootstrap)
	return kafkatest.NewTopic(s.t, cl, s.topic+".flink", 1, map[string]string{"cleanup.policy": "compact"})
}

// withProjection runs f on a fresh projection of the control topic.
func (s *scene) withProjection(f func(ctx context.Context, proj *worker.Projection)) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	proj, err := s.c.Project(ctx, s.ctl)
	if err != nil {
		s.t.Fatal(err)
	}
	defer proj.Close()
	f(ctx, proj)
}

func (s *scene) attach(mirror string) {
	s.t.Helper()
	s.withProjection(func(ctx context.Context, proj *worker.Projection) {
		if _, err := s.c.AttachMirror(ctx, proj, mirror, "the job reads it", worker.Options{Actor: "test", Bootstrap: s.bootstrap}); err != nil {
			s.t.Fatalf("attach: %v (hints %v)", err, errors.GetAllHints(err))
		}
	})
}

func (s *scene) apply(p events.Plan) {
	s.t.Helper()
	s.withProjection(func(ctx context.Context, proj *worker.Projection) {
		if _, err := s.c.Apply(ctx, proj, p, worker.Options{Actor: "test", Bootstrap: s.bootstrap}); err != nil {
			s.t.Fatalf("apply %s: %v (hints %v)", p.PlanID, err, errors.GetAllHints(err))
		}
	})
}

func (s *scene) boundary() events.Offsets {
	s.t.Helper()
	var b events.Offsets
	s.withProjection(func(_ context.Context, proj *worker.Projection) { b = proj.State.Boundary() })
	return b
}

// requireMirrorAgrees: the job's effective boundary on the mirror is
// kcleanup's boundary.
func (s *scene) requireMirrorAgrees(mirror string) {
	s.t.Helper()
	got, err := readJobTopic(s.t, s.bootstrap, mirror).boundary()
	if err != nil {
		s.t.Fatalf("the job cannot recover from mirror %s: %v", mirror, err)
	}
	if want := s.boundary(); !events.Offsets(got).Equal(want) {
		s.t.Fatalf("the job's boundary on the mirror is %v, kcleanup's %v", events.Offsets(got), want)
	}
}

func TestMirrorFollowsTheBoundary(t *testing.T) {
	s := newScene(t)
	p1 := s.plan("C1", events.Offsets{0: 100, 1: 50})
	began := time.Now()
	s.apply(p1)
	without := time.Since(began)
	// Attaching to a control topic with a boundary seeds the mirror with
	// the plan that set it, APPLIED as on the control topic.
	mirror := s.newMirror()
	s.attach(mirror)
	s.requireMirrorAgrees(mirror)
	if st := readJobTopic(t, s.bootstrap, mirror).status[p1.PlanID]; st != "APPLIED" {
		t.Fatalf("seeded plan is %q on the mirror, want APPLIED", st)
	}
	p2 := s.plan("C2", events.Offsets{0: 150, 1: 120})
	began = time.Now()
	s.apply(p2)
	t.Logf("apply took %s without a mirror, %s with one (mirror COMMITTED, read back, APPLIED)",
		without.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	s.requireMirrorAgrees(mirror)
	if st := readJobTopic(t, s.bootstrap, mirror).status[p2.PlanID]; st != "APPLIED" {
		t.Fatalf("p2 is %q on the mirror, want APPLIED", st)
	}
	// Detached, the mirror keeps what it has and learns nothing more.
	s.withProjection(func(ctx context.Context, proj *worker.Projection) {
		if _, err := s.c.DetachMirror(ctx, proj, "moving on", worker.Options{Actor: "test"}); err != nil {
			t.Fatal(err)
		}
	})
	s.apply(s.plan("C3", events.Offsets{0: 200, 1: 130}))
	if got, err := readJobTopic(t, s.bootstrap, mirror).boundary(); err != nil || !events.Offsets(got).Equal(p2.Offsets) {
		t.Fatalf("detached mirror: boundary %v (%v), want p2's %v", got, err, p2.Offsets)
	}
	s.checkLogStart(events.Offsets{0: 200, 1: 130})
	s.check(invariant.WantAllApplied())
}

// TestMirrorAttachRefusesWhatTheJobWouldNot: a mirror topic the job could
// not use is refused, nothing appended.
func TestMirrorAttachRefusesWhatTheJobWouldNot(t *testing.T) {
	s := newScene(t)
	cl := kafkatest.Client(t, s.bootstrap)
	for name, mk := range map[string]func() string{
		"missing": func() string { return s.topic + ".nothing" },
		"two partitions": func() string {
			return kafkatest.NewTopic(t, cl, "m2", 2, map[string]string{"cleanup.policy": "compact"})
		},
		"compact,delete": func() string {
			return kafkatest.NewTopic(t, cl, "m3", 1, map[string]string{"cleanup.policy": "compact,delete"})
		},
		"data topic": func() string { return s.topic },
	} {
		s.withProjection(func(ctx context.Context, proj *worker.Projection) {
			_, err := s.c.AttachMirror(ctx, proj, mk(), "test", worker.Options{Actor: "test"})
			if err == nil || len(errors.GetAllHints(err)) == 0 {
				t.Fatalf("%s: attach gave %v with hints %v, want an error with a hint", name, err, errors.GetAllHints(err))
			}
			if _, ok := proj.State.Mirror(); ok {
				t.Fatalf("%s: a mirror is attached after a refusal", name)
			}
		})
	}
}

// TestMirrorWriterFencesStaleWriters (decision 3 of the brief, on Apache
// Kafka 4.1.1): a slow writer that read "P COMMITTED" and opened its
// transaction with COMMITTED P is fenced when another writer writes
// APPLIED P: its commit fails, its record is aborted, and the job's fold
// stays valid (without fencing it would read "regressed applied plan").
func TestMirrorWriterFencesStaleWriters(t *testing.T) {
	s := newScene(t)
	mirror := s.newMirror()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	view, err := s.c.ReadMirror(ctx, mirror)
	if err != nil {
		t.Fatal(err)
	}
	p := s.plan("C1", events.Offsets{0: 100, 1: 50})
	rec := protocol.MirrorRecord{Topic: mirror, TopicID: view.TopicID, Status: flinkagents.Committed, Plan: p}
	if wrote, err := s.c.WriteMirror(ctx, rec); err != nil || !wrote {
		t.Fatalf("WriteMirror COMMITTED: wrote %v, %v", wrote, err)
	}
	// The slow writer: same transactional ID, its transaction open with a
	// COMMITTED P it decided on before anyone wrote APPLIED.
	slow, err := kgo.NewClient(kgo.SeedBrokers(s.bootstrap), kgo.TransactionalID(worker.MirrorTransactionalID(mirror)),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if err := slow.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := slow.ProduceSync(ctx, &kgo.Record{Topic: mirror, Partition: 0, Key: []byte(p.PlanID),
		Value: flinkagents.EncodeValue(flinkagents.Committed, p)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The other writer: its fence aborts the slow writer's transaction.
	rec.Status = flinkagents.Applied
	if wrote, err := s.c.WriteMirror(ctx, rec); err != nil || !wrote {
		t.Fatalf("WriteMirror APPLIED: wrote %v, %v", wrote, err)
	}
	err = slow.EndTransaction(ctx, kgo.TryCommit)
	if err == nil {
		t.Fatal("the fenced writer committed its COMMITTED after the APPLIED")
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) && !errors.Is(err, kerr.InvalidTxnState) {
		t.Logf("the fenced writer's commit failed with %v", err)
	}
	v := readJobTopic(t, s.bootstrap, mirror)
	if v.err != nil {
		t.Fatalf("the job's fold fails: %v", v.err)
	}
	if v.status[p.PlanID] != "APPLIED" {
		t.Fatalf("P is %q on the mirror, want APPLIED", v.status[p.PlanID])
	}
	// A COMMITTED asked for after the APPLIED is not written: checked on a
	// fresh read inside the fence.
	rec.Status = flinkagents.Committed
	if wrote, err := s.c.WriteMirror(ctx, rec); err != nil || wrote {
		t.Fatalf("WriteMirror COMMITTED after APPLIED: wrote %v, %v; want nothing written", wrote, err)
	}
}

// TestMirrorConcurrentWritersKeepTheFoldValid: three writers (two workers
// and an apply, say) racing COMMITTED and APPLIED of each plan of a chain
// never make the job's fold fail, and all of them succeed.
func TestMirrorConcurrentWritersKeepTheFoldValid(t *testing.T) {
	s := newScene(t)
	mirror := s.newMirror()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	view, err := s.c.ReadMirror(ctx, mirror)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 64)
	for i := range 6 {
		var wg sync.WaitGroup
		p := s.plan(fmt.Sprintf("C%d", i), events.Offsets{0: int64(10 * (i + 1)), 1: int64(5 * (i + 1))})
		for w, st := range []flinkagents.Status{flinkagents.Applied, flinkagents.Committed, flinkagents.Committed} {
			wg.Go(func() {
				c, err := worker.Connect(kgo.SeedBrokers(s.bootstrap))
				if err != nil {
					errs <- err
					return
				}
				defer c.Close()
				if _, err := c.WriteMirror(ctx, protocol.MirrorRecord{Topic: mirror, TopicID: view.TopicID, Status: st, Plan: p}); err != nil {
					errs <- fmt.Errorf("writer %d of plan %d: %w", w, i, err)
				}
			})
		}
		wg.Wait()
		if v := readJobTopic(t, s.bootstrap, mirror); v.err != nil {
			t.Fatalf("round %d: the job's fold fails: %v", i, v.err)
		}
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	v := readJobTopic(t, s.bootstrap, mirror)
	b, err := v.boundary()
	if err != nil {
		t.Fatalf("the job's fold fails after concurrent writes: %v", err)
	}
	if want := (events.Offsets{0: 60, 1: 30}); !events.Offsets(b).Equal(want) {
		t.Fatalf("boundary %v, want %v", b, want)
	}
	for id, st := range v.status {
		if st != "APPLIED" {
			t.Errorf("plan %s is %s: its APPLIED was written, and nothing may follow it but APPLIED", id, st)
		}
	}
}

// TestMirrorAdoptThenAttachTheOldTopic (issue 10, item 3): a team that
// cleaned up with Flink Agents' tool adopts its control topic, then
// attaches that same topic as the mirror, so the job's configuration does
// not change; the job's boundary then follows kcleanup's.
func TestMirrorAdoptThenAttachTheOldTopic(t *testing.T) {
	s := newScene(t)
	cl := kafkatest.Client(t, s.bootstrap)
	old := kafkatest.NewTopic(t, cl, s.topic+"-cleanup", 1, map[string]string{"cleanup.policy": "compact"})
	p1 := s.plan("C1", events.Offsets{0: 80, 1: 60})
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: old, Partition: 0, Key: []byte(p1.PlanID),
		Value: kafkatest.FlinkRecord("COMMITTED", p1)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	s.withProjection(func(ctx context.Context, proj *worker.Projection) {
		src, err := s.c.PrepareAdoption(ctx, old)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.c.Adopt(ctx, src, proj, worker.Options{Actor: "test"}); err != nil {
			t.Fatalf("adopt: %v", err)
		}
	})
	before := readJobTopic(t, s.bootstrap, old)
	s.attach(old)
	after := readJobTopic(t, s.bootstrap, old)
	if len(after.order) != len(before.order) {
		t.Fatalf("attaching the adopted topic wrote %d record(s); its plans already carry the boundary", len(after.order)-len(before.order))
	}
	s.requireMirrorAgrees(old)
	// A worker finishes the adopted COMMITTED plan; the next plan reaches
	// the job through the same topic.
	s.withProjection(func(ctx context.Context, proj *worker.Projection) {
		if _, err := s.c.Finish(ctx, proj, p1.PlanID, worker.Options{Actor: "test"}); err != nil {
			t.Fatalf("finish the adopted plan: %v", err)
		}
	})
	p2 := s.plan("C2", events.Offsets{0: 120, 1: 90})
	s.apply(p2)
	s.requireMirrorAgrees(old)
	v := readJobTopic(t, s.bootstrap, old)
	if v.status[p1.PlanID] != "APPLIED" || v.status[p2.PlanID] != "APPLIED" {
		t.Fatalf("the job's topic holds %v, want both plans APPLIED", v.status)
	}
	s.check(invariant.WantAllApplied())
}
