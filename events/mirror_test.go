package events

import (
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
)

const mirrorTopicID = "AAECAwQFBgcICQoLDA0ODw"

func mirrorEvent(e Event) Envelope {
	return NewMirrorEvent(e, Mirror{Topic: "action-state.flink", TopicID: mirrorTopicID, Reason: "the job reads it"},
		time.Date(2025, 3, 4, 5, 6, 7, 890000000, time.UTC), "host/42")
}

func TestMirrorEventRoundTrip(t *testing.T) {
	for _, e := range []Event{MirrorAttached, MirrorDetached} {
		env := mirrorEvent(e)
		if err := env.Validate(); err != nil {
			t.Fatalf("%s: Validate: %v", e, err)
		}
		key, value := env.Encode()
		if want := "mirror/action-state.flink/" + string(e); string(key) != want {
			t.Fatalf("key %q, want %q", key, want)
		}
		got, err := Decode(key, value)
		if err != nil {
			t.Fatalf("Decode(Encode()): %v\n%s", err, value)
		}
		if got.SchemaVersion != MirrorSchemaVersion || got.Event != e || got.Mirror == nil || *got.Mirror != *env.Mirror ||
			!got.At.Equal(env.At) || got.Actor != env.Actor || got.PlanID != "" {
			t.Fatalf("round trip changed the event:\n got %+v %+v\nwant %+v %+v", got, got.Mirror, env, env.Mirror)
		}
	}
}

// TestMirrorEventBytes pins the encoding: other writers (and older
// kcleanups, TestOldBuildDegradesOnMirrorEvents in package worker) read
// exactly these bytes.
func TestMirrorEventBytes(t *testing.T) {
	_, value := mirrorEvent(MirrorAttached).Encode()
	want := `{"schemaVersion":2,"event":"MIRROR_ATTACHED","mirrorTopic":"action-state.flink","mirrorTopicId":"` + mirrorTopicID +
		`","at":"2025-03-04T05:06:07.89Z","actor":"host/42","reason":"the job reads it"}`
	if string(value) != want {
		t.Fatalf("Encode:\n%s\nwant:\n%s", value, want)
	}
}

func TestMirrorEventDecodeErrors(t *testing.T) {
	key := "mirror/action-state.flink/MIRROR_ATTACHED"
	_, good := mirrorEvent(MirrorAttached).Encode()
	v := string(good)
	cases := []struct {
		name, key, value string
		class            error
		field            string
	}{
		{"newer schema", key, mutate(t, v, `"schemaVersion":2`, `"schemaVersion":3`), ErrNewerSchema, "schemaVersion"},
		{"newer schema, unknown fields", key, `{"schemaVersion":7,"whatever":[1]}`, ErrNewerSchema, "schemaVersion"},
		{"schema 1", key, mutate(t, v, `"schemaVersion":2`, `"schemaVersion":1`), ErrMalformed, "schemaVersion"},
		{"schema 2.0", key, mutate(t, v, `"schemaVersion":2`, `"schemaVersion":2.0`), ErrMalformed, "schemaVersion"},
		{"unknown mirror event", "mirror/action-state.flink/MIRROR_PAUSED",
			mutate(t, v, `"MIRROR_ATTACHED"`, `"MIRROR_PAUSED"`), ErrUnknownEvent, "key"},
		{"event differs from key", "mirror/action-state.flink/MIRROR_DETACHED", v, ErrMalformed, "event"},
		{"topic differs from key", "mirror/other/MIRROR_ATTACHED", v, ErrMalformed, "mirrorTopic"},
		{"bad key", "mirror/a b/MIRROR_ATTACHED", v, ErrMalformed, "key"},
		{"key without event", "mirror/action-state.flink", v, ErrMalformed, "key"},
		{"unknown field", key, mutate(t, v, `"reason"`, `"extra":1,"reason"`), ErrMalformed, "extra"},
		{"missing reason", key, mutate(t, v, `,"reason":"the job reads it"`, ``), ErrMalformed, "reason"},
		{"blank reason", key, mutate(t, v, `"the job reads it"`, `"  "`), ErrMalformed, "reason"},
		{"bad topic ID", key, mutate(t, v, mirrorTopicID, "short"), ErrMalformed, "mirrorTopicId"},
		{"duplicate field", key, mutate(t, v, `"actor":"host/42"`, `"actor":"host/42","actor":"x"`), ErrMalformed, "actor"},
		{"trailing content", key, v + "{}", ErrMalformed, "value"},
		{"not an object", key, `[1]`, ErrMalformed, "value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode([]byte(c.key), []byte(c.value))
			if err == nil {
				t.Fatalf("Decode accepted %s", c.value)
			}
			if !errors.Is(err, c.class) {
				t.Fatalf("error %v is not %v", err, c.class)
			}
			var de *DecodeError
			if !errors.As(err, &de) || !strings.HasPrefix(de.Field, c.field) {
				t.Fatalf("error %v: field %q, want %q", err, de.Field, c.field)
			}
		})
	}
	if _, err := Decode([]byte(key), nil); !errors.Is(err, ErrTombstone) {
		t.Fatalf("tombstone: %v", err)
	}
}

// A plan key is never read as a mirror key, nor a mirror key as a plan key.
func TestMirrorKeysAreApart(t *testing.T) {
	if IsMirrorKey([]byte(Key(planC1ID, Committed))) || IsMirrorKey([]byte(planC1ID)) {
		t.Fatal("a plan key is taken for a mirror key")
	}
	if _, _, err := ParseKey([]byte(MirrorKey("t", MirrorAttached))); !errors.Is(err, ErrMalformed) {
		t.Fatalf("ParseKey of a mirror key: %v", err)
	}
}
