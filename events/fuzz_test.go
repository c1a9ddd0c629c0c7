package events

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/go-json-experiment/json/jsontext"
)

// The fuzz targets check, for any input: no panic; on success, Encode then
// parse gives an equal value and the same bytes again, and the ID verifies;
// on failure, a clear error. Crashers found are kept in testdata/fuzz/.

// planSeeds, markerSeeds and decodeSeeds are the fuzz targets' seeds; the
// parity test (parity_test.go) reads them too.
func planSeeds() [][]byte {
	seeds := [][]byte{[]byte(planC1JSON)}
	for _, v := range planIDVectors {
		p := Plan{PlanID: v.want, SourceRecoveryPoint: v.recoveryPoint, Topic: v.topic, TopicID: v.topicID, Offsets: v.offsets}
		seeds = append(seeds, p.Encode())
	}
	return append(seeds,
		[]byte(strings.Replace(planC1JSON, `"0":100`, `"00":100`, 1)),
		[]byte(strings.Replace(planC1JSON, `"0":100`, `"0":1e2`, 1)),
		[]byte(planC1JSON+"{}"))
}

func markerSeeds() [][]byte {
	return [][]byte{
		[]byte(markerC1),
		[]byte("[" + markerC1 + "," + strings.Replace(markerC1, `"0":100`, `"0":50`, 1) + "]"),
		[]byte("[" + markerC1 + "," + strings.Replace(markerC1, `,"1":230`, ``, 1) + "]"),
		[]byte(`[]`),
		[]byte(`[{"schemaVersion":1,"topic":"t","topicId":"_____________________w","offsets":{"2":1,"10":0}},{"schemaVersion":1,"topic":"t","topicId":"_____________________w","offsets":{"10":5,"2":0}}]`),
	}
}

type decodeSeed struct {
	key, value []byte
	tombstone  bool
}

func decodeSeeds() []decodeSeed {
	var seeds []decodeSeed
	for _, e := range []Event{Planned, Committed, Deleting, Applied} {
		k, v := envelopeOf(e, planC1()).Encode()
		seeds = append(seeds, decodeSeed{k, v, false})
	}
	k, v := envelopeOf(Planned, planC1()).Encode()
	return append(seeds,
		decodeSeed{k, v, true},
		decodeSeed{[]byte(planC1ID + "/PAUSED"), []byte(`{"schemaVersion":1,"event":"PAUSED","planId":"` + planC1ID + `"}`), false},
		decodeSeed{[]byte("x"), []byte(`{"schemaVersion":2}`), false},
		decodeSeed{k, []byte(strings.Replace(string(v), `"plan":{"schemaVersion":1`, `"plan":{"schemaVersion":7`, 1)), false},
		mirrorSeed(MirrorAttached, ""), mirrorSeed(MirrorDetached, ""),
		mirrorSeed(MirrorAttached, `"schemaVersion":3`),
		decodeSeed{[]byte("mirror/m/MIRROR_PAUSED"), []byte(`{"schemaVersion":2,"event":"MIRROR_PAUSED","mirrorTopic":"m"}`), false},
		pinSeed(pinEvent(time.Time{})), pinSeed(pinEvent(pinAt.Add(time.Hour))), pinSeed(NewUnpin("0123456789abcdef", "done", pinAt, "a")),
		decodeSeed{[]byte("pin/0123456789abcdef/PIN_PAUSED"), []byte(`{"schemaVersion":3,"event":"PIN_PAUSED","pinId":"0123456789abcdef"}`), false},
		reasonSeed(Planned, ""), reasonSeed(Committed, ""), reasonSeed(Deleting, ""),
		reasonSeed(Committed, `"schemaVersion":1`),
		pinSeed(NewDeclaration("action-state", topicA, Offsets{0: 100, 1: 150}, "cleanup mode", pinAt, "a")),
		pinSeed(NewWithdrawal("release 43", pinAt, "a")),
		decodeSeed{[]byte(DeclarationKey), []byte(`{"schemaVersion":6,"event":"NO_TOMBSTONES_PAUSED","at":"2025-03-04T05:06:07Z","actor":"a","reason":"r"}`), false})
}

