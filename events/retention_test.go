package events

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRetentionRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 6, 10, 0, 0, 5, time.UTC)
	set := NewRetentionSet(Retention{Topic: "action-state", Watch: []string{"s3://b/checkpoints", "/data/savepoints"},
		Every: time.Minute, MinAdvance: 100, OperatorUID: "action-state-operator", Reason: "follow the job"}, at, "ops/1")
	clr := NewRetentionClear("action-state", "job retired", at, "ops/1")
	for _, env := range []Envelope{set, clr} {
		if err := env.Validate(); err != nil {
			t.Fatalf("%s: Validate: %v", env.Event, err)
		}
		k, v := env.Encode()
		if want := "retention/" + string(env.Event); string(k) != want {
			t.Fatalf("key %s, want %s", k, want)
		}
		got, err := Decode(k, v)
		if err != nil {
			t.Fatalf("Decode %s: %v", v, err)
		}
		k2, v2 := got.Encode()
		if string(k2) != string(k) || string(v2) != string(v) {
			t.Fatalf("round trip changed the record:\n%s\n%s", v, v2)
		}
	}
	if _, v := set.Encode(); !strings.Contains(string(v), `"schemaVersion":7`) || !strings.Contains(string(v), `"everyMs":60000`) {
		t.Fatalf("RETENTION_SET is %s", v)
	}
}

// A build that knows plans, mirrors and pins but not retention reads a
// retention record as a newer schema: its key is no plan key, so the plan
// decoder classifies the body by schemaVersion 5 (above 1) and fails closed.
func TestRetentionFailsClosedInOlderBuilds(t *testing.T) {
	k, v := NewRetentionSet(Retention{Topic: "t", Watch: []string{"/c"}, Every: time.Second, Reason: "r"}, time.Now(), "a").Encode()
	_, err := strictDecodePlanOnly(k, v)
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("an older build's decode: %v, want ErrNewerSchema", err)
	}
}

// strictDecodePlanOnly is Decode as a build without retention events has it:
// the key is not a pin or mirror key, so the plan decoder reads it.
func strictDecodePlanOnly(key, value []byte) (Envelope, error) {
	_, _, keyErr := ParseKey(key)
	sh, ferr := scan(value)
	if ferr != nil {
		return Envelope{}, malformed(ferr)
	}
	return Envelope{}, classify(sh, "", "", keyErr)
}

func TestRetentionDecodeErrors(t *testing.T) {
	cases := []struct {
		key, value string
		want       error
		says       string
	}{
		{"retention/RETENTION_SET", `{"schemaVersion":8,"event":"RETENTION_SET","whatever":1}`, ErrNewerSchema, "upgrade kcleanup"},
		{"retention/RETENTION_PAUSED", `{"schemaVersion":7,"event":"RETENTION_PAUSED"}`, ErrUnknownEvent, "upgrade kcleanup"},
		{"retention/RETENTION_SET", `{"schemaVersion":7,"event":"RETENTION_SET","topic":"t","watch":["/c"],"everyMs":500,"at":"2026-12-06T10:00:00Z","actor":"a","reason":"r"}`, ErrMalformed, "at least 1s"},
		{"retention/RETENTION_SET", `{"schemaVersion":7,"event":"RETENTION_SET","topic":"t","everyMs":5000,"at":"2026-12-06T10:00:00Z","actor":"a","reason":"r"}`, ErrMalformed, "watch is empty"},
		{"retention/RETENTION_SET", `{"schemaVersion":7,"event":"RETENTION_CLEARED","topic":"t","at":"2026-12-06T10:00:00Z","actor":"a","reason":"r"}`, ErrMalformed, "key names"},
		{"retention/RETENTION_CLEARED", `{"schemaVersion":7,"event":"RETENTION_CLEARED","topic":"t","at":"2026-12-06T10:00:00Z","actor":"a","reason":" "}`, ErrMalformed, "reason is blank"},
		{"retention/RETENTION_CLEARED", `{"schemaVersion":7,"event":"RETENTION_CLEARED","topic":"t","at":"2026-12-06T10:00:00Z","actor":"a","reason":"r","extra":1}`, ErrMalformed, "extra"},
	}
	for _, c := range cases {
		_, err := Decode([]byte(c.key), []byte(c.value))
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Decode(%s, %s) = %v, want %v saying %q", c.key, c.value, err, c.want, c.says)
		}
	}
}

func TestRetentionEventSchemaMatchesEncoder(t *testing.T) {
	s := loadSchema(t, "retention-event.schema.json")
	if got := strs(t, at(t, s, "properties", "event", "enum")); !slices.Equal(got, []string{string(RetentionSet), string(RetentionCleared)}) {
		t.Errorf("event enum = %v", got)
	}
	if v := at(t, s, "properties", "schemaVersion", "const"); v != float64(RetentionSchemaVersion) {
		t.Errorf("schemaVersion const = %v, want %d", v, RetentionSchemaVersion)
	}
	props := slices.Sorted(maps.Keys(at(t, s, "properties").(map[string]any)))
	all := []string{"schemaVersion", "event", "topic", "watch", "everyMs", "minAdvance", "operatorUid", "operatorUidHash", "at", "actor", "reason"}
	if want := slices.Sorted(slices.Values(all)); !slices.Equal(props, want) {
		t.Errorf("properties = %v, want %v", props, want)
	}
	at0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	_, value := NewRetentionSet(Retention{Topic: "t", Watch: []string{"/c"}, Every: time.Second, MinAdvance: 5, OperatorUID: "op", Reason: "r"}, at0, "a").Encode()
	if got, want := written(t, value), slices.DeleteFunc(slices.Clone(all), func(f string) bool { return f == "operatorUidHash" }); !slices.Equal(got, want) {
		t.Errorf("RETENTION_SET: Encode writes %v, want %v", got, want)
	}
	_, value = NewRetentionClear("t", "done", at0, "a").Encode()
	if got, want := written(t, value), strs(t, at(t, s, "required")); !slices.Equal(got, want) {
		t.Errorf("RETENTION_CLEARED: Encode writes %v, schema requires %v", got, want)
	}
}
