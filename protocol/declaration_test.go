package protocol

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
)

// declared is a log holding a no-tombstones declaration for the data topic
// (incarnation topicID(1)) since the given offsets.
func declared(since events.Offsets) *reviewLog {
	var log reviewLog
	log.env(events.NewDeclaration(dataTopic, topicID(1), since, "cleanup mode rejects tombstones", time.Time{}, ""))
	return &log
}

func TestTombstoneScanFromAndDeclared(t *testing.T) {
	from := events.Offsets{0: 150, 1: 100, 2: 7}
	for _, tc := range []struct {
		name   string
		log    *reviewLog
		read   events.Offsets // what the rule must read
		needRd bool           // whether Read on the data topic stays needed
	}{
		{"no declaration", &reviewLog{}, from, true},
		{"covers every partition", declared(events.Offsets{0: 150, 1: 0, 2: 7}), nil, false},
		{"since above the boundary on one", declared(events.Offsets{0: 151, 1: 0, 2: 0}), events.Offsets{0: 150}, true},
		{"a partition it does not name", declared(events.Offsets{0: 0, 1: 0}), events.Offsets{2: 7}, true},
		{"another incarnation", func() *reviewLog {
			var l reviewLog
			l.env(events.NewDeclaration(dataTopic, topicID(9), events.Offsets{0: 0, 1: 0, 2: 0}, "r", time.Time{}, ""))
			return &l
		}(), from, true},
		{"withdrawn", func() *reviewLog {
			l := declared(events.Offsets{0: 0, 1: 0, 2: 0})
			l.env(events.NewWithdrawal("release 43 writes them", time.Time{}, ""))
			return l
		}(), from, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.log.fold()
			got := TombstoneScanFrom(st, dataTopic, topicID(1), from)
			if !got.Equal(tc.read) || (got == nil) != (tc.read == nil) {
				t.Fatalf("TombstoneScanFrom = %v, want %v", got, tc.read)
			}
			plan := events.Plan{Topic: dataTopic, TopicID: topicID(1), Offsets: from}
			need := TombstoneNeeds(st, plan, from, FinishNeeds("c", dataTopic))
			if has := slices.Contains(need, DataRead(dataTopic)); has != tc.needRd {
				t.Fatalf("Read on the data topic needed: %v, want %v (%v)", has, tc.needRd, need)
			}
			// What was read found nothing: the rule lets the deletion start.
			topic := Topic{End: events.Offsets{0: 200, 1: 200, 2: 200}}
			scan := Declared(st, dataTopic, topicID(1), from, noTombstones(got, topic))
			if err := WatchTombstones(dataTopic, from, scan); err != nil {
				t.Fatalf("nothing read found a tombstone, yet: %v", err)
			}
		})
	}
}

// A tombstone the executor saw anyway on a covered partition blocks: the
// declaration is wrong there, and evidence beats it (defence in depth).
func TestDeclaredTombstoneSeenAnywayBlocks(t *testing.T) {
	st := declared(events.Offsets{0: 0, 1: 0}).fold()
	from := events.Offsets{0: 150, 1: 100}
	seen := &TombstoneScan{Partitions: map[int32]PartitionScan{1: {From: 100, To: 180, Read: 180, Latest: 170}}}
	err := WatchTombstones(dataTopic, from, Declared(st, dataTopic, topicID(1), from, seen))
	if !errors.Is(err, ErrTombstones) || !strings.Contains(err.Error(), "action-state-1: a tombstone at offset 170") {
		t.Fatalf("a tombstone seen on a declared partition: %v, want ErrTombstones naming it", err)
	}
	// One below the boundary is what the plan left behind: harmless.
	seen.Partitions[1] = PartitionScan{From: 90, To: 180, Read: 180, Latest: 95}
	if err := WatchTombstones(dataTopic, from, Declared(st, dataTopic, topicID(1), from, seen)); err != nil {
		t.Fatalf("a tombstone below the boundary: %v", err)
	}
}

// TestApplyUnderDeclarationReadsNothing drives a control topic's first
// apply to its deletion: with a declaration covering the plan, no step asks
// the executor to read the data topic and no Permissions step asks for Read
// on it; without one, the first plan's scan and Read are asked for, as
// before (the test's second half, which held before the declaration existed;
// the first half failed then: every Describe carried ScanFrom).
func TestApplyUnderDeclarationReadsNothing(t *testing.T) {
	p := reviewPlan("C1", events.Offsets{0: 150, 1: 100})
	topic := Topic{Name: dataTopic, ID: topicID(1), Partitions: []int32{0, 1}, Replicas: 1,
		Configs: map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1"},
		Start:   events.Offsets{0: 0, 1: 0}, End: events.Offsets{0: 200, 1: 200}}
	run := func(log *reviewLog) (scans int, readNeeded bool, end Kind) {
		st := log.fold()
		r := NewApply(p, Config{ControlTopic: "action-state.kcleanup", Bootstrap: "localhost:9092"})
		var rep Report
		for n := 0; n < 40; n++ {
			step := r.Next(st, rep)
			rep = Report{}
			switch step.Kind {
			case Append:
				env := step.Record
				env.Actor, env.At = "test", time.Date(2026, 12, 1, 10, 0, n, 0, time.UTC)
				key, value := env.Encode()
				log.recs = append(log.recs, recordOf(len(log.recs), key, value))
				rep.Verdict = st.Step(log.recs[len(log.recs)-1])
			case Describe, Recheck:
				if step.ScanFrom != nil {
					scans++
				}
				rep.Topic, rep.Tombstones = topic, noTombstones(step.ScanFrom, topic)
			case Permissions:
				readNeeded = readNeeded || slices.Contains(step.Need, DataRead(dataTopic))
			case Delete:
				return scans, readNeeded, Delete
			}
			if step.Kind.Terminal() {
				t.Fatalf("the run ended %s (%v), want Delete", step.Kind, step.Err)
			}
		}
		t.Fatal("the run did not reach its deletion")
		return
	}
	if scans, read, _ := run(declared(events.Offsets{0: 0, 1: 0})); scans != 0 || read {
		t.Fatalf("under a declaration: %d scans asked, Read needed %v; want none", scans, read)
	}
	if scans, read, _ := run(&reviewLog{}); scans == 0 || !read {
		t.Fatalf("without a declaration: %d scans asked, Read needed %v; want the scan and Read", scans, read)
	}
}