// reasonSeed is a plan event's record with an operator's reason (schema
// version 5), its schemaVersion replaced when version is not empty.
func reasonSeed(e Event, version string) decodeSeed {
	env := envelopeOf(e, planC1())
	env.Reason = "reclaim disk before the quarter close"
	k, v := env.Encode()
	if e == Deleting { // Encode writes no reason there: a foreign producer's would
		v = []byte(strings.Replace(string(v), `"actor":"worker-1/4242"`, `"actor":"worker-1/4242","reason":"x"`, 1))
		v = []byte(strings.Replace(string(v), `{"schemaVersion":1,"event"`, `{"schemaVersion":5,"event"`, 1))
	}
	if version != "" {
		v = []byte(strings.Replace(string(v), `"schemaVersion":5`, version, 1))
	}
	return decodeSeed{k, v, false}
}

// pinSeed is a pin event's record.
func pinSeed(env Envelope) decodeSeed {
	k, v := env.Encode()
	return decodeSeed{k, v, false}
}

// mirrorSeed is a mirror event's record, its schemaVersion replaced when
// version is not empty.
func mirrorSeed(e Event, version string) decodeSeed {
	k, v := mirrorEvent(e).Encode()
	if version != "" {
		v = []byte(strings.Replace(string(v), `"schemaVersion":2`, version, 1))
	}
	return decodeSeed{k, v, false}
}

func FuzzParsePlan(f *testing.F) {
	for _, s := range planSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePlan(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("parsed plan does not validate: %v", err)
		}
		if id := ComputePlanID(p.SourceRecoveryPoint, p.Topic, p.TopicID, p.Offsets); id != p.PlanID {
			t.Fatalf("parsed plan ID %s, content hashes to %s", p.PlanID, id)
		}
		enc := p.Encode()
		p2, err := ParsePlan(enc)
		if err != nil {
			t.Fatalf("ParsePlan(Encode()) failed: %v\n%s", err, enc)
		}
		if !plansEqual(p, p2) {
			t.Fatalf("round trip changed the plan:\n%+v\n%+v", p, p2)
		}
		if enc2 := p2.Encode(); !bytes.Equal(enc, enc2) {
			t.Fatalf("Encode not canonical:\n%s\n%s", enc, enc2)
		}
	})
}

func FuzzParseMarkers(f *testing.F) {
	for _, s := range markerSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := ParseMarkers(data)
		if err != nil {
			if len(ms) != 0 || err.Error() == "" {
				t.Fatalf("error %q with markers %v", err, ms)
			}
			return
		}
		if len(ms) == 0 {
			t.Fatal("no markers and no error")
		}
		all := []byte{'['}
		for i, m := range ms {
			if err := m.Validate(); err != nil {
				t.Fatalf("parsed marker %d does not validate: %v", i, err)
			}
			if i > 0 {
				all = append(all, ',')
			}
			all = append(all, m.Encode()...)
		}
		all = append(all, ']')
		back, err := ParseMarkers(all)
		if err != nil || len(back) != len(ms) {
			t.Fatalf("ParseMarkers(Encode()) = %d markers, %v\n%s", len(back), err, all)
		}
		for i := range ms {
			if !markersEqual(ms[i], back[i]) {
				t.Fatalf("round trip changed marker %d: %+v %+v", i, ms[i], back[i])
			}
		}
		checkBuildPlan(t, ms)
	})
}

