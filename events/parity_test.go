package events

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
)

// The parity test pins what every input of the fuzz corpora decodes to:
// accepted with which value, or rejected with which class and field.
// testdata/parity.golden was written by the hand-written parsers that came
// before go-json-experiment (commit "events: parity golden of the
// hand-written decoder"), so a decoder rewrite that accepts, rejects or
// classifies any of these inputs differently fails here. Regenerate only for
// new inputs: go test ./events/ -run TestParity -update-parity.
var updateParity = flag.Bool("update-parity", false, "rewrite testdata/parity.golden from the current decoder")

const parityGolden = "testdata/parity.golden"

// parityInput is one input of one target; name identifies it in the golden.
type parityInput struct {
	target string // ParsePlan, ParseMarkers or Decode
	key    []byte // Decode only
	value  []byte
	nilVal bool // Decode of a tombstone
}

func (in parityInput) name() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%q\x00%q\x00%v", in.target, in.key, in.value, in.nilVal)
	return in.target + " " + hex.EncodeToString(h.Sum(nil))[:16]
}

// outcome is what the current decoder makes of the input, as one line.
func (in parityInput) outcome() string {
	switch in.target {
	case "ParsePlan":
		p, err := ParsePlan(in.value)
		if err != nil {
			return "reject" + errorDetail(err)
		}
		return "ok " + p.PlanID
	case "ParseMarkers":
		ms, err := ParseMarkers(in.value)
		if err != nil {
			return "reject"
		}
		h := sha256.New()
		for _, m := range ms {
			h.Write(m.Encode())
		}
		return fmt.Sprintf("ok %d %x", len(ms), h.Sum(nil)[:8])
	}
	value := in.value
	if in.nilVal {
		value = nil
	}
	env, err := Decode(in.key, value)
	if err != nil {
		class := "?"
		for i, c := range classes {
			if errors.Is(err, c) {
				class = []string{"tombstone", "malformed", "newer-schema", "unknown-event"}[i]
			}
		}
		var de *DecodeError
		field := ""
		if errors.As(err, &de) {
			field = de.Field
		}
		return "reject " + class + errorDetail(err) + " " + field
	}
	_, v := env.Encode()
	return fmt.Sprintf("ok %x", sha256.Sum256(v))
}

func errorDetail(err error) string {
	switch {
	case errors.Is(err, ErrPlanEdited):
		return " edited"
	case errors.Is(err, ErrKeyMismatch):
		return " key-mismatch"
	}
	return ""
}

