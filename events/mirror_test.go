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

func graceAttach(d time.Duration) Envelope {
	return NewMirrorEvent(MirrorAttached, Mirror{Topic: "action-state.flink", TopicID: mirrorTopicID, Reason: "the job reads it", HasGrace: true, RestoreGrace: d},
		time.Date(2025, 3, 4, 5, 6, 7, 890000000, time.UTC), "host/42")
}

// TestMirrorAttachWithGrace: a MIRROR_ATTACHED that carries the restore
// grace is version 4, with restoreGraceSeconds, and reads back as written;
// a version-2 one carries none (HasGrace false).
func TestMirrorAttachWithGrace(t *testing.T) {
	env := graceAttach(15 * time.Minute)
	if err := env.Validate(); err != nil {
		t.Fatal(err)
	}
	key, value := env.Encode()
	want := `{"schemaVersion":4,"event":"MIRROR_ATTACHED","mirrorTopic":"action-state.flink","mirrorTopicId":"` + mirrorTopicID +
		`","restoreGraceSeconds":900,"at":"2025-03-04T05:06:07.89Z","actor":"host/42","reason":"the job reads it"}`
	if string(value) != want {
		t.Fatalf("Encode:\n%s\nwant:\n%s", value, want)
	}
	got, err := Decode(key, value)
	if err != nil {
		t.Fatalf("Decode(Encode()): %v", err)
	}
	if got.SchemaVersion != MirrorGraceSchemaVersion || *got.Mirror != *env.Mirror {
		t.Fatalf("round trip: got %+v %+v, want %+v", got, got.Mirror, env.Mirror)
	}
	if _, value := graceAttach(0).Encode(); !strings.Contains(string(value), `"restoreGraceSeconds":0,`) {
		t.Fatalf("a grace of 0 (off) is written, not left out: %s", value)
	}
	// A detach never carries one.
	d := NewMirrorEvent(MirrorDetached, Mirror{Topic: "action-state.flink", TopicID: mirrorTopicID, Reason: "r", HasGrace: true, RestoreGrace: time.Minute}, env.At, "host/42")
	if _, value := d.Encode(); d.SchemaVersion != MirrorSchemaVersion || strings.Contains(string(value), "restoreGrace") {
		t.Fatalf("MIRROR_DETACHED with a grace: version %d, %s", d.SchemaVersion, value)
	}
	bad := []struct{ name, key, value, field string }{
		{"grace in version 2", string(key), mutate(t, string(value), `"schemaVersion":4`, `"schemaVersion":2`), "restoreGraceSeconds"},
		{"version 4 without grace", string(key), mutate(t, string(value), `"restoreGraceSeconds":900,`, ``), "restoreGraceSeconds"},
		{"version 4 detach", "mirror/action-state.flink/MIRROR_DETACHED", mutate(t, string(value), `"MIRROR_ATTACHED"`, `"MIRROR_DETACHED"`), "schemaVersion"},
		{"above a day", string(key), mutate(t, string(value), `900`, `86401`), "restoreGraceSeconds"},
		{"negative", string(key), mutate(t, string(value), `900`, `-1`), "restoreGraceSeconds"},
		{"fraction", string(key), mutate(t, string(value), `900`, `1.5`), "restoreGraceSeconds"},
		{"string", string(key), mutate(t, string(value), `900`, `"15m"`), "restoreGraceSeconds"},
	}
	for _, c := range bad {
		_, err := Decode([]byte(c.key), []byte(c.value))
		var de *DecodeError
		if !errors.Is(err, ErrMalformed) || !errors.As(err, &de) || de.Field != c.field {
			t.Errorf("%s: Decode = %v, want malformed at %s\n%s", c.name, err, c.field, c.value)
		}
	}
	// A version above 4 is a newer schema: it degrades, never skipped.
	if _, err := Decode(key, []byte(mutate(t, string(value), `"schemaVersion":4`, `"schemaVersion":5`))); !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("version 5: %v, want ErrNewerSchema", err)
	}
}
