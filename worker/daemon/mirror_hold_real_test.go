package daemon_test

// A mirror held by an open transaction, on the real broker (issue 21):
// kcleanup's own writer killed inside its transaction is fenced by the next
// kcleanup writer before it waits on the mirror's last stable offset, and
// status and doctor say whose transaction holds the mirror instead of failing.

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/projector/invariant"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
)

// openTransaction leaves a transaction of txnID open on the mirror with one
// record in it (rec, as the job would read it), its client closed without
// ending it: a writer that died inside its transaction. The broker aborts
// it only after timeout.
func (s *scene) openTransaction(mirror, txnID string, timeout time.Duration, p events.Plan, status flinkagents.Status) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.bootstrap), kgo.TransactionalID(txnID), kgo.TransactionTimeout(timeout),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		s.t.Fatal(err)
	}
	defer cl.Close() // Close ends no transaction
	if err := cl.BeginTransaction(); err != nil {
		s.t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: mirror, Partition: 0, Key: []byte(p.PlanID),
		Value: flinkagents.EncodeValue(status, p)}).FirstErr(); err != nil {
		s.t.Fatal(err)
	}
}

// assessMirror is status's read of the attached mirror.
func (s *scene) assessMirror() protocol.MirrorAssessment {
	s.t.Helper()
	var a protocol.MirrorAssessment
	s.withProjection(func(ctx context.Context, proj *worker.Projection) {
		var err error
		var ok bool
		a, ok, err = s.c.AssessMirror(ctx, protocol.MirrorControlOf(proj.State), false, s.bootstrap)
		if err != nil || !ok {
			s.t.Fatalf("assess the mirror: attached %v, %v (hints %v)", ok, err, errors.GetAllHints(err))
		}
	})
	return a
}

