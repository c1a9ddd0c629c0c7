package workertest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/projector/invariant"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// fixture is a kfake broker with a data topic of two partitions of 200
// records and its control topic.
type fixture struct {
	c        *worker.Cluster
	topic    string
	ctl      string
	id       string
	ctx      context.Context
	initials events.Offsets
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	c, _ := workertest.FakeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	f := fixture{c: c, topic: "action-state", ctl: protocol.ControlTopicFor("action-state"), ctx: ctx, initials: events.Offsets{0: 0, 1: 0}}
	s := func(v string) *string { return &v }
	if _, err := kadm.NewClient(c.Client()).CreateTopic(ctx, 2, 1, map[string]*string{
		"cleanup.policy": s("compact,delete"), "retention.ms": s("-1"), "retention.bytes": s("-1"),
	}, f.topic); err != nil {
		t.Fatal(err)
	}
	var rs []*kgo.Record
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 200; i++ {
			rs = append(rs, &kgo.Record{Topic: f.topic, Partition: p, Key: []byte{byte(i)}, Value: []byte("v")})
		}
	}
	if err := c.Client().ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	info, err := c.TopicMetadata(ctx, f.topic)
	if err != nil {
		t.Fatal(err)
	}
	f.id = info.ID
	if err := c.EnsureControlTopic(ctx, f.ctl, f.topic, worker.Options{}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f fixture) apply(t *testing.T, rp string, offs events.Offsets, noWait bool) events.Plan {
	t.Helper()
	plan, err := events.BuildPlan(rp, []events.Marker{{Topic: f.topic, TopicID: f.id, Offsets: offs}})
	if err != nil {
		t.Fatal(err)
	}
	proj, err := f.c.Project(f.ctx, f.ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	if _, err := f.c.Apply(f.ctx, proj, plan, worker.Options{NoWait: noWait}); err != nil {
		t.Fatalf("apply: %+v", err)
	}
	return plan
}

func (f fixture) check(opts ...invariant.Option) []error {
	return workertest.CheckInvariants(f.ctx, f.c, f.ctl, append([]invariant.Option{invariant.InitialLogStart(f.initials)}, opts...)...)
}

// requireViolation wants exactly the named invariant to be reported, with
// the given words.
func requireViolation(t *testing.T, errs []error, name string, words ...string) {
	t.Helper()
	if len(errs) == 0 {
		t.Fatalf("no violation reported, want %s", name)
	}
	for _, err := range errs {
		msg := err.Error()
		if !strings.HasPrefix(msg, name+":") {
			t.Fatalf("violation %q, want only %s", msg, name)
		}
		for _, w := range words {
			if !strings.Contains(msg, w) {
				t.Fatalf("violation %q does not say %q", msg, w)
			}
		}
	}
}

func TestAnAppliedPlanKeepsEveryInvariant(t *testing.T) {
	f := newFixture(t)
	f.apply(t, "C1", events.Offsets{0: 150, 1: 120}, false)
	f.apply(t, "C2", events.Offsets{0: 160, 1: 120}, false)
	if errs := f.check(invariant.WantAllApplied()); len(errs) != 0 {
		t.Fatalf("violations on a clean log: %v", errs)
	}
	workertest.RequireInvariants(t, f.c, f.ctl, invariant.WantAllApplied())
}

func TestAnEmptyControlTopicKeepsEveryInvariant(t *testing.T) {
	f := newFixture(t)
	if errs := f.check(invariant.WantAllApplied(), invariant.DataTopic(f.topic)); len(errs) != 0 {
		t.Fatalf("violations on an empty control topic: %v", errs)
	}
}

func TestACommittedPlanIsReportedOnlyWhenAllMustBeApplied(t *testing.T) {
	f := newFixture(t)
	plan := f.apply(t, "C1", events.Offsets{0: 150, 1: 120}, true)
	if errs := f.check(); len(errs) != 0 {
		t.Fatalf("a COMMITTED plan is not a violation unless WantAllApplied: %v", errs)
	}
	errs := f.check(invariant.WantAllApplied())
	requireViolation(t, errs, "I3")
	if !strings.Contains(errs[0].Error(), plan.PlanID+" is still COMMITTED") {
		t.Fatalf("I3 does not name the plan: %v", errs)
	}
}

func TestDeletionBeyondTheBoundaryIsReported(t *testing.T) {
	f := newFixture(t)
	f.apply(t, "C1", events.Offsets{0: 150, 1: 120}, false)
	// Someone deletes past the boundary behind kcleanup's back.
	if _, err := f.c.DeleteRecords(f.ctx, f.topic, events.Offsets{1: 121}); err != nil {
		t.Fatal(err)
	}
	requireViolation(t, f.check(), "I1", "action-state-1 log start is 121, above the committed boundary 120")
}

func TestDeletionWithoutACommitIsReported(t *testing.T) {
	f := newFixture(t)
	if _, err := f.c.DeleteRecords(f.ctx, f.topic, events.Offsets{0: 10}); err != nil {
		t.Fatal(err)
	}
	requireViolation(t, f.check(invariant.DataTopic(f.topic)), "I1", "no boundary was committed")
}

// overwrite appends a tombstone under the key of an accepted record.
func (f fixture) overwrite(t *testing.T, planID string, e events.Event) {
	t.Helper()
	r := &kgo.Record{Topic: f.ctl, Partition: 0, Key: []byte(events.Key(planID, e))}
	if err := f.c.Client().ProduceSync(f.ctx, r).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// repair does what a worker does: re-append every overwritten accepted record.
func (f fixture) repair(t *testing.T) {
	t.Helper()
	proj, err := f.c.Project(f.ctx, f.ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	if err := proj.Repair(f.ctx); err != nil {
		t.Fatal(err)
	}
}

func TestAnOverwrittenKeyIsReportedUntilRepaired(t *testing.T) {
	f := newFixture(t)
	plan := f.apply(t, "C1", events.Offsets{0: 150, 1: 120}, false)
	// A tombstone on the accepted APPLIED key: compaction would erase it.
	f.overwrite(t, plan.PlanID, events.Applied)
	requireViolation(t, f.check(), "I5", "not repaired", plan.PlanID+"/APPLIED")
	if errs := f.check(invariant.AllowUnrepaired()); len(errs) != 0 {
		t.Fatalf("AllowUnrepaired still reports: %v", errs)
	}
	f.repair(t)
	if errs := f.check(invariant.WantAllApplied()); len(errs) != 0 {
		t.Fatalf("violations after the repair: %v", errs)
	}
}

// A repair moves its key after every later record, so a repaired PLANNED
// lands after its own COMMITTED. The fold takes COMMITTED as implying
// PLANNED (projector/doc.go, "Deviations from docs/design.md §5"), so the compacted
// log still projects like the full one; the checker replays both and agrees.
func TestARepairThatReordersTransitionsKeepsI5(t *testing.T) {
	f := newFixture(t)
	plan := f.apply(t, "C1", events.Offsets{0: 150, 1: 120}, false)
	f.overwrite(t, plan.PlanID, events.Planned)
	requireViolation(t, f.check(), "I5", "not repaired", plan.PlanID+"/PLANNED")
	f.repair(t)
	if errs := f.check(invariant.WantAllApplied()); len(errs) != 0 {
		t.Fatalf("violations after a reordering repair: %v", errs)
	}
}

func TestRegressions(t *testing.T) {
	got := invariant.Regressions(events.Offsets{0: 150, 1: 120, 2: 5}, events.Offsets{0: 150, 1: 100})
	want := []string{"partition 1 boundary decreased from 120 to 100", "partition 2 lost its boundary 5"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("regressions %q, want %q", got, want)
	}
	if got := invariant.Regressions(events.Offsets{0: 1}, events.Offsets{0: 2, 1: 1}); len(got) != 0 {
		t.Fatalf("growth reported as regression: %q", got)
	}
}

func TestCompactKeepsTheLatestRecordOfEachKey(t *testing.T) {
	recs := []projector.Record{
		{Offset: 0, Key: []byte("a"), Value: []byte("1")},
		{Offset: 1, Key: []byte("b"), Value: []byte("1")},
		{Offset: 2, Key: []byte("a"), Value: []byte("2")},
		{Offset: 3, Key: []byte("b")}, // tombstone
	}
	offsets := func(rs []projector.Record) []int64 {
		var out []int64
		for _, r := range rs {
			out = append(out, r.Offset)
		}
		return out
	}
	if got := offsets(invariant.Compact(recs, false)); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("compacted offsets %v, want [2 3]", got)
	}
	if got := offsets(invariant.Compact(recs, true)); len(got) != 1 || got[0] != 2 {
		t.Fatalf("compacted offsets without tombstones %v, want [2]", got)
	}
}