// parityInputs gathers every seed and corpus file of the three fuzz
// targets, and runs the JSON grammar seeds through each target.
func parityInputs(t *testing.T) []parityInput {
	var ins []parityInput
	for _, s := range planSeeds() {
		ins = append(ins, parityInput{target: "ParsePlan", value: s})
	}
	for _, s := range markerSeeds() {
		ins = append(ins, parityInput{target: "ParseMarkers", value: s})
	}
	for _, s := range decodeSeeds() {
		ins = append(ins, parityInput{target: "Decode", key: s.key, value: s.value, nilVal: s.tombstone})
	}
	for _, s := range jsonGrammarSeeds {
		ins = append(ins,
			parityInput{target: "ParsePlan", value: []byte(s)},
			parityInput{target: "ParseMarkers", value: []byte(s)},
			parityInput{target: "Decode", key: []byte(planC1ID + "/PLANNED"), value: []byte(s)})
	}
	ins = append(ins, targetedInputs()...)
	for target, dir := range map[string]string{"ParsePlan": "FuzzParsePlan", "ParseMarkers": "FuzzParseMarkers", "Decode": "FuzzDecode"} {
		files, err := filepath.Glob(filepath.Join("testdata", "fuzz", dir, "*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			args := corpusArgs(t, f)
			switch {
			case target != "Decode" && len(args) == 1:
				ins = append(ins, parityInput{target: target, value: []byte(args[0])})
			case target == "Decode" && len(args) == 3:
				ins = append(ins, parityInput{target: target, key: []byte(args[0]), value: []byte(args[1]), nilVal: args[2] == "true"})
			default:
				t.Fatalf("%s: %d arguments", f, len(args))
			}
		}
	}
	return ins
}

func TestParity(t *testing.T) {
	ins := parityInputs(t)
	got := map[string]string{}
	for _, in := range ins {
		got[in.name()] = in.outcome()
	}
	if *updateParity {
		names := slices.Sorted(func(yield func(string) bool) {
			for n := range got {
				if !yield(n) {
					return
				}
			}
		})
		var b strings.Builder
		b.WriteString("# input -> outcome, written by go test ./events/ -run TestParity -update-parity\n")
		for _, n := range names {
			b.WriteString(n + " " + got[n] + "\n")
		}
		if err := os.WriteFile(parityGolden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readParity(t)
	for _, in := range ins {
		n := in.name()
		w, ok := want[n]
		if !ok {
			t.Errorf("%s (%q %q) is not in %s: run with -update-parity and review the diff", n, in.key, in.value, parityGolden)
			continue
		}
		if g := got[n]; g != w {
			t.Errorf("%s changed outcome\ninput %q %q\n got  %s\n want %s", n, in.key, in.value, g, w)
		}
	}
	if len(ins) < 100 {
		t.Fatalf("only %d parity inputs: the corpus was not found", len(ins))
	}
}

func readParity(t *testing.T) map[string]string {
	f, err := os.Open(parityGolden)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		target, rest, _ := strings.Cut(line, " ")
		hash, outcome, _ := strings.Cut(rest, " ")
		want[target+" "+hash] = outcome
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return want
}

// corpusArgs returns the arguments of a fuzz corpus file ("go test fuzz v1"):
// []byte and string values unquoted, bool as "true"/"false".
func corpusArgs(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n")[1:] {
		switch {
		case line == "":
		case strings.HasPrefix(line, "bool("):
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(line, "bool("), ")"))
		default:
			arg, ok := strings.CutPrefix(line, "[]byte(")
			if !ok {
				arg, ok = strings.CutPrefix(line, "string(")
			}
			s, err := strconv.Unquote(strings.TrimSuffix(arg, ")"))
			if !ok || err != nil {
				t.Fatalf("%s: cannot read %q", path, line)
			}
			out = append(out, s)
		}
	}
	return out
}

// jsonGrammarSeeds are documents at the edges of the JSON grammar: escapes,
// surrogates, numbers, nesting, duplicates, trailing content.
var jsonGrammarSeeds = []string{
	`{}`, `[]`, ` {"a":1} `, "\t\r\n{\"a\" : [ 1 , 2 ] }\n", `null`, `true`, `false`, `"x"`, `0`, `-0`, `-12.5e+3`, `1E9`,
	`{"a":"\"\\\/\b\f\n\r\t"}`, `{"a":"\u00e9\u2028"}`, `{"a":"\ud83d\ude00"}`, `{"a":"\ud83d"}`, `{"a":"\ud83dx"}`,
	`{"a":"\ud83d\u0041"}`, `{"a":"\ude00\ud83d"}`, `{"a":"\uDBFF\uDFFF"}`, `{"a":"é ünïcödé 😀"}`, `{"\u0061":1,"a":2}`,
	`{"a":1,"a":2}`, `{"a":{"b":[{"c":null}]}}`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`,
	`{"a":1e}`, `{"a":-}`, `{"a":tru}`, `{"a":"x`, `{"a":"\x"}`, `{"a":"\u12"}`, "{\"a\":\"\x01\"}", `{} {}`, `{}x`,
	`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	`{"0":1,"1":2,"2":3,"3":4,"4":5,"5":6,"6":7,"7":8,"8":9,"9":10,"10":11,"11":12,"12":13,"13":14,"14":15,"15":16,"16":17,"3":0}`,
	``, ` `, `"`, `{`, `[`, `-`, `{"a":[1,2,3]]`,
	"\xef\xbb\xbf{}", "{\"a\":\"\xff\"}",
	strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
	strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2),
	`{"schemaVersion":2,"x":` + strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2) + `}`,
	`{"schemaVersion":2,"a":1,"a":2}`,
	`{"schemaVersion":2,"x":[1,}`,
	`{"schemaVersion":1,"event":"PLANNED","planId":"` + planC1ID + `","plan":{"schemaVersion":2,"x":[}}`,
}

