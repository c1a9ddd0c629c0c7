package protocol_test

import (
	"testing"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
)

// TestNoDeletionWithoutTheDeletingReadBack: a finishing run whose DELETING the log, read back,
// rejected deletes nothing, and waits: a DELETING is every other reader's evidence that its
// writer read the COMMITTED back accepted (docs/design.md §6), and the deletion is issued only
// for an operation the projection shows DELETING. Issue 33 item 3's mutation "a worker that
// skips the read-back before deleting" (the verdict not checked, the projection not asked)
// fails it; no test on a broker did (docs/testing.md).
func TestNoDeletionWithoutTheDeletingReadBack(t *testing.T) {
	p := plan(t, "C1", events.Offsets{0: 150})
	st := state(t, p, events.Planned, events.Committed)
	topic := protocol.Topic{Name: dataTopic, ID: dataID, Partitions: []int32{0}, Replicas: 1,
		Configs: map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1"},
		Start:   events.Offsets{0: 0}, End: events.Offsets{0: 200}}
	run := protocol.NewFinish(p.PlanID, protocol.Config{ControlTopic: control, Bootstrap: "127.0.0.1:9092"})
	var rep protocol.Report
	appended := false
	for range 30 {
		step := run.Next(st, rep)
		rep = protocol.Report{}
		switch step.Kind {
		case protocol.CatchUp, protocol.Permissions:
		case protocol.Describe, protocol.Recheck:
			rep.Topic = topic
			if step.ScanFrom != nil {
				scan := &protocol.TombstoneScan{Partitions: map[int32]protocol.PartitionScan{}}
				for part, from := range step.ScanFrom {
					scan.Partitions[part] = protocol.PartitionScan{From: from, To: 200, Read: 200, Latest: -1}
				}
				rep.Tombstones = scan
			}
		case protocol.Append:
			if step.Record.Event != events.Deleting {
				t.Fatalf("appended %s, want only DELETING", step.Record.Event)
			}
			// The log rejected it: the projection, read back, does not show it.
			appended = true
			rep.Verdict = projector.Verdict{Outcome: projector.Rejected, Offset: 3, Reason: "test", Detail: "rejected by the test"}
		case protocol.Delete:
			t.Fatalf("DeleteRecords up to %v although the log rejected the run's DELETING", step.Delete)
		default:
			if !appended {
				t.Fatalf("the run ended (%s: %v) before it appended DELETING: the test drives the wrong path", step.Kind, step.Err)
			}
			if step.Kind != protocol.Wait {
				t.Fatalf("the run ended %s (%v), want wait", step.Kind, step.Err)
			}
			t.Logf("wait: %v", step.Err)
			return
		}
	}
	t.Fatal("the run did not end in 30 steps")
}
