package events

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
)

// TestEveryFamilyRoundTripsThroughItsDescriptor: every side-event family's
// descriptor owns its envelopes (familyOf) and its keys (familyOfKey), and
// each of its events encodes and decodes back to itself through it, at a
// version it reads; a version above it is newer, one below malformed.
func TestEveryFamilyRoundTripsThroughItsDescriptor(t *testing.T) {
	seen := map[*family]map[Event]bool{}
	for _, env := range sideSamples() {
		f := familyOf(env)
		if f == nil {
			t.Fatalf("%s: no family owns it", env.Event)
		}
		if !f.knows(env.Event) {
			t.Fatalf("%s: family %s does not know its event", env.Event, f.name)
		}
		key, value := f.encode(env)
		if k2, v2 := env.Encode(); string(k2) != string(key) || string(v2) != string(value) {
			t.Fatalf("%s: Encode and the %s family's encode differ", env.Event, f.name)
		}
		if !strings.HasPrefix(string(key), f.prefix) || familyOfKey(key) != f {
			t.Fatalf("%s: key %q is not the %s family's (prefix %q)", env.Event, key, f.name, f.prefix)
		}
		got, err := f.decode(key, value)
		if err != nil {
			t.Fatalf("%s: the %s family's decode: %v", env.Event, f.name, err)
		}
		if !reflect.DeepEqual(got, env) {
			t.Fatalf("%s: round trip changed it:\n got %+v\nwant %+v", env.Event, got, env)
		}
		if !slices.Contains(f.versions, got.SchemaVersion) {
			t.Fatalf("%s: decoded at version %d, the %s family reads %v", env.Event, got.SchemaVersion, f.name, f.versions)
		}
		if seen[f] == nil {
			seen[f] = map[Event]bool{}
		}
		seen[f][env.Event] = true
	}
	for _, f := range families {
		for _, e := range f.events {
			if !seen[f][e] {
				t.Errorf("family %s: no sample of %s", f.name, e)
			}
		}
		newer := strconv.Itoa(slices.Max(f.versions) + 1)
		if err := f.checkVersion(scalar{present: true, kind: kindNumber, text: newer}); !errors.Is(err, ErrNewerSchema) {
			t.Errorf("family %s: version %s is %v, want ErrNewerSchema", f.name, newer, err)
		}
		older := strconv.Itoa(f.versions[0] - 1)
		if err := f.checkVersion(scalar{present: true, kind: kindNumber, text: older}); !errors.Is(err, ErrMalformed) {
			t.Errorf("family %s: version %s is %v, want ErrMalformed", f.name, older, err)
		}
		// Every family's own version is newer to every family before it, and
		// to a plan event's reader: a kcleanup before it fails closed.
		for _, g := range families {
			if g.versions[0] < f.versions[0] && !slices.Contains(g.versions, f.versions[0]) {
				if err := g.checkVersion(scalar{present: true, kind: kindNumber, text: strconv.Itoa(f.versions[0])}); !errors.Is(err, ErrNewerSchema) {
					t.Errorf("family %s reads %s's version %d as %v, want ErrNewerSchema", g.name, f.name, f.versions[0], err)
				}
			}
		}
		if err := checkVersion("schemaVersion", scalar{present: true, kind: kindNumber, text: strconv.Itoa(f.versions[0])}); !errors.Is(err, ErrNewerSchema) {
			t.Errorf("a plan event's reader reads %s's version as %v, want ErrNewerSchema", f.name, err)
		}
		// No prefix starts another's, nor a plan key (64 hex digits).
		for _, g := range families {
			if g != f && strings.HasPrefix(g.prefix, f.prefix) {
				t.Errorf("prefix %q of %s starts %s's %q", f.prefix, f.name, g.name, g.prefix)
			}
		}
		if familyOfKey([]byte(Key(planC1ID, Planned))) != nil {
			t.Errorf("a plan key is taken for a side event's")
		}
	}
}

// TestValidateRefusesInvalidUTF8InEveryFamily: a string of any family's body
// that is not UTF-8 is refused with its field named, and nothing panics
// (retention's encoder cannot write it at all).
func TestValidateRefusesInvalidUTF8InEveryFamily(t *testing.T) {
	for _, tc := range []struct {
		field string
		env   func() Envelope
	}{
		{"reason", func() Envelope {
			e := sideSamples()[11]
			r := *e.Retention
			r.Reason = "stop\xff"
			e.Retention = &r
			return e
		}},
		{"topic", func() Envelope {
			e := sideSamples()[11]
			r := *e.Retention
			r.Topic = "t\xff"
			e.Retention = &r
			return e
		}},
		{"watch", func() Envelope {
			e := sideSamples()[9]
			r := *e.Retention
			r.Watch = []string{"/ok", "/chk\xff"}
			e.Retention = &r
			return e
		}},
		{"reason", func() Envelope { e := sideSamples()[6]; p := *e.Pin; p.Reason = "released\xff"; e.Pin = &p; return e }},
		{"recoveryPoint", func() Envelope { e := sideSamples()[4]; p := *e.Pin; p.RecoveryPoint = "sp\xff"; e.Pin = &p; return e }},
		{"topicId", func() Envelope {
			e := sideSamples()[7]
			d := *e.Declaration
			d.TopicID = "x\xff"
			e.Declaration = &d
			return e
		}},
	} {
		err := tc.env().Validate()
		var de *DecodeError
		if !errors.As(err, &de) || de.Field != tc.field || !errors.Is(err, ErrMalformed) || !strings.Contains(de.Reason, "not valid UTF-8") {
			t.Errorf("%s: Validate = %v, want the field refused as not UTF-8", tc.field, err)
		}
	}
}
