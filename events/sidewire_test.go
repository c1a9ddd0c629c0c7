package events

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/go-json-experiment/json/jsontext"
)

// The side-event wire golden pins, for every family of side events (mirror,
// pin, no-tombstones declaration, retention), the bytes Encode writes and
// what Decode makes of several hundred mutations of them: accepted, or
// rejected with which class and which exact message. It was written by the
// per-family code before the families shared one descriptor (family.go), so
// the move changed no byte on the wire and no error. Regenerate only for new
// inputs: go test ./events/ -run TestSideEventWire -update-side-wire.
var updateSideWire = flag.Bool("update-side-wire", false, "rewrite testdata/sidewire.golden from the current code")

const sideWireGolden = "testdata/sidewire.golden"

// sideSamples is one envelope of each shape of each family.
func sideSamples() []Envelope {
	at := time.Date(2025, 3, 4, 5, 6, 7, 890000000, time.UTC)
	pin := NewPin("sp-7", "action-state", topicA, Offsets{0: 40, 1: 30}, time.Time{}, "rollback point", at, "host/42")
	return []Envelope{
		NewMirrorEvent(MirrorAttached, Mirror{Topic: "fa-control", TopicID: topicA, Reason: "attach"}, at, "host/1"),
		NewMirrorEvent(MirrorAttached, Mirror{Topic: "fa-control", TopicID: topicA, Reason: "attach", HasGrace: true, RestoreGrace: 90 * time.Second}, at, "host/1"),
		NewMirrorEvent(MirrorAttached, Mirror{Topic: "fa-control", TopicID: topicA, Reason: "attach", HasGrace: true}, at, "host/1"),
		NewMirrorEvent(MirrorDetached, Mirror{Topic: "fa-control", TopicID: topicA, Reason: "detach"}, at, "host/1"),
		pin,
		NewPin("sp-8", "action-state", topicA, Offsets{0: 41}, at.Add(time.Hour), "until the release", at, "host/42"),
		NewUnpin(pin.Pin.PinID, "released", at, "host/43"),
		NewDeclaration("action-state", topicA, Offsets{0: 5, 2: 7}, "the job writes no tombstones", at, "op"),
		NewWithdrawal("the job writes tombstones again", at, "op"),
		NewRetentionSet(Retention{Topic: "action-state", Watch: []string{"s3://b/chk", "/local/sp"}, Every: 90 * time.Second, MinAdvance: 10, OperatorUID: "op-1", Reason: "follow"}, at, "op"),
		NewRetentionSet(Retention{Topic: "action-state", Watch: []string{"/chk"}, Every: time.Second, OperatorUIDHash: strings.Repeat("ab", 16), Reason: "follow"}, at, "op"),
		NewRetentionClear("action-state", "stop", at, "op"),
	}
}

// members splits a flat JSON object into its members' raw names and values.
func members(t *testing.T, v []byte) (names, values []string) {
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		t.Fatalf("not an object: %s", v)
	}
	for dec.PeekKind() != '}' {
		n, err := dec.ReadToken()
		if err != nil {
			t.Fatal(err)
		}
		name := `"` + n.String() + `"`
		val, err := dec.ReadValue()
		if err != nil {
			t.Fatal(err)
		}
		names, values = append(names, name), append(values, string(bytes.Clone(val)))
	}
	return names, values
}

func object(names, values []string) []byte {
	var parts []string
	for i := range names {
		parts = append(parts, names[i]+":"+values[i])
	}
	return []byte("{" + strings.Join(parts, ",") + "}")
}