// targetedInputs are valid records and plans with one field spelled at the
// edge of what is accepted: escapes, surrogates, number literals, times.
func targetedInputs() []parityInput {
	var ins []parityInput
	// A plan whose recovery point is rp, spelled as spelled in the file.
	plan := func(rp, spelled string) parityInput {
		p := planC1()
		p.SourceRecoveryPoint = rp
		p.PlanID = ComputePlanID(rp, p.Topic, p.TopicID, p.Offsets)
		data := strings.Replace(string(p.Encode()), `"sourceRecoveryPoint": `+string(appendString(nil, rp)), `"sourceRecoveryPoint": "`+spelled+`"`, 1)
		return parityInput{target: "ParsePlan", value: []byte(data)}
	}
	ins = append(ins,
		plan("x\ufffdy", `x\ud83dy`), plan("x\ufffdA", `x\ud83d\u0041`), plan("x\ufffd\ufffd", `x\ude00\ud83d`),
		plan("cp-7", `\u0063p-7`), plan("cp/7", `cp\/7`), plan("cp\u20287", `cp\u20287`), plan("cp 7", `cp\u00207`))
	replace := func(old, new string) {
		ins = append(ins, parityInput{target: "ParsePlan", value: []byte(strings.Replace(planC1JSON, old, new, 1))})
		for _, e := range []Event{Planned, Committed, Applied} {
			k, v := envelopeOf(e, planC1()).Encode()
			ins = append(ins, parityInput{target: "Decode", key: k, value: []byte(strings.Replace(string(v), old, new, 1))})
		}
	}
	for _, r := range [][2]string{
		{`"0":100`, `"\u0030":100`}, {`"0":100`, `"0":100.0`}, {`"0":100`, `"0":1e2`}, {`"0":100`, `"0":-0`},
		{`"0":100`, `"0":0100`}, {`"0":100`, `"0":9223372036854775807`}, {`"0":100`, `"0":9223372036854775808`},
		{`"0":100`, `"2147483647":100`}, {`"0":100`, `"2147483648":100`}, {`"0":100`, `"-1":100`}, {`"0":100`, `"0" : 100 `},
		{`"schemaVersion":1,"planId"`, `"schemaVersion":1.0,"planId"`}, {`"schemaVersion":1,"planId"`, `"schemaVersion":1e0,"planId"`},
		{`"schemaVersion":1,"planId"`, `"schemaVersion":-0,"planId"`}, {`"schemaVersion":1,"planId"`, `"schemaVersion":2,"planId"`},
		{`"schemaVersion":1,"planId"`, `"schemaVersion":null,"planId"`}, {`"schemaVersion":1,"planId"`, `"planId"`},
		{`"topic":"action-state"`, `"topic":"action-state","topic":"action-state"`}, {`"topic":"action-state"`, `"Topic":"action-state"`},
		{`"topic":"action-state"`, `"topic":null`}, {`"topic":"action-state"`, `"topic":["action-state"]`},
		{`{"0":100,"1":150}`, `{}`}, {`{"0":100,"1":150}`, `null`}, {`{"0":100,"1":150}`, `[100,150]`}, {`{"0":100,"1":150}`, `{"0":null,"1":150}`},
		{`{"0":100,"1":150}`, `{"0":"100","1":150}`}, {`{"0":100,"1":150}`, `{"1":150,"0":100}`},
		{`"2025-03-04T05:06:07.89Z"`, `"2025-03-04T05:06:07.123456789Z"`}, {`"2025-03-04T05:06:07.89Z"`, `"2025-03-04T05:06:07.Z"`},
		{`"2025-03-04T05:06:07.89Z"`, `"2025-03-04T05:06:07+23:59"`}, {`"2025-03-04T05:06:07.89Z"`, `"2025-03-04T05:06:07-00:00"`},
		{`"2025-03-04T05:06:07.89Z"`, `"2025-03-04T05:06:07z"`}, {`"2025-03-04T05:06:07.89Z"`, `"2025-03-04T05:06:60Z"`},
		{`"2025-03-04T05:06:07.89Z"`, `"2025-03-04T24:00:00Z"`}, {`"2025-03-04T05:06:07.89Z"`, `"2025-3-04T05:06:07Z"`},
		{`"2025-03-04T05:06:07.89Z"`, `"9999-12-31T23:59:59.999999999-01:00"`}, {`"2025-03-04T05:06:07.89Z"`, `"2025-03-04T05:06:07+05:60"`},
		{`"2025-03-04T05:06:07.89Z"`, `"2024-02-29T05:06:07Z"`}, {`"2025-03-04T05:06:07.89Z"`, `"2025-03-04 05:06:07Z"`},
		{`"2025-03-04T05:06:07.89Z"`, `"\u0032025-03-04T05:06:07Z"`}, {`"2025-03-04T05:06:07.89Z"`, `" 2025-03-04T05:06:07Z"`},
		{`"worker-1/4242"`, `"w\u0000"`}, {`"worker-1/4242"`, `"w\u007f"`}, {`"worker-1/4242"`, `"w\u0085"`}, {`"worker-1/4242"`, `"w\ud83d"`},
		{`"worker-1/4242"`, `"\u00a0"`}, {`"worker-1/4242"`, `"\u2028"`},
		{`"event":"PLANNED"`, `"event":"PLANNED","event":"PLANNED"`}, {`"actor"`, `"extra":{"a":[1,{"b":null}]},"actor"`},
		{`"boundary":{"0":100,"1":150,"2":7}`, `"boundary":{"0":100,"1":150,"2":7,"3":0}`},
		{`"logStart":{"0":100,"1":151}`, `"logStart":{"0":100}`},
	} {
		replace(r[0], r[1])
	}
	return ins
}

