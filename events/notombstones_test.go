package events

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
)

func TestDeclarationRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 6, 10, 0, 0, 5, time.UTC)
	decl := NewDeclaration("action-state", "oBnTyPS2TqmC9ctLrPFH6w", Offsets{0: 100, 1: 230}, "cleanup mode rejects tombstones", at, "ops/1")
	wd := NewWithdrawal("release 43 may emit them", at, "ops/1")
	for _, env := range []Envelope{decl, wd} {
		if err := env.Validate(); err != nil {
			t.Fatalf("%s: Validate: %v", env.Event, err)
		}
		k, v := env.Encode()
		if string(k) != DeclarationKey {
			t.Fatalf("key %s, want %s", k, DeclarationKey)
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
	if _, v := decl.Encode(); string(v) != `{"schemaVersion":6,"event":"NO_TOMBSTONES_DECLARED","topic":"action-state","topicId":"oBnTyPS2TqmC9ctLrPFH6w","since":{"0":100,"1":230},"at":"2026-12-06T10:00:00.000000005Z","actor":"ops/1","reason":"cleanup mode rejects tombstones"}` {
		t.Fatalf("NO_TOMBSTONES_DECLARED is %s", v)
	}
}

// A build that predates the declaration reads its key as no plan key and
// its body by schemaVersion 6 (above 1): a newer schema, so it degrades and
// deletes nothing (the plan decoder's classify is what such builds run).
func TestDeclarationFailsClosedInOlderBuilds(t *testing.T) {
	k, v := NewDeclaration("t", "oBnTyPS2TqmC9ctLrPFH6w", Offsets{0: 1}, "r", time.Now(), "a").Encode()
	_, _, keyErr := ParseKey(k)
	sh, ferr := scan(v)
	if ferr != nil {
		t.Fatal(ferr)
	}
	if err := classify(sh, "", "", keyErr); !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("an older build's decode: %v, want ErrNewerSchema", err)
	}
}

func TestDeclarationDecodeErrors(t *testing.T) {
	const at = `"at":"2026-12-06T10:00:00Z","actor":"a"`
	cases := []struct {
		key, value string
		want       error
		says       string
	}{
		{DeclarationKey, `{"schemaVersion":7,"event":"NO_TOMBSTONES_DECLARED","whatever":1}`, ErrNewerSchema, "upgrade kcleanup"},
		{DeclarationKey, `{"schemaVersion":6,"event":"NO_TOMBSTONES_PAUSED",` + at + `,"reason":"r"}`, ErrUnknownEvent, "upgrade kcleanup"},
		{DeclarationKey, `{"schemaVersion":5,"event":"NO_TOMBSTONES_WITHDRAWN",` + at + `,"reason":"r"}`, ErrMalformed, "expected 6"},
		{"tombstones/other", `{"schemaVersion":6,"event":"NO_TOMBSTONES_WITHDRAWN",` + at + `,"reason":"r"}`, ErrMalformed, "expected tombstones/declaration"},
		{DeclarationKey, `{"schemaVersion":6,"event":"NO_TOMBSTONES_DECLARED","topic":"t","topicId":"oBnTyPS2TqmC9ctLrPFH6w",` + at + `,"reason":"r"}`, ErrMalformed, "since"},
		{DeclarationKey, `{"schemaVersion":6,"event":"NO_TOMBSTONES_DECLARED","topic":"t","topicId":"oBnTyPS2TqmC9ctLrPFH6w","since":{},` + at + `,"reason":"r"}`, ErrMalformed, "since"},
		{DeclarationKey, `{"schemaVersion":6,"event":"NO_TOMBSTONES_DECLARED","topic":"t","topicId":"oBnTyPS2TqmC9ctLrPFH6w","since":{"0":-1},` + at + `,"reason":"r"}`, ErrMalformed, "since"},
		{DeclarationKey, `{"schemaVersion":6,"event":"NO_TOMBSTONES_WITHDRAWN","topic":"t",` + at + `,"reason":"r"}`, ErrMalformed, "NO_TOMBSTONES_DECLARED only"},
		{DeclarationKey, `{"schemaVersion":6,"event":"NO_TOMBSTONES_WITHDRAWN",` + at + `,"reason":"  "}`, ErrMalformed, "blank"},
		{DeclarationKey, `{"schemaVersion":6,"event":"NO_TOMBSTONES_WITHDRAWN",` + at + `}`, ErrMalformed, "reason"},
		{DeclarationKey, `{"schemaVersion":6,"event":"NO_TOMBSTONES_WITHDRAWN",` + at + `,"reason":"r","extra":1}`, ErrMalformed, "extra"},
		{DeclarationKey, `[1]`, ErrMalformed, "object"},
	}
	for _, c := range cases {
		_, err := Decode([]byte(c.key), []byte(c.value))
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Decode(%s, %s) = %v, want %v saying %q", c.key, c.value, err, c.want, c.says)
		}
	}
	if _, err := Decode([]byte(DeclarationKey), nil); !errors.Is(err, ErrTombstone) {
		t.Errorf("a null value: %v, want ErrTombstone", err)
	}
}

func TestDeclarationEventSchemaMatchesEncoder(t *testing.T) {
	s := loadSchema(t, "declaration-event.schema.json")
	if got := strs(t, at(t, s, "properties", "event", "enum")); !slices.Equal(got, []string{string(NoTombstonesDeclared), string(NoTombstonesWithdrawn)}) {
		t.Errorf("event enum = %v", got)
	}
	if v := at(t, s, "properties", "schemaVersion", "const"); v != float64(DeclarationSchemaVersion) {
		t.Errorf("schemaVersion const = %v, want %d", v, DeclarationSchemaVersion)
	}
	props := slices.Sorted(maps.Keys(at(t, s, "properties").(map[string]any)))
	if want := slices.Sorted(slices.Values(declarationFields)); !slices.Equal(props, want) {
		t.Errorf("properties = %v, want %v", props, want)
	}
	_, value := NewDeclaration("t", "oBnTyPS2TqmC9ctLrPFH6w", Offsets{0: 1}, "r", pinAt, "a").Encode()
	if got := written(t, value); !slices.Equal(got, declarationFields) {
		t.Errorf("DECLARED: Encode writes %v, schema lists %v", got, declarationFields)
	}
	_, value = NewWithdrawal("done", pinAt, "a").Encode()
	if got, want := written(t, value), strs(t, at(t, s, "required")); !slices.Equal(got, want) {
		t.Errorf("WITHDRAWN: Encode writes %v, schema requires %v", got, want)
	}
}
