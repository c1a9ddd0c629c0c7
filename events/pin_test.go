package events

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
)

var pinAt = time.Date(2025, 3, 4, 5, 6, 7, 890000000, time.UTC)

func pinEvent(expires time.Time) Envelope {
	return NewPin("sp-7", "action-state", mirrorTopicID, Offsets{0: 40, 1: 30}, expires, "rollback point for release 42", pinAt, "host/42")
}

func TestPinEventRoundTrip(t *testing.T) {
	for _, env := range []Envelope{pinEvent(time.Time{}), pinEvent(pinAt.Add(7 * 24 * time.Hour)), NewUnpin(pinEvent(time.Time{}).Pin.PinID, "released", pinAt, "host/43")} {
		if err := env.Validate(); err != nil {
			t.Fatalf("%s: Validate: %v", env.Event, err)
		}
		key, value := env.Encode()
		if want := "pin/" + env.Pin.PinID + "/" + string(env.Event); string(key) != want {
			t.Fatalf("key %q, want %q", key, want)
		}
		got, err := Decode(key, value)
		if err != nil {
			t.Fatalf("Decode(Encode()): %v\n%s", err, value)
		}
		if got.SchemaVersion != PinSchemaVersion || got.Event != env.Event || got.Pin == nil || got.Pin.PinID != env.Pin.PinID ||
			got.Pin.RecoveryPoint != env.Pin.RecoveryPoint || !maps.Equal(got.Pin.Offsets, env.Pin.Offsets) || !got.Pin.Expires.Equal(env.Pin.Expires) ||
			got.Pin.Reason != env.Pin.Reason || !got.At.Equal(env.At) || got.Actor != env.Actor || got.PlanID != "" {
			t.Fatalf("round trip changed the event:\n got %+v %+v\nwant %+v %+v", got, got.Pin, env, env.Pin)
		}
	}
}

// TestPinEventBytes pins the encoding: older kcleanups read exactly these
// bytes and must fail closed on them (TestOldBuildsDegradeOnPinEvents in
// package worker).
func TestPinEventBytes(t *testing.T) {
	env := pinEvent(pinAt.Add(time.Hour))
	_, value := env.Encode()
	want := `{"schemaVersion":3,"event":"PINNED","pinId":"` + env.Pin.PinID + `","recoveryPoint":"sp-7","topic":"action-state","topicId":"` + mirrorTopicID +
		`","offsets":{"0":40,"1":30},"expires":"2025-03-04T06:06:07.89Z","at":"2025-03-04T05:06:07.89Z","actor":"host/42","reason":"rollback point for release 42"}`
	if string(value) != want {
		t.Fatalf("Encode:\n%s\nwant:\n%s", value, want)
	}
}

