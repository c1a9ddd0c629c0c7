package flinkagents

import (
	"testing"

	"github.com/kcleanup/kcleanup/events"
)

func TestEncodeValueRoundTrip(t *testing.T) {
	for _, rp := range []string{"chk-7", "s3://bucket/savepoints/<a&b>", "naïve ✓ \"quoted\" \\ slash"} {
		offs := events.Offsets{0: 150, 1: 0, 10: 9223372036854775807}
		p := events.Plan{SourceRecoveryPoint: rp, Topic: "action-state", TopicID: "AAECAwQFBgcICQoLDA0ODw", Offsets: offs}
		p.PlanID = events.ComputePlanID(p.SourceRecoveryPoint, p.Topic, p.TopicID, p.Offsets)
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		for _, st := range []Status{Committed, Applied} {
			v := EncodeValue(st, p)
			gotSt, got, err := ParseValue(v)
			if err != nil {
				t.Fatalf("ParseValue(%s): %v", v, err)
			}
			if gotSt != st || !got.Equal(FromKcleanup(p)) {
				t.Fatalf("round trip: %s %+v, want %s %+v", gotSt, got, st, p)
			}
			f := New()
			if err := f.Step(Record{Offset: 0, Key: []byte(p.PlanID), Value: v}); err != nil {
				t.Fatalf("the job's fold refuses %s: %v", v, err)
			}
		}
	}
	p := events.Plan{SourceRecoveryPoint: "c", Topic: "t", TopicID: "AAECAwQFBgcICQoLDA0ODw", Offsets: events.Offsets{1: 5, 0: 4}}
	p.PlanID = events.ComputePlanID(p.SourceRecoveryPoint, p.Topic, p.TopicID, p.Offsets)
	want := `{"schemaVersion":1,"status":"COMMITTED","plan":{"schemaVersion":1,"planId":"` + p.PlanID +
		`","sourceRecoveryPoint":"c","topic":"t","topicId":"AAECAwQFBgcICQoLDA0ODw","offsets":{"0":4,"1":5}}}`
	if got := string(EncodeValue(Committed, p)); got != want {
		t.Fatalf("EncodeValue:\n%s\nwant\n%s", got, want)
	}
}
