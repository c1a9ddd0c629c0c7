package events

import (
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
)

// A PLANNED or COMMITTED with an operator's reason is schema version 5 with
// "reason" after "actor", and decodes to itself; without one it is version
// 1, byte for byte what earlier builds wrote (a foreign producer's record).
func TestReasonRoundTrip(t *testing.T) {
	for _, e := range []Event{Planned, Committed} {
		env := envelopeOf(e, planC1())
		_, v1 := env.Encode()
		if !strings.HasPrefix(string(v1), `{"schemaVersion":1,`) || strings.Contains(string(v1), `"reason"`) {
			t.Fatalf("%s without a reason: %s, want schema 1 and no reason", e, v1)
		}
		got, err := Decode([]byte(Key(env.PlanID, e)), v1)
		if err != nil || got.Reason != "" || got.SchemaVersion != SchemaVersion {
			t.Fatalf("%s without a reason decodes to %+v, %v", e, got, err)
		}

		env.Reason = "reclaim 40 GiB before the quarter close \u00e9"
		if err := env.Validate(); err != nil {
			t.Fatalf("%s with a reason: Validate: %v", e, err)
		}
		k, v := env.Encode()
		if !strings.HasPrefix(string(v), `{"schemaVersion":5,`) || !strings.Contains(string(v), `"actor":"worker-1/4242","reason":"reclaim 40 GiB`) {
			t.Fatalf("%s with a reason encodes as %s", e, v)
		}
		for name, dec := range map[string]func(k, v []byte) (Envelope, error){"Decode": Decode, "Decoder": NewDecoder().Decode} {
			got, err := dec(k, v)
			env.SchemaVersion = ReasonSchemaVersion
			if err != nil || !envelopesEqual(got, env) {
				t.Fatalf("%s: %s with a reason decodes to %+v, %v; want %+v", name, e, got, err, env)
			}
		}
	}
}

// What a reader refuses, and how: a reason in schema 1 (closed), a version
// 5 without one, a version 5 DELETING, a blank, over-long or control
// reason. All malformed; none degrades.
func TestReasonDecodeErrors(t *testing.T) {
	committed := func(version, reasonField string) string {
		_, v := envelopeOf(Committed, planC1()).Encode()
		s := mutate(t, string(v), `{"schemaVersion":1,"event"`, `{"schemaVersion":`+version+`,"event"`)
		return mutate(t, s, `"actor":"worker-1/4242"`, `"actor":"worker-1/4242"`+reasonField)
	}
	key := []byte(Key(planC1ID, Committed))
	_, deleting := envelopeOf(Deleting, planC1()).Encode()
	deleting = []byte(mutate(t, string(deleting), `"actor":"worker-1/4242"`, `"actor":"worker-1/4242","reason":"x"`))
	deleting = []byte(mutate(t, string(deleting), `{"schemaVersion":1,"event"`, `{"schemaVersion":5,"event"`))
	for _, c := range []struct {
		name, key, value, want string
	}{
		{"reason in schema 1", string(key), committed("1", `,"reason":"why"`), `field "reason": is in a record of schema version 1: expected it only in version 5`},
		{"version 5 without a reason", string(key), committed("5", ``), `field "reason"`},
		{"version 5 DELETING", Key(planC1ID, Deleting), string(deleting), `only a PLANNED or COMMITTED carries a reason`},
		{"blank reason", string(key), committed("5", `,"reason":"  "`), `is blank`},
		{"control character", string(key), committed("5", `,"reason":"a\u0007b"`), `control character`},
		{"over-long reason", string(key), committed("5", `,"reason":"`+strings.Repeat("x", MaxReasonBytes+1)+`"`), `is 1025 bytes: expected at most 1024`},
	} {
		_, err := Decode([]byte(c.key), []byte(c.value))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Decode = %v, want malformed naming %q", c.name, err, c.want)
		}
	}
	// A version above 5 (or 2, 3, 4) under a plan key is still a newer schema.
	for _, v := range []string{"2", "6", "99"} {
		if _, err := Decode(key, []byte(committed(v, `,"reason":"why"`))); !errors.Is(err, ErrNewerSchema) {
			t.Errorf("schema %s under a plan key: Decode = %v, want ErrNewerSchema", v, err)
		}
	}
}

func TestCheckReason(t *testing.T) {
	for _, bad := range []string{"", " \t", "a\nb", strings.Repeat("x", MaxReasonBytes+1)} {
		if err := CheckReason(bad); err == nil {
			t.Errorf("CheckReason(%q) = nil, want an error", bad)
		}
	}
	if err := CheckReason(strings.Repeat("x", MaxReasonBytes)); err != nil {
		t.Errorf("CheckReason of %d bytes: %v", MaxReasonBytes, err)
	}
	env := envelopeOf(Deleting, planC1())
	env.Reason = "why"
	if err := env.Validate(); err == nil {
		t.Error("Validate of a DELETING with a reason = nil, want an error: Encode would drop it")
	}
}
