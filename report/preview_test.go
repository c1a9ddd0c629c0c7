package report

import (
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
)

// A preview row says what apply would do to a partition: a partition the plan may delete
// moves its log start up to the plan, one apply refuses keeps every record, and a partition
// the topic does not have is left to Preflight's refusal.
func TestPartitionsPreview(t *testing.T) {
	const tid = "MTIzNDU2Nzg5MDEyMzQ1Ng"
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := projector.New()
	committed, err := events.BuildPlan("C1", []events.Marker{{Topic: "t", TopicID: tid, Offsets: events.Offsets{0: 100}}})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range []events.Event{events.Planned, events.Committed} {
		env := events.Envelope{SchemaVersion: 1, Event: e, PlanID: committed.PlanID, Plan: committed, At: at, Actor: "a"}
		if e == events.Committed {
			env.Boundary = committed.Offsets
		}
		k, v := env.Encode()
		if verdict := st.Step(projector.Record{Offset: int64(i), Key: k, Value: v, Timestamp: at}); verdict.Outcome != projector.Accepted {
			t.Fatalf("%s: %+v", e, verdict)
		}
	}
	plan, err := events.BuildPlan("C2", []events.Marker{{Topic: "t", TopicID: tid, Offsets: events.Offsets{0: 150, 1: 300, 2: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	info := protocol.Topic{Name: "t", ID: tid, Partitions: []int32{0, 1},
		Start: events.Offsets{0: 50, 1: 0}, End: events.Offsets{0: 200, 1: 200}}

	rows := PartitionsPreview(plan, info, st)
	if len(rows) != 2 || rows[0].Partition != 0 || rows[1].Partition != 1 {
		t.Fatalf("rows %+v: want partitions 0 and 1 (the topic has no partition 2)", rows)
	}
	p0, p1 := rows[0], rows[1]
	if p0.NewLogStart != 150 || p0.Deletable != 100 || p0.Refused != "" || p0.Boundary == nil || *p0.Boundary != 100 || p0.BoundarySetBy != committed.PlanID {
		t.Errorf("partition 0: %+v", p0)
	}
	if p1.Refused == "" || p1.NewLogStart != 0 || p1.Deletable != 0 || p1.Boundary != nil {
		t.Errorf("partition 1 (above the high watermark): %+v", p1)
	}
}

// A plan apply refuses as a whole leaves no partition "ok": a row apply would accept on its
// own shows the plan's refusal, deletes nothing; a row with its own refusal keeps it (issue 20,
// row "preview of a plan apply refuses as a whole").
func TestRefuseWholeLeavesNoPartitionOK(t *testing.T) {
	own := "partition 1: plan offset 300 is outside the available range [0, 200] (log start, high watermark)"
	rows := []PartitionPreview{
		{Partition: 0, PlanOffset: 150, LogStart: 50, NewLogStart: 150, Deletable: 100},
		{Partition: 1, PlanOffset: 300, LogStart: 0, NewLogStart: 0, Refused: own},
	}
	RefuseWhole(rows, "data topic t "+own+"\ndata topic t: cleanup.policy is delete")
	if got, want := rows[0].Refused, "plan refused as a whole: data topic t: cleanup.policy is delete"; got != want {
		t.Errorf("row 0 refused %q, want %q", got, want)
	}
	if rows[0].NewLogStart != 50 || rows[0].Deletable != 0 {
		t.Errorf("row 0 would still delete: %+v", rows[0])
	}
	if rows[1].Refused != own {
		t.Errorf("row 1 lost its own refusal: %q", rows[1].Refused)
	}
	// Refused only by another partition: that partition's refusal is the one that applies.
	rows = []PartitionPreview{{Partition: 0, PlanOffset: 150, LogStart: 50, NewLogStart: 150, Deletable: 100}, {Partition: 1, Refused: own}}
	RefuseWhole(rows, own)
	if got := rows[0].Refused; got != "plan refused as a whole: "+own {
		t.Errorf("row 0 refused %q", got)
	}
}