// TestMirrorHeldByADeadWriterIsFencedBeforeTheRead: a transaction left
// open on the mirror with a transaction.timeout.ms of 10 minutes. Status's
// assessment, a worker's /v1/status, kcleanup status (text and JSON) and
// doctor say whose it is (a foreign producer's, then kcleanup's own
// writer's) instead of failing; an apply of the next plan fences
// kcleanup's writer before its first read of the mirror and finishes.
// Only the fence can explain that: the broker would abort the transaction
// only 10 minutes later (without the fence the apply stops with "a
// transaction is still open").
func TestMirrorHeldByADeadWriterIsFencedBeforeTheRead(t *testing.T) {
	s := newScene(t)
	mirror := s.newMirror()
	c0 := s.plan("C0", events.Offsets{0: 50, 1: 40})
	s.apply(c0)
	s.attach(mirror) // the mirror holds C0 APPLIED
	const long = 10 * time.Minute

	// A foreign producer's transaction: said to be foreign, not fenced.
	foreign := "flink-tool-" + randomHex()
	s.openTransaction(mirror, foreign, long, c0, flinkagents.Applied)
	a := s.assessMirror()
	if a.Standing != protocol.MirrorHeld || a.Hold == nil || a.Hold.KcleanupWriter || a.Hold.TransactionalID != foreign {
		t.Fatalf("held by %s: assessment %+v (hold %+v), want held by a foreign producer named %s", foreign, a, a.Hold, foreign)
	}
	t.Logf("foreign: %s; hint: %s", a.Reason, a.Hint)
	// A worker's /v1/status says so too (and the worker fences no foreign producer).
	w := s.startWorker("w1")
	kafkatest.Eventually(t, time.Minute, "/v1/status shows the mirror held by the foreign producer", func() bool {
		m := w.mirrorStatus(s.ctl)
		return m != nil && m.Standing == protocol.MirrorHeld && m.Hold != nil && !m.Hold.KcleanupWriter && m.Hold.TransactionalID == foreign
	})
	w.Terminate(t)
	adm := kadm.NewClient(kafkatest.Client(t, s.bootstrap))
	// Out of the way (a producer of the same transactional ID aborts it).
	func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.bootstrap), kgo.TransactionalID(foreign))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if _, _, err := cl.ProducerID(ctx); err != nil {
			t.Fatal(err)
		}
	}()

	// kcleanup's own writer, dead inside its transaction.
	txnID := worker.MirrorTransactionalID(mirror)
	s.openTransaction(mirror, txnID, long, c0, flinkagents.Applied)
	a = s.assessMirror()
	if a.Standing != protocol.MirrorHeld || a.Hold == nil || !a.Hold.KcleanupWriter || a.Hold.TransactionalID != txnID ||
		a.Hold.TimeoutMs != int32(long/time.Millisecond) || a.Hold.Since.IsZero() {
		t.Fatalf("assessment %+v (hold %+v), want held by kcleanup's writer %s with its 10-minute timeout", a, a.Hold, txnID)
	}
	if !strings.Contains(a.Reason, "held by an open transaction of kcleanup's writer "+txnID+" since ") {
		t.Errorf("reason %q", a.Reason)
	}

	out, errOut, code := s.run("status", "--control-topic", s.ctl)
	out += errOut
	if code != 0 || !strings.Contains(out, "HELD: mirror topic "+mirror+" is held by an open transaction of kcleanup's writer "+txnID+" since ") {
		t.Fatalf("kcleanup status with the mirror held: exit %d, want 0 and the hold:\n%s", code, out)
	}
	out, _, code = s.run("status", "--control-topic", s.ctl, "-o", "json")
	var doc struct {
		Mirror protocol.MirrorAssessment `json:"mirror"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || doc.Mirror.Standing != protocol.MirrorHeld ||
		doc.Mirror.Hold == nil || !doc.Mirror.Hold.KcleanupWriter || doc.Mirror.Hold.TransactionalID != txnID {
		t.Fatalf("kcleanup status -o json: exit %d, %v, mirror %+v:\n%s", code, err, doc.Mirror, out)
	}
	out, errOut, _ = s.run("doctor", "--control-topic", s.ctl)
	out += errOut
	if !strings.Contains(out, "held by an open transaction of kcleanup's writer "+txnID) || strings.Contains(out, "read the Flink Agents mirror") {
		t.Fatalf("kcleanup doctor with the mirror held does not say so:\n%s", out)
	}

	// The next apply: the fence comes before any read of the mirror.
	var notes []protocol.Progress
	c1 := s.plan("C1", events.Offsets{0: 150, 1: 120})
	s.withProjection(func(ctx context.Context, proj *worker.Projection) {
		_, err := s.c.Apply(ctx, proj, c1, worker.Options{Actor: "test", Bootstrap: s.bootstrap,
			Observe: func(p protocol.Progress) { notes = append(notes, p) }})
		if err != nil {
			t.Fatalf("apply with the mirror held by kcleanup's dead writer: %v (hints %v)", err, errors.GetAllHints(err))
		}
	})
	fenced := slices.IndexFunc(notes, func(p protocol.Progress) bool { return strings.HasPrefix(p.Message, "fenced kcleanup's writer "+txnID) })
	mirrored := slices.IndexFunc(notes, func(p protocol.Progress) bool {
		return p.Step == "mirror" && strings.Contains(p.Message, "written to mirror")
	})
	if fenced < 0 || mirrored >= 0 && mirrored < fenced {
		t.Fatalf("the apply did not fence kcleanup's writer first (fence at %d, first mirror write at %d): %+v", fenced, mirrored, notes)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := adm.DescribeTransactions(ctx, txnID)
	if err != nil {
		t.Fatal(err)
	}
	if st := d[txnID].State; st == "Ongoing" {
		t.Fatalf("kcleanup's writer's transaction is still %s after the apply", st)
	}
	if a := s.assessMirror(); !a.InStep() {
		t.Fatalf("after the apply the mirror is %s: %s", a.Standing, a.Reason)
	}
	s.requireMirrorAgrees(mirror)
	s.check(invariant.WantAllApplied())
}

// TestMirrorApplyKilledInsideItsTransaction: `kcleanup apply` is SIGKILLed
// inside its mirror transaction (failpoint in-mirror-transaction), leaving
// the mirror held by kcleanup's writer; the survivor, another
// `kcleanup apply` or the owning worker, fences the dead writer before it
// waits on the mirror (its progress says "fenced", and nothing before that
// says it waited or retried) and finishes the plan.
func TestMirrorApplyKilledInsideItsTransaction(t *testing.T) {
	for _, survivor := range []string{"apply", "worker"} {
		t.Run(survivor, func(t *testing.T) {
			s := newScene(t)
			mirror := s.newMirror()
			s.attach(mirror)
			watch := s.watchMirror(mirror)
			plan := s.plan("C1", events.Offsets{0: 150, 1: 120})
			victim := s.startApply(plan, worker.InMirrorTransaction)
			if st, _ := victim.WaitDeath(t, time.Minute); !workertest.KilledBySIGKILL(st) {
				t.Fatalf("apply exited with %v, want death by SIGKILL inside its mirror transaction:\n%s", st, victim.Tail(20))
			}
			txnID := worker.MirrorTransactionalID(mirror)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			hold, err := s.c.MirrorHold(ctx, mirror)
			if err != nil || hold == nil || !hold.KcleanupWriter {
				t.Fatalf("after the kill: hold %+v, %v; want the mirror held by kcleanup's writer", hold, err)
			}

			var said string
			switch survivor {
			case "apply":
				b, err := s.applyCmd(plan).CombinedOutput()
				if err != nil {
					t.Fatalf("apply again: %v\n%s", err, b)
				}
				said = string(b)
			case "worker":
				w := s.startWorker("w1")
				s.waitApplied(plan.PlanID, 2*time.Minute)
				w.Terminate(t)
				said = w.Tail(200)
			}
			fence := strings.Index(said, "fenced kcleanup's writer "+txnID)
			// Waiting first shows as a failed attempt: an apply's error, a
			// worker's retry (its view's check may say "held" meanwhile).
			waited := strings.Contains(said, "a transaction is still open") || fence >= 0 &&
				(survivor == "apply" && strings.Contains(said[:fence], "held by an open transaction") || strings.Contains(said[:fence], "will retry"))
			if fence < 0 || waited {
				t.Fatalf("the surviving %s did not fence kcleanup's dead writer before waiting on the mirror:\n%s", survivor, said)
			}
			if st := s.state(plan.PlanID); st != fsm.Applied {
				t.Fatalf("state %s after the surviving %s", st, survivor)
			}
			watch.require(t)
			s.requireMirrorAgrees(mirror)
			s.check(invariant.WantAllApplied())
		})
	}
}

// run is a kcleanup command on the scene's broker: its standard output,
// then its standard error, and its exit code.
func (s *scene) run(args ...string) (stdout, stderr string, code int) {
	s.t.Helper()
	cmd := exec.Command(workertest.Binary(s.t), append(args, "-b", s.bootstrap)...)
	cmd.Env = workertest.CleanEnv()
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errorsAs(err, &exit) {
		s.t.Fatalf("kcleanup %v: %v", args, err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// mirrorStatus is the mirror in the worker's /v1/status of a control
// topic, nil when absent or unreadable.
func (p *proc) mirrorStatus(ctl string) *protocol.MirrorAssessment {
	resp, err := http.Get(p.URL + "/v1/status?controlTopic=" + ctl)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var st report.TopicStatus
	if json.NewDecoder(resp.Body).Decode(&st) != nil {
		return nil
	}
	return st.Mirror
}