// A Decoder remembers verified plans; it must decide every record exactly as
// Decode does, whatever it decoded before: here every Decode input of the
// corpus, twice over, through one Decoder, each preceded by the valid
// records of planC1 so that its plan is remembered.
func TestDecoderAgreesWithDecode(t *testing.T) {
	d := NewDecoder()
	var primes []decodeSeed
	for _, e := range []Event{Planned, Committed, Deleting, Applied} {
		k, v := envelopeOf(e, planC1()).Encode()
		primes = append(primes, decodeSeed{key: k, value: v})
	}
	for round := range 2 {
		for _, in := range parityInputs(t) {
			if in.target != "Decode" {
				continue
			}
			for _, p := range primes {
				if _, err := d.Decode(p.key, p.value); err != nil {
					t.Fatal(err)
				}
			}
			value := in.value
			if in.nilVal {
				value = nil
			}
			want, wantErr := Decode(in.key, value)
			got, gotErr := d.Decode(in.key, value)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !envelopesEqual(got, want) {
				t.Fatalf("round %d, %q %q:\nDecoder: %+v, %v\nDecode:  %+v, %v", round, in.key, value, got, gotErr, want, wantErr)
			}
		}
	}
	// The tampered plan of a remembered plan ID is still found.
	k, v := envelopeOf(Planned, planC1()).Encode()
	tampered := strings.Replace(string(v), `"1":150`, `"1":151`, 1)
	if _, err := d.Decode(k, []byte(tampered)); !errors.Is(err, ErrPlanEdited) {
		t.Fatalf("tampered plan after the real one: %v", err)
	}
}