// checkBuildPlan compares BuildPlan with a naive reference: it succeeds
// exactly when all markers agree on topic, topic ID and partition set, and
// then gives the minimum per partition.
func checkBuildPlan(t *testing.T, ms []Marker) {
	agree := true
	want := ms[0].Offsets.Clone()
	for _, m := range ms[1:] {
		if m.Topic != ms[0].Topic || m.TopicID != ms[0].TopicID || len(m.Offsets) != len(want) {
			agree = false
			break
		}
		for p, off := range m.Offsets {
			cur, ok := want[p]
			if !ok {
				agree = false
				break
			}
			want[p] = min(cur, off)
		}
	}
	p, err := BuildPlan("fuzz-cp", ms)
	if !agree {
		if err == nil {
			t.Fatalf("BuildPlan accepted disagreeing markers: %+v", ms)
		}
		return
	}
	if err != nil {
		t.Fatalf("BuildPlan refused agreeing markers: %v", err)
	}
	if !p.Offsets.Equal(want) {
		t.Fatalf("BuildPlan offsets %v, want %v", p.Offsets, want)
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("built plan does not validate: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds() {
		f.Add(s.key, s.value, s.tombstone)
	}
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		}
		env, err := Decode(key, value)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.Field == "" || de.Reason == "" {
				t.Fatalf("error %T %q is not a complete *DecodeError", err, err)
			}
			matched := 0
			for _, c := range classes {
				if errors.Is(err, c) {
					matched++
				}
			}
			if matched != 1 {
				t.Fatalf("error %q matches %d classes, want exactly 1", err, matched)
			}
			if value == nil && !errors.Is(err, ErrTombstone) {
				t.Fatalf("nil value gave %v, want ErrTombstone", err)
			}
			return
		}
		if err := env.Plan.Validate(); err != nil && env.Mirror == nil && env.Pin == nil && env.Declaration == nil {
			t.Fatalf("decoded plan does not validate: %v", err)
		}
		if (env.Mirror != nil) != env.Event.IsMirror() {
			t.Fatalf("event %s with mirror body %v", env.Event, env.Mirror)
		}
		if (env.Pin != nil) != env.Event.IsPin() {
			t.Fatalf("event %s with pin body %v", env.Event, env.Pin)
		}
		if (env.Declaration != nil) != env.Event.IsDeclaration() {
			t.Fatalf("event %s with declaration body %v", env.Event, env.Declaration)
		}
		if err := env.Validate(); err != nil {
			t.Fatalf("decoded envelope does not validate: %v", err)
		}
		k2, v2 := env.Encode()
		if !bytes.Equal(k2, key) {
			t.Fatalf("Encode gives key %q for a record read under %q", k2, key)
		}
		env2, err := Decode(k2, v2)
		if err != nil {
			t.Fatalf("Decode(Encode()) failed: %v\n%s", err, v2)
		}
		if !envelopesEqual(env, env2) {
			t.Fatalf("round trip changed the envelope:\n%+v\n%+v", env, env2)
		}
		if _, v3 := env2.Encode(); !bytes.Equal(v2, v3) {
			t.Fatalf("Encode not canonical:\n%s\n%s", v2, v3)
		}
	})
}

