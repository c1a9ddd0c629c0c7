package events

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
)

// encodedShape is one record Encode can write, and whether the fast path
// must take it: every plan event whose strings need no escape.
type encodedShape struct {
	name       string
	key, value []byte
	fast       bool
}

// unusualStrings are valid texts for the free-form fields (recovery point,
// actor, mirror reason) that Encode writes with escapes or as multi-byte
// UTF-8; escaped says whether Encode escapes something in them.
var unusualStrings = []struct {
	s       string
	escaped bool
}{
	{"chk-42", false},
	{"s3://bucket/savepoints/sp-1?a=1&b=<2>", false},
	{"héllo wörld ✓ 日本語 😀", false},
	{" leading and trailing ", false},
	{`a "quoted" one`, true},
	{`back\slash`, true},
	{"line\u2028separator", true},
	{"para\u2029separator", true},
}

// encodedShapes are records of every shape Encode can produce: every event,
// mirror events included; with and without boundary and logStart (where
// they do not belong, the record is invalid and the strict path says so);
// times in and out of UTC, with and without a fraction; unusual strings.
func encodedShapes() []encodedShape {
	var shapes []encodedShape
	add := func(name string, env Envelope, fast bool) {
		k, v := env.Encode()
		shapes = append(shapes, encodedShape{name, k, v, fast})
	}
	plan := func(rp string, o Offsets) Plan {
		p := Plan{SourceRecoveryPoint: rp, Topic: "action-state.v2_x", TopicID: topicA, Offsets: o}
		p.PlanID = ComputePlanID(p.SourceRecoveryPoint, p.Topic, p.TopicID, p.Offsets)
		return p
	}
	many := Offsets{}
	for p := range 100 {
		many[int32(p*7)] = int64(p) * 1_000_003
	}
	bigs := Offsets{0: 0, 2147483647: 9223372036854775807}
	zones := map[string]time.Time{
		"utc-millis": time.Date(2025, 3, 4, 5, 6, 7, 890000000, time.UTC),
		"utc-whole":  time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC),
		"utc-nanos":  time.Date(1999, 12, 31, 0, 0, 0, 1, time.UTC),
		"year-one":   time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		"offset":     time.Date(2025, 7, 1, 1, 30, 0, 123456789, time.FixedZone("CEST", 2*3600)),
	}
	for _, e := range []Event{Planned, Committed, Deleting, Applied} {
		for _, us := range unusualStrings {
			p := plan(us.s, Offsets{0: 100, 1: 150})
			env := envelopeOf(e, p)
			env.Actor = strings.ReplaceAll(us.s, " ", "_") + "/4242"
			add(string(e)+"/strings="+us.s, env, !us.escaped)
		}
		for name, o := range map[string]Offsets{"partitions=100": many, "extremes": bigs} {
			env := envelopeOf(e, plan("chk-1", o))
			if env.Boundary != nil {
				env.Boundary = o
			}
			if env.LogStart != nil {
				env.LogStart = o
			}
			add(string(e)+"/"+name, env, true)
		}
		for name, at := range zones {
			env := envelopeOf(e, planC1())
			env.At = at
			add(string(e)+"/at="+name, env, true)
		}
		// boundary and logStart on every event: valid only on theirs.
		env := envelopeOf(e, planC1())
		env.Boundary, env.LogStart = nil, nil
		add(string(e)+"/neither", env, e != Committed && e != Applied)
		env.Boundary = Offsets{0: 1}
		add(string(e)+"/boundary", env, e == Committed)
		env.Boundary, env.LogStart = nil, Offsets{0: 1}
		add(string(e)+"/logStart", env, e == Applied)
		env.Boundary = Offsets{0: 1}
		add(string(e)+"/both", env, false)
		env.Boundary, env.LogStart = Offsets{}, Offsets{}
		add(string(e)+"/empty-offsets", env, false)
	}
	for _, e := range []Event{MirrorAttached, MirrorDetached} {
		for _, us := range unusualStrings {
			env := mirrorEvent(e)
			env.Mirror.Reason = us.s
			add(string(e)+"/reason="+us.s, env, false)
		}
	}
	return shapes
}

