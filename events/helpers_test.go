package events

import (
	"strings"
	"testing"
	"time"
)

// Shared fixtures. topicA is a real-looking topic ID ("1234567890123456").
const (
	topicA = "MTIzNDU2Nzg5MDEyMzQ1Ng"
	// planC1ID is the ID of planC1JSON, computed independently with
	// printf '1\ncp-7\naction-state\nMTIzNDU2Nzg5MDEyMzQ1Ng\n0=100\n1=150\n' | sha256sum
	planC1ID   = "b7bb46667126b4eacd867ec617ce31b61ce0d3a8fce31977aa795cae2807730e"
	planC1JSON = `{"schemaVersion":1,"planId":"` + planC1ID + `","sourceRecoveryPoint":"cp-7","topic":"action-state","topicId":"` + topicA + `","offsets":{"0":100,"1":150}}`
)

func planC1() Plan {
	return Plan{PlanID: planC1ID, SourceRecoveryPoint: "cp-7", Topic: "action-state", TopicID: topicA, Offsets: Offsets{0: 100, 1: 150}}
}

// mutate replaces old with new in s exactly once, failing the test if old is
// absent, so a table case cannot silently test the unmodified input.
func mutate(t testing.TB, s, old, new string) string {
	t.Helper()
	if strings.Count(s, old) != 1 {
		t.Fatalf("fixture %q does not contain %q exactly once", s, old)
	}
	return strings.Replace(s, old, new, 1)
}

func envelopeOf(e Event, p Plan) Envelope {
	env := Envelope{
		SchemaVersion: SchemaVersion,
		Event:         e,
		PlanID:        p.PlanID,
		Plan:          p,
		At:            time.Date(2025, 3, 4, 5, 6, 7, 890000000, time.UTC),
		Actor:         "worker-1/4242",
	}
	switch e {
	case Committed:
		env.Boundary = Offsets{0: 100, 1: 150, 2: 7}
	case Applied:
		env.LogStart = Offsets{0: 100, 1: 151}
	}
	return env
}

func plansEqual(a, b Plan) bool {
	return a.PlanID == b.PlanID && a.SourceRecoveryPoint == b.SourceRecoveryPoint &&
		a.Topic == b.Topic && a.TopicID == b.TopicID && a.Offsets.Equal(b.Offsets)
}

func envelopesEqual(a, b Envelope) bool {
	return a.SchemaVersion == b.SchemaVersion && a.Event == b.Event && a.PlanID == b.PlanID &&
		plansEqual(a.Plan, b.Plan) && a.At.Equal(b.At) && a.Actor == b.Actor && a.Reason == b.Reason &&
		(a.Boundary == nil) == (b.Boundary == nil) && a.Boundary.Equal(b.Boundary) &&
		(a.LogStart == nil) == (b.LogStart == nil) && a.LogStart.Equal(b.LogStart) &&
		(a.Mirror == nil) == (b.Mirror == nil) && (a.Mirror == nil || *a.Mirror == *b.Mirror) &&
		(a.Pin == nil) == (b.Pin == nil) && (a.Pin == nil || pinsEqual(*a.Pin, *b.Pin)) &&
		(a.Declaration == nil) == (b.Declaration == nil) && (a.Declaration == nil || declarationsEqual(*a.Declaration, *b.Declaration))
}

func declarationsEqual(a, b Declaration) bool {
	return a.Topic == b.Topic && a.TopicID == b.TopicID && (a.Since == nil) == (b.Since == nil) && a.Since.Equal(b.Since) && a.Reason == b.Reason
}

func pinsEqual(a, b Pin) bool {
	return a.PinID == b.PinID && a.RecoveryPoint == b.RecoveryPoint && a.Topic == b.Topic && a.TopicID == b.TopicID &&
		(a.Offsets == nil) == (b.Offsets == nil) && a.Offsets.Equal(b.Offsets) && a.Expires.Equal(b.Expires) && a.Reason == b.Reason
}