func TestPinEventDecodeErrors(t *testing.T) {
	pin := pinEvent(time.Time{})
	k, good := pin.Encode()
	key, v := string(k), string(good)
	uk, ugood := NewUnpin(pin.Pin.PinID, "done", pinAt, "host/42").Encode()
	cases := []struct {
		name, key, value string
		class            error
		field            string
	}{
		{"newer schema", key, mutate(t, v, `"schemaVersion":3`, `"schemaVersion":4`), ErrNewerSchema, "schemaVersion"},
		{"schema 1", key, mutate(t, v, `"schemaVersion":3`, `"schemaVersion":1`), ErrMalformed, "schemaVersion"},
		{"schema 2", key, mutate(t, v, `"schemaVersion":3`, `"schemaVersion":2`), ErrMalformed, "schemaVersion"},
		{"unknown pin event", "pin/" + pin.Pin.PinID + "/PIN_EXTENDED", mutate(t, v, `"PINNED"`, `"PIN_EXTENDED"`), ErrUnknownEvent, "key"},
		{"event not the key's", "pin/" + pin.Pin.PinID + "/UNPINNED", v, ErrMalformed, "event"},
		{"pin ID not the key's", "pin/0123456789abcdef/PINNED", v, ErrMalformed, "pinId"},
		{"edited offsets", key, mutate(t, v, `"0":40`, `"0":41`), ErrMalformed, "pinId"},
		{"bad key", "pin/xyz/PINNED", v, ErrMalformed, "key"},
		{"blank reason", key, mutate(t, v, `"rollback point for release 42"`, `" "`), ErrMalformed, "reason"},
		{"missing offsets", key, mutate(t, v, `"offsets":{"0":40,"1":30},`, ``), ErrMalformed, "offsets"},
		{"unknown field", key, mutate(t, v, `"actor"`, `"colour":"red","actor"`), ErrMalformed, "colour"},
		{"expires not after at", key, mutate(t, v, `,"at"`, `,"expires":"2025-03-04T05:06:07.89Z","at"`), ErrMalformed, "expires"},
		{"unpin with offsets", string(uk), mutate(t, string(ugood), `"at"`, `"offsets":{"0":1},"at"`), ErrMalformed, "offsets"},
		{"unpin without reason", string(uk), mutate(t, string(ugood), `,"reason":"done"`, ``), ErrMalformed, "reason"},
	}
	for _, c := range cases {
		_, err := Decode([]byte(c.key), []byte(c.value))
		var de *DecodeError
		if !errors.As(err, &de) || !errors.Is(err, c.class) || de.Field != c.field {
			t.Errorf("%s: Decode = %v (field %q), want %v on field %q", c.name, err, fieldOf(de), c.class, c.field)
		}
	}
}

func fieldOf(de *DecodeError) string {
	if de == nil {
		return ""
	}
	return de.Field
}

// TestPinEventsAreNewerSchemaToSchemaOneReaders: the plan decoder (which is
// all a kcleanup before pins had for a key it did not know) classifies the
// value as a newer schema, never as something it may skip.
func TestPinEventsAreNewerSchemaToSchemaOneReaders(t *testing.T) {
	_, value := pinEvent(time.Time{}).Encode()
	if err := checkVersion("schemaVersion", scalar{present: true, kind: kindNumber, text: "3"}); !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("checkVersion(3) = %v, want ErrNewerSchema", err)
	}
	if err := mirrorFamily.checkVersion(scalar{present: true, kind: kindNumber, text: "3"}); !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("mirrorFamily.checkVersion(3) = %v, want ErrNewerSchema", err)
	}
	if !strings.Contains(string(value), `"schemaVersion":3`) {
		t.Fatal(string(value))
	}
}

func TestPinEventSchemaMatchesEncoder(t *testing.T) {
	s := loadSchema(t, "pin-event.schema.json")
	if got := strs(t, at(t, s, "properties", "event", "enum")); !slices.Equal(got, []string{string(Pinned), string(Unpinned)}) {
		t.Errorf("event enum = %v", got)
	}
	if v := at(t, s, "properties", "schemaVersion", "const"); v != float64(PinSchemaVersion) {
		t.Errorf("schemaVersion const = %v, want %d", v, PinSchemaVersion)
	}
	props := slices.Sorted(maps.Keys(at(t, s, "properties").(map[string]any)))
	if want := slices.Sorted(slices.Values(pinFields)); !slices.Equal(props, want) {
		t.Errorf("properties = %v, want %v", props, want)
	}
	_, value := pinEvent(pinAt.Add(time.Hour)).Encode()
	if got := written(t, value); !slices.Equal(got, pinFields) {
		t.Errorf("PINNED: Encode writes %v, schema lists %v", got, pinFields)
	}
	_, value = NewUnpin(pinEvent(time.Time{}).Pin.PinID, "done", pinAt, "a").Encode()
	if got, want := written(t, value), strs(t, at(t, s, "required")); !slices.Equal(got, want) {
		t.Errorf("UNPINNED: Encode writes %v, schema requires %v", got, want)
	}
}