// FuzzEncode builds plans and envelopes from arbitrary field values (the
// parsers alone rarely reach the encoders: a mutated plan seldom hashes to
// its ID). Validate must accept exactly what survives Encode then parse, and
// what survives must come back equal.
func FuzzEncode(f *testing.F) {
	f.Add("cp-7", "action-state", topicA, int32(0), int64(100), int32(1), int64(150), "PLANNED", "worker-1", int64(1741064767890000000))
	f.Add("chk-ü-检查点-7\u2028\"\\<&>", "a.b", "-39OXTwrGgn459bFtKOSgQ", int32(10), int64(0), int32(2), int64(9223372036854775807), "COMMITTED", "h/1", int64(0))
	f.Add(" ", "..", zeroTopicID, int32(-1), int64(-1), int32(-1), int64(5), "APPLIED", "\x1b", int64(-62135596800000000))
	f.Add("cp-7", "action-state", topicA, int32(0), int64(100), int32(1), int64(150), "PLANNED", "\x8e", int64(0)) // invalid UTF-8 actor: Validate refuses it
	f.Fuzz(func(t *testing.T, rp, topic, topicID string, p1 int32, o1 int64, p2 int32, o2 int64, event, actor string, at int64) {
		p := Plan{SourceRecoveryPoint: rp, Topic: topic, TopicID: topicID, Offsets: Offsets{p1: o1, p2: o2}}
		p.PlanID = ComputePlanID(rp, topic, topicID, p.Offsets)
		got, err := ParsePlan(p.Encode())
		if (err == nil) != (p.Validate() == nil) {
			t.Fatalf("Validate = %v but ParsePlan(Encode()) = %v", p.Validate(), err)
		}
		if err == nil && !plansEqual(got, p) {
			t.Fatalf("round trip changed the plan:\n%+v\n%+v", p, got)
		}

		env := Envelope{SchemaVersion: SchemaVersion, Event: Event(event), PlanID: p.PlanID, Plan: p,
			At: time.Unix(0, at), Actor: actor}
		switch env.Event {
		case Committed:
			env.Boundary = p.Offsets
		case Applied:
			env.LogStart = p.Offsets
		}
		// What Validate accepts, Encode writes and Decode reads back as itself;
		// what would not decode to itself, Validate refuses.
		valid := env.Validate()
		k, v := env.Encode()
		back, err := Decode(k, v)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownEvent) {
				t.Fatalf("an encoded envelope decodes with %v", err)
			}
			if valid == nil {
				t.Fatalf("Validate accepts an envelope that does not decode: %v", err)
			}
			return
		}
		if !envelopesEqual(back, env) && valid == nil {
			t.Fatalf("Validate accepts an envelope whose round trip changes it:\n%+v\n%+v", env, back)
		}
		// The same with the recovery point's text as an operator's reason
		// (schema version 5 on a PLANNED or COMMITTED, refused elsewhere).
		env.Reason = rp
		if env.Event.CarriesReason() && rp != "" {
			env.SchemaVersion = ReasonSchemaVersion
		}
		valid = env.Validate()
		k, v = env.Encode()
		back, err = Decode(k, v)
		if err != nil && valid == nil {
			t.Fatalf("Validate accepts an envelope with reason %q that does not decode: %v", rp, err)
		}
		if err == nil && valid == nil && !envelopesEqual(back, env) {
			t.Fatalf("Validate accepts an envelope with a reason whose round trip changes it:\n%+v\n%+v", env, back)
		}
	})
}

// FuzzOffsets checks offsetsFast against offsetsTokens on any valid JSON
// value: what the fast path accepts, the token reader accepts with the same
// map; what the token reader rejects, the fast path declines.
func FuzzOffsets(f *testing.F) {
	for _, s := range []string{`{"0":100,"1":150}`, ` { "2" : 5 , "10" : 0 } `, `{"0":1,"0":2}`, `{"\u0030":1}`, `{"00":1}`,
		`{"0":1.5}`, `{"0":-1}`, `{"0":1e2}`, `{}`, `[]`, `{"2147483648":1}`, `{"0":9223372036854775808}`, `{"a:b":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
		raw, err := dec.ReadValue()
		if err != nil {
			return
		}
		fast, ok := offsetsFast(raw, nil)
		slow, ferr := offsetsTokens(raw)
		switch {
		case ok && ferr != nil:
			t.Fatalf("%q: fast path accepts what the token reader rejects: %v", raw, ferr)
		case ok && !fast.Equal(slow):
			t.Fatalf("%q: fast %v, tokens %v", raw, fast, slow)
		}
		// Into a reused map that held other partitions: the same answer.
		reused, okReused := offsetsFast(raw, Offsets{7: 7, 1 << 20: 3})
		if okReused != ok || ok && !reused.Equal(fast) {
			t.Fatalf("%q: into a reused map %v (%v), fresh %v (%v)", raw, reused, okReused, fast, ok)
		}
	})
}
