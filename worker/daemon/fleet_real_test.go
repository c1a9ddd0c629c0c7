package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector/invariant"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/topicconfig"
)

// another is a second data topic (2 partitions of 300 records) and its
// control topic in s's cluster, named from prefix, served by s's workers
// when their regex matches it.
func (s *scene) another(prefix string) *scene {
	s.t.Helper()
	cl := kafkatest.Client(s.t, s.bootstrap)
	o := *s
	o.topic = kafkatest.NewTopic(s.t, cl, prefix, 2, map[string]string{
		"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1",
	})
	for p := int32(0); p < 2; p++ {
		kafkatest.Produce(s.t, cl, o.topic, p, 300)
	}
	o.ctl = o.topic + ".kcleanup"
	kafkatest.CreateTopic(s.t, cl, o.ctl, 1, topicconfig.CreateSettings())
	info, err := s.c.TopicMetadata(context.Background(), o.topic)
	if err != nil {
		s.t.Fatal(err)
	}
	o.id = info.ID
	return &o
}

// serves reports whether the worker serves a control topic (/v1/status
// answers 404 for one it does not).
func (p *proc) serves(ctl string) bool {
	resp, err := http.Get(p.URL + "/v1/status?controlTopic=" + ctl)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// statusOf is the state of a plan in the worker's /v1/status of a control
// topic ("" when absent).
func (p *proc) statusOf(ctl, planID string) fsm.State {
	resp, err := http.Get(p.URL + "/v1/status?controlTopic=" + ctl)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var st report.TopicStatus
	if json.NewDecoder(resp.Body).Decode(&st) != nil {
		return ""
	}
	for _, op := range st.Operations {
		if op.PlanID == planID {
			return op.State
		}
	}
	return ""
}

// A fleet started with --control-topic-regex serves the control topics that
// match, those created after it started too (no restart), and the consumer
// group gives each one owner; when an owner is killed (SIGKILL: it never
// leaves the group), its control topics move to the survivors, which finish
// their operations. Real broker and real processes; nothing here asserts a
// time (kcbench B6 measures them).
func TestFleetByRegexServesNewControlTopicsAndMovesAKilledReplicasShare(t *testing.T) {
	base := newScene(t) // its control topic does not match: the fleet ignores it
	prefix := "fleet-" + randomHex()
	a := base.another(prefix + "-a")
	// A data topic the regex matches by mistake (an operator's typo): two
	// partitions, compact,delete, keys that are not control keys. It must
	// never be served, owned, or written to (a retraction tombstone there
	// would erase a key's records).
	cl := kafkatest.Client(t, base.bootstrap)
	typo := prefix + "-typo.kcleanup"
	kafkatest.CreateTopic(t, cl, typo, 2, map[string]string{"cleanup.policy": "compact,delete"})
	for p := int32(0); p < 2; p++ {
		kafkatest.Produce(t, cl, typo, p, 50)
	}
	typoEnd, err := base.c.EndOffsets(context.Background(), typo)
	if err != nil {
		t.Fatal(err)
	}
	serve := []string{"--control-topic-regex", "^" + regexp.QuoteMeta(prefix) + `-.*\.kcleanup$`, "--discovery-interval", "1s"}
	ws := []*proc{base.startWorkerServing("w1", serve), base.startWorkerServing("w2", serve), base.startWorkerServing("w3", serve)}

	planA := a.plan("A1", events.Offsets{0: 100, 1: 100})
	a.commit(planA)
	a.waitApplied(planA.PlanID, time.Minute)

	b := base.another(prefix + "-b") // created after the fleet started
	kafkatest.Eventually(t, time.Minute, "every replica serves the control topic created after it started", func() bool {
		return ws[0].serves(b.ctl) && ws[1].serves(b.ctl) && ws[2].serves(b.ctl)
	})
	for _, w := range ws {
		if w.serves(base.ctl) || w.serves(typo) || w.owns(typo) {
			t.Fatalf("%s serves %s (not matched) or %s (not a control topic)", w.Name, base.ctl, typo)
		}
	}
	planB := b.plan("B1", events.Offsets{0: 100, 1: 100})
	b.commit(planB)
	b.waitApplied(planB.PlanID, time.Minute)
	// Every replica's view read the new records (views pause their readers
	// while idle, and read again when the end moves).
	kafkatest.Eventually(t, time.Minute, "every replica's status shows the plan APPLIED", func() bool {
		for _, w := range ws {
			if w.statusOf(b.ctl, planB.PlanID) != fsm.Applied {
				return false
			}
		}
		return true
	})

	victim := b.owner(ws...)
	live := slices.DeleteFunc(slices.Clone(ws), func(p *proc) bool { return p == victim })
	if err := victim.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	victim.WaitDeath(t, 30*time.Second)
	for _, s := range []*scene{a, b} {
		kafkatest.Eventually(t, time.Minute, "a survivor owns "+s.ctl, func() bool { return live[0].owns(s.ctl) || live[1].owns(s.ctl) })
	}
	for i, s := range []*scene{a, b} {
		plan := s.plan(fmt.Sprintf("after-kill-%d", i), events.Offsets{0: 150, 1: 150})
		s.commit(plan)
		s.waitApplied(plan.PlanID, time.Minute)
		s.check(invariant.WantAllApplied())
	}
	for _, p := range live {
		p.Terminate(t)
	}
	if end, err := base.c.EndOffsets(context.Background(), typo); err != nil || !end.Equal(typoEnd) {
		t.Fatalf("the data topic the regex matched by mistake was written to: end offsets %v, were %v (%v)", end, typoEnd, err)
	}
}

// A worker given a data topic as its control topic by mistake (one typo in
// --control-topic) reads it but writes nothing to it: its records are all
// rejected, and without the guard the owner would tombstone their keys
// (Retractions) once past the grace, erasing the data on compaction.
func TestWorkerGivenADataTopicWritesNothingToIt(t *testing.T) {
	s := newScene(t)
	end, err := s.c.EndOffsets(context.Background(), s.topic)
	if err != nil {
		t.Fatal(err)
	}
	w := s.startWorkerServing("typo", []string{"--control-topic", s.topic})
	w.WaitLog(t, time.Minute, func(l workertest.LogLine) bool { return strings.Contains(l.Err, "is not a control topic") })
	if got, err := s.c.EndOffsets(context.Background(), s.topic); err != nil || !got.Equal(end) {
		t.Fatalf("the data topic was written to: end offsets %v, were %v (%v)", got, end, err)
	}
	w.Terminate(t)
}

// Every replica's fleet table names each replica as its operator named it
// (--replica-name, or KCLEANUP_REPLICA_NAME), with its host and start time,
// read from what the group coordinator describes for every member: two
// replicas on one host were two member IDs with client ID "kcleanup" and
// host /127.0.0.1. Real broker, real processes.
func TestFleetNamesEveryReplica(t *testing.T) {
	s := newScene(t)
	a := s.startWorkerServing("a", []string{"--control-topic", s.ctl, "--replica-name", "kc-a.example:9308"})
	b := s.startWorkerServing("b", []string{"--control-topic", s.ctl}, "KCLEANUP_REPLICA_NAME=kc-b")
	for _, p := range []*proc{a, b} {
		var fleet *report.FleetStatus
		kafkatest.Eventually(t, time.Minute, p.Name+" describes both replicas", func() bool {
			resp, err := http.Get(p.URL + "/v1/status")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			var ws report.WorkerStatus
			if json.NewDecoder(resp.Body).Decode(&ws) != nil || ws.Fleet == nil {
				return false
			}
			fleet = ws.Fleet
			return len(fleet.Members) == 2
		})
		names := map[string]report.FleetMember{}
		for _, m := range fleet.Members {
			names[m.Replica] = m
		}
		for name, self := range map[string]bool{"kc-a.example:9308": p == a, "kc-b": p == b} {
			m, ok := names[name]
			if !ok || m.StartedAt == nil || m.StartedAt.IsZero() || m.Host == "" || m.Self != self ||
				m.ClientID != "kcleanup-worker/"+name+"@"+m.StartedAt.Format(time.RFC3339) {
				t.Errorf("%s's fleet: replica %q is %+v; want it named, with its host, start time and self=%t", p.Name, name, m, self)
			}
		}
		resp, err := http.Get(p.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, name := range []string{"kc-a.example:9308", "kc-b"} {
			if !strings.Contains(string(page), "<b>"+name+"</b>") || !strings.Contains(string(page), names[name].StartedAt.Format(time.RFC3339)) {
				t.Errorf("%s's console does not name replica %s with its start time", p.Name, name)
			}
		}
	}
	a.Terminate(t)
	b.Terminate(t)
}