// sideMutations are the variants of one valid record (key, value).
func sideMutations(t *testing.T, key, value []byte) (labels []string, keys, values [][]byte) {
	add := func(label string, k, v []byte) {
		labels, keys, values = append(labels, label), append(keys, k), append(values, v)
	}
	add("as written", key, value)
	names, vals := members(t, value)
	with := func(i int, v string) []byte {
		vs := append([]string(nil), vals...)
		vs[i] = v
		return object(names, vs)
	}
	for i, n := range names {
		add("drop "+n, key, object(append(append([]string(nil), names[:i]...), names[i+1:]...), append(append([]string(nil), vals[:i]...), vals[i+1:]...)))
		add("twice "+n, key, object(append(append([]string(nil), names...), n), append(append([]string(nil), vals...), vals[i])))
		for _, v := range []string{`null`, `1`, `"x"`, `{}`, `[]`, `""`, `-1`, `"2025-03-04T05:06:07Z"`} {
			add(n+"="+v, key, with(i, v))
		}
		if n == `"schemaVersion"` {
			for _, v := range []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "99", "03", "3.0", "1e3", "99999999999999999999"} {
				add(n+"="+v, key, with(i, v))
			}
		}
	}
	add("extra member", key, object(append(append([]string(nil), names...), `"extra"`), append(append([]string(nil), vals...), "1")))
	ev := key[bytes.LastIndexByte(key, '/')+1:]
	if bytes.HasSuffix(key, []byte("/declaration")) {
		ev = nil
	}
	if ev != nil {
		future := bytes.Replace(key, ev, []byte("FUTURE_EVENT"), 1)
		add("key names an unknown event", future, value)
		add("key and body name an unknown event", future, bytes.Replace(value, ev, []byte("FUTURE_EVENT"), 1))
		add("key names a bad event", bytes.Replace(key, ev, []byte("bad-event"), 1), value)
		add("key has no event", key[:bytes.LastIndexByte(key, '/')], value)
	} else {
		for i, n := range names {
			if n == `"event"` {
				add("body names an unknown event", key, with(i, `"FUTURE_EVENT"`))
				add("body names a bad event", key, with(i, `"bad-event"`))
			}
		}
		add("another key under the prefix", []byte("tombstones/other"), value)
	}
	if i := bytes.IndexByte(key, '/'); i >= 0 {
		add("key's prefix only", key[:i+1], value)
		if j := bytes.IndexByte(key[i+1:], '/'); j >= 0 {
			add("key's middle changed", append(append(append([]byte(nil), key[:i+1]...), "other-name-1234"...), key[i+1+j:]...), value)
		}
	}
	add("tombstone", key, nil)
	add("array", key, []byte(`[]`))
	add("string", key, []byte(`"s"`))
	add("truncated", key, value[:len(value)-1])
	add("invalid UTF-8", key, bytes.Replace(value, []byte(`"actor":"`), []byte("\"actor\":\"\xff"), 1))
	return labels, keys, values
}

func sideOutcome(key, value []byte) string {
	env, err := Decode(key, value)
	if err == nil {
		k2, v2 := env.Encode()
		return fmt.Sprintf("ok re-encodes same=%v", bytes.Equal(k2, key) && bytes.Equal(v2, value))
	}
	class := "?"
	for _, c := range []error{ErrTombstone, ErrMalformed, ErrNewerSchema, ErrUnknownEvent} {
		if errors.Is(err, c) {
			class = c.Error()
		}
	}
	for _, d := range []error{ErrPlanEdited, ErrKeyMismatch} {
		if errors.Is(err, d) {
			class += " / " + d.Error()
		}
	}
	return "reject [" + class + "] " + err.Error()
}

// badReason is env with a reason that is not valid UTF-8.
func badReason(env Envelope) Envelope {
	switch {
	case env.Mirror != nil:
		m := *env.Mirror
		m.Reason += "\xff"
		env.Mirror = &m
	case env.Pin != nil:
		p := *env.Pin
		p.Reason += "\xff"
		env.Pin = &p
	case env.Declaration != nil:
		d := *env.Declaration
		d.Reason += "\xff"
		env.Declaration = &d
	case env.Retention != nil:
		r := *env.Retention
		r.Reason += "\xff"
		env.Retention = &r
	}
	return env
}

func validateOutcome(env Envelope) (out string) {
	defer func() {
		if r := recover(); r != nil {
			out = fmt.Sprintf("panic: %v", r)
		}
	}()
	if err := env.Validate(); err != nil {
		return "refused: " + err.Error()
	}
	return "accepted"
}

func TestSideEventWire(t *testing.T) {
	var b strings.Builder
	b.WriteString("# side events: the encoding of each sample, then what Decode makes of its mutations; go test ./events/ -run TestSideEventWire -update-side-wire\n")
	for _, env := range sideSamples() {
		key, value, err := env.EncodeValid()
		if err != nil {
			t.Fatalf("%s: %v", env.Event, err)
		}
		fmt.Fprintf(&b, "\n= %q %s\n", key, value)
		fmt.Fprintf(&b, "  Validate with an invalid UTF-8 reason: %s\n", validateOutcome(badReason(env)))
		labels, keys, values := sideMutations(t, key, value)
		for i := range labels {
			fmt.Fprintf(&b, "  %s: %s\n", labels[i], sideOutcome(keys[i], values[i]))
		}
	}
	got := b.String()
	if *updateSideWire {
		if err := os.WriteFile(sideWireGolden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(sideWireGolden)
	if err != nil {
		t.Fatalf("%v (write it with -update-side-wire)", err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs at line %d:\n got %s\nwant %s", sideWireGolden, i+1, g, w)
			}
		}
	}
}
