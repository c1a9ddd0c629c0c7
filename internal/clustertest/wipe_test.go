package clustertest_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector"
)

// TestWipedBrokerReReplicates: after an APPLIED, a follower of the control topic is stopped,
// its data deleted and started again: it re-replicates both topics, serves the data topic's log
// start the APPLIED reported, and the control topic reads the same before and after.
func TestWipedBrokerReReplicates(t *testing.T) {
	s := newScene(t)
	s.mustKcleanup("init", "--topic", s.topic)
	s.waitISR(s.ctl, 3)
	s.waitISR(s.topic, 3)
	p, file := s.planFile("rp-1", 100)
	s.mustKcleanup("apply", file)
	_, logStart := s.operation(p.PlanID)
	before := s.controlRecords()

	r := s.partition(s.ctl)
	victim := r.Replicas[0]
	if victim == r.Leader {
		victim = r.Replicas[1]
	}
	s.k.Stop(t, victim)
	s.k.Wipe(t, victim)
	s.k.Start(t, victim)
	s.waitISR(s.ctl, 3)
	s.waitISR(s.topic, 3)
	kafkatest.Eventually(t, time.Minute, fmt.Sprintf("wiped broker %d serves log start %d", victim, logStart[0]), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got, err := s.k.LogStartOn(ctx, victim, s.topic, 0)
		return err == nil && got == logStart[0]
	})
	if after := s.controlRecords(); !reflect.DeepEqual(before, after) {
		t.Errorf("the control topic reads differently after broker %d was wiped:\nbefore %d records, after %d", victim, len(before), len(after))
	}
	s.check()
}

// controlRecords reads the whole control topic.
func (s *scene) controlRecords() []projector.Record {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	end, err := s.adm.ListEndOffsets(ctx, s.ctl)
	if err != nil {
		s.t.Fatal(err)
	}
	o, _ := end.Lookup(s.ctl, 0)
	recs, err := workertest.ReadControl(ctx, s.c, s.ctl, o.Offset)
	if err != nil {
		s.t.Fatal(err)
	}
	return recs
}
