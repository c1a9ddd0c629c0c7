package clustertest_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
)

// TestTwoBrokersDownNothingIsCommitted: with two of three brokers down, the control topic's
// min.insync.replicas=2 refuses PLANNED and COMMITTED (NOT_ENOUGH_REPLICAS): apply stops before
// any deletion with an error and a hint, the gate does not refuse a recovery point that no
// acknowledged COMMITTED covers, the data keeps its log start, and no COMMITTED surfaces when
// the brokers return. When the brokers return
// the same apply commits and deletes, and the gate refuses a recovery point below it.
func TestTwoBrokersDownNothingIsCommitted(t *testing.T) {
	s := newScene(t)
	s.MustKcleanup(s.K.Bootstrap, "init", "--topic", s.Topic)
	s.waitISR(s.Ctl, 3)
	s.waitISR(s.Topic, 3)
	survivor := s.partition(s.Ctl).Leader
	down := slices.DeleteFunc(slices.Clone(kafkatest.Nodes), func(id int32) bool { return id == survivor })
	for _, id := range down {
		s.K.Kill(t, id)
	}
	s.waitISR(s.Ctl, 1)
	s.waitISR(s.Topic, 1)

	p, file := s.PlanFile("rp-1", 100)
	out, code, _ := s.Kcleanup(nil, s.K.Bootstrap, "apply", file, "--timeout", "20s")
	t.Logf("apply with brokers %v down: exit %d\n%s", down, code, out)
	// The broker answers NOT_ENOUGH_REPLICAS, which the client retries until --timeout: the
	// error names the deadline, the hint says that running apply again resumes.
	if code != 1 || !strings.Contains(out, "Hint:") || strings.Contains(out, "[delet") {
		t.Errorf("apply with two of three brokers down: exit %d, want 1 with a hint, before any deletion", code)
	}
	markers := s.MarkersFile(50)
	out, code, _ = s.Kcleanup(nil, s.K.Bootstrap, "validate", "--markers", markers, "--timeout", "20s")
	t.Logf("validate (below the plan) with brokers %v down: exit %d\n%s", down, code, out)
	if code == 3 {
		t.Errorf("the gate refuses a recovery point no acknowledged COMMITTED covers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if start, err := s.C.StartOffsets(ctx, s.Topic); err != nil || !start.Equal(events.Offsets{0: 0}) {
		t.Fatalf("log start with two brokers down: %v (%v), want {0:0}: nothing may be deleted", start, err)
	}

	for _, id := range down {
		s.K.Start(t, id)
	}
	s.waitISR(s.Ctl, 3)
	s.waitISR(s.Topic, 3)
	if st, _ := s.Operation(p.PlanID); st == fsm.Committed || st == fsm.Deleting || st == fsm.Applied {
		t.Fatalf("an unacknowledged COMMITTED surfaced when the brokers returned: %s", st)
	}
	// A deadline of its own: the one above ran on while the two brokers restarted, which on a
	// loaded machine took longer than it (CI, stop 39: "context deadline exceeded" here).
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	if start, err := s.C.StartOffsets(ctx2, s.Topic); err != nil || !start.Equal(events.Offsets{0: 0}) {
		t.Fatalf("log start after the brokers returned: %v (%v), want {0:0}", start, err)
	}
	s.Check()

	s.MustKcleanup(s.K.Bootstrap, "apply", file, "--timeout", "60s")
	if st, logStart := s.Operation(p.PlanID); st != fsm.Applied || !logStart.Equal(events.Offsets{0: 100}) {
		t.Fatalf("apply with the brokers back: %s, log start %v", st, logStart)
	}
	if out, code, _ := s.Kcleanup(nil, s.K.Bootstrap, "validate", "--markers", markers); code != 3 {
		t.Errorf("the gate after APPLIED below 100: exit %d, want 3 (refused)\n%s", code, out)
	}
	s.Check()
}