// TestCanonicalEveryEncodedShape: for every record shape Encode writes, the
// fast path takes the plain plan events, first and repeat, and declines the
// rest; and Decode, with and without a Decoder, says exactly what the
// strict decoder says.
func TestCanonicalEveryEncodedShape(t *testing.T) {
	for _, s := range encodedShapes() {
		t.Run(s.name, func(t *testing.T) {
			want, wantErr := strictDecode(nil, s.key, s.value)
			if s.fast && wantErr != nil {
				t.Fatalf("the strict decoder rejects a record the fast path must take: %v", wantErr)
			}
			d := NewDecoder()
			for _, round := range []string{"first", "repeat"} {
				env, ok := canonical(d, s.key, s.value)
				if ok != s.fast {
					t.Fatalf("%s: fast path took it: %v, want %v\n%s", round, ok, s.fast, s.value)
				}
				if ok && !reflect.DeepEqual(env, want) {
					t.Fatalf("%s: fast path read\n%+v\nthe strict decoder\n%+v", round, env, want)
				}
			}
			sameDecode(t, "Decode", want, wantErr)(Decode(s.key, s.value))
			sameDecode(t, "Decoder.Decode", want, wantErr)(NewDecoder().Decode(s.key, s.value))
		})
	}
}

// TestCanonicalRepeatComparesBytes: a repeat record whose plan differs from
// the verified one in any byte is not taken from memory: an edited plan is
// still rejected as tampered, and with the strict decoder's words.
func TestCanonicalRepeatComparesBytes(t *testing.T) {
	d := NewDecoder()
	k, v := envelopeOf(Planned, planC1()).Encode()
	if _, err := d.Decode(k, v); err != nil {
		t.Fatal(err)
	}
	k, v = envelopeOf(Committed, planC1()).Encode()
	edited := []byte(mutate(t, string(v), `"0":100,"1":150}},"at"`, `"0":101,"1":150}},"at"`))
	_, err := d.Decode(k, edited)
	_, want := strictDecode(nil, k, edited)
	if !errors.Is(err, ErrPlanEdited) || err.Error() != want.Error() {
		t.Fatalf("edited repeat: %v, want %v", err, want)
	}
}

// sameDecode checks a Decode result against the strict decoder's: the same
// envelope, or the same error (message and every class).
func sameDecode(t *testing.T, what string, want Envelope, wantErr error) func(Envelope, error) {
	return func(got Envelope, err error) {
		t.Helper()
		if msg := diffDecode(got, err, want, wantErr); msg != "" {
			t.Fatalf("%s: %s", what, msg)
		}
	}
}

func diffDecode(got Envelope, err error, want Envelope, wantErr error) string {
	if (err == nil) != (wantErr == nil) {
		return "error " + errString(err) + ", the strict decoder's " + errString(wantErr)
	}
	if err != nil {
		if err.Error() != wantErr.Error() {
			return "error " + err.Error() + ", the strict decoder's " + wantErr.Error()
		}
		for _, class := range []error{ErrTombstone, ErrMalformed, ErrNewerSchema, ErrUnknownEvent, ErrPlanEdited, ErrKeyMismatch} {
			if errors.Is(err, class) != errors.Is(wantErr, class) {
				return "error " + err.Error() + " differs in class " + class.Error()
			}
		}
		return ""
	}
	if !reflect.DeepEqual(got, want) {
		return "envelope differs from the strict decoder's"
	}
	return ""
}

func errString(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}

// FuzzCanonical is the fast path against the strict decoder: after both
// have read the same first record (which may verify a plan the second
// repeats), they accept and reject the second record alike, with the same
// envelope or the same error. Registered by name, so make fuzz runs it.
func FuzzCanonical(f *testing.F) {
	planned, plannedValue := envelopeOf(Planned, planC1()).Encode()
	for _, s := range encodedShapes() {
		f.Add(planned, plannedValue, s.key, s.value)
		f.Add(s.key, s.value, s.key, s.value)
	}
	for _, s := range decodeSeeds() {
		f.Add(planned, plannedValue, s.key, s.value)
	}
	// A boundary and a log start written as the plan's offsets (the fast
	// path shares the plan's map), and ones that differ only past the
	// plan's bytes or by a digit.
	for _, o := range []Offsets{planC1().Offsets, {0: 100, 1: 1500}, {0: 100, 1: 15}, {0: 100, 1: 150, 2: 1}} {
		committed := envelopeOf(Committed, planC1())
		committed.Boundary = o
		k, v := committed.Encode()
		f.Add(planned, plannedValue, k, v)
		applied := envelopeOf(Applied, planC1())
		applied.LogStart = o
		k, v = applied.Encode()
		f.Add(planned, plannedValue, k, v)
	}
	f.Fuzz(func(t *testing.T, firstKey, firstValue, key, value []byte) {
		fast, strict := NewDecoder(), NewDecoder()
		want, wantErr := strictDecode(strict, firstKey, firstValue)
		sameDecode(t, "first record", want, wantErr)(fast.Decode(firstKey, firstValue))
		want, wantErr = strictDecode(strict, key, value)
		sameDecode(t, "second record, with a Decoder", want, wantErr)(fast.Decode(key, value))
		want, wantErr = strictDecode(nil, key, value)
		sameDecode(t, "second record, without", want, wantErr)(Decode(key, value))
	})
}
