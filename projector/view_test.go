package projector

import (
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/events"
)

// TestViewClassifiesEveryRecordOnce: the View is the one read that says which format a control
// topic's records are in, folds them by Flink Agents' rules while they may be the job's, and keeps
// the rejected ones that are another tool's control records, for the gate to name.
func TestViewClassifiesEveryRecordOnce(t *testing.T) {
	p := newPlan("C1", "action-state", testTopicID(1), events.Offsets{0: 150})
	flinkKey := []byte(strings.Repeat("a", 64))
	flinkValue := []byte(`{"schemaVersion":1,"status":"COMMITTED","plan":{}}`)

	v := NewView()
	if v.Format() != FormatNone || v.Flink() != nil || len(v.Foreign()) != 0 {
		t.Fatalf("empty view: format %q, flink %v, foreign %v", v.Format(), v.Flink(), v.Foreign())
	}

	// Flink Agents' records only: the job's fold is kept, and every one is foreign to kcleanup's fold.
	v.Step(Record{Offset: 0, Key: flinkKey, Value: flinkValue})
	v.Step(Record{Offset: 1, Key: flinkKey}) // a tombstone under a plan-ID key is the job's too
	if v.Format() != FormatFlinkAgents || v.Flink() == nil {
		t.Fatalf("format %q, flink fold %v", v.Format(), v.Flink())
	}
	f := v.Foreign()
	if len(f) != 2 || f[0].Offset != 0 || f[1].Status != "tombstone" || f[0].Format != FlinkAgents {
		t.Fatalf("foreign %+v", f)
	}
	if n, first := v.FlinkRecords(); n != 2 || first != 0 {
		t.Fatalf("FlinkRecords() = %d, %d", n, first)
	}

	// One of kcleanup's: mixed, and neither fold is trusted.
	if vd := v.Step(record(2, envelope(p, events.Planned, 2, "w"))); vd.Outcome != Accepted {
		t.Fatalf("PLANNED: %+v", vd)
	}
	if v.Format() != FormatMixed || v.Flink() != nil {
		t.Fatalf("format %q, flink fold %v", v.Format(), v.Flink())
	}
	// The view's State is the fold: the record folded once, through the view.
	if _, ok := v.State.Operation(p.PlanID); !ok || v.State.Next() != 3 {
		t.Fatalf("state: operation missing or next %d", v.State.Next())
	}

	// kcleanup's own records only.
	k := NewView()
	k.StepDecodedLean(Decode(record(0, envelope(p, events.Planned, 0, "w"))))
	k.StepDecoded(Decode(Record{Offset: 1, Key: []byte("junk"), Value: []byte("{}")}))
	if k.Format() != FormatKcleanup || k.Flink() != nil || len(k.Foreign()) != 0 {
		t.Fatalf("kcleanup view: format %q, flink %v, foreign %v", k.Format(), k.Flink(), k.Foreign())
	}
}
