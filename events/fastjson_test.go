package events

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// fastJSONSeeds are documents at the edges of the grammar: escapes,
// surrogates, numbers, nesting, duplicates, trailing content.
var fastJSONSeeds = []string{
	`{}`, `[]`, ` {"a":1} `, "\t\r\n{\"a\" : [ 1 , 2 ] }\n", `null`, `true`, `false`, `"x"`, `0`, `-0`, `-12.5e+3`, `1E9`,
	`{"a":"\"\\\/\b\f\n\r\t"}`, `{"a":"\u00e9\u2028"}`, `{"a":"\ud83d\ude00"}`, `{"a":"\ud83d"}`, `{"a":"\ud83dx"}`,
	`{"a":"\ud83d\u0041"}`, `{"a":"\ude00\ud83d"}`, `{"a":"\uDBFF\uDFFF"}`, `{"a":"é ünïcödé 😀"}`, `{"\u0061":1,"a":2}`,
	`{"a":1,"a":2}`, `{"a":{"b":[{"c":null}]}}`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`,
	`{"a":1e}`, `{"a":-}`, `{"a":tru}`, `{"a":"x`, `{"a":"\x"}`, `{"a":"\u12"}`, "{\"a\":\"\x01\"}", `{} {}`, `{}x`,
	`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	`{"0":1,"1":2,"2":3,"3":4,"4":5,"5":6,"6":7,"7":8,"8":9,"9":10,"10":11,"11":12,"12":13,"13":14,"14":15,"15":16,"16":17,"3":0}`,
	``, ` `, `"`, `{`, `[`, `-`, `{"a":[1,2,3]]`,
}

// checkFastAgrees is the contract of parseFast: on valid input it builds
// exactly the token reader's tree, and it accepts nothing the token reader
// rejects. (Errors always come from the token reader.)
func checkFastAgrees(t *testing.T, data []byte) {
	t.Helper()
	if !utf8.Valid(data) {
		return // parseJSON rejects it before either reader runs
	}
	fast, ok := parseFast(data)
	slow, ferr := parseTokens(data)
	switch {
	case ok && ferr != nil:
		t.Fatalf("%q: parseFast accepts what the token reader rejects: %v", data, ferr)
	case !ok && ferr == nil:
		t.Fatalf("%q: parseFast rejects a valid document (correct, but slow)", data)
	case ok && !reflect.DeepEqual(fast, slow):
		t.Fatalf("%q: trees differ\nfast: %#v\nslow: %#v", data, fast, slow)
	}
}

func TestParseFastAgreesWithTokenReader(t *testing.T) {
	for _, s := range fastJSONSeeds {
		checkFastAgrees(t, []byte(s))
	}
	// Every document the rest of the tests and fuzz corpora use.
	files, _ := filepath.Glob("testdata/fuzz/*/*")
	for _, f := range files {
		for _, doc := range corpusStrings(t, f) {
			checkFastAgrees(t, []byte(doc))
		}
	}
	env := Envelope{SchemaVersion: 1, Event: Committed, Actor: "a \"quoted\" actor\u2028",
		Plan:     Plan{SourceRecoveryPoint: "chk-1 ✓", Topic: "t", TopicID: "AAECAwQFBgcICQoLDA0ODw", Offsets: Offsets{0: 1, 7: 2}},
		Boundary: Offsets{0: 1, 7: 2}}
	env.PlanID = ComputePlanID(env.Plan.SourceRecoveryPoint, env.Plan.Topic, env.Plan.TopicID, env.Plan.Offsets)
	env.Plan.PlanID = env.PlanID
	_, v := env.Encode()
	checkFastAgrees(t, v)
	checkFastAgrees(t, env.Plan.Encode())
}

// The nesting limit is the token reader's: parseFast declines deeper input.
func TestParseFastDepth(t *testing.T) {
	deep := strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2)
	if _, ok := parseFast([]byte(deep)); ok {
		t.Fatal("parseFast accepted nesting beyond maxDepth")
	}
	if _, ferr := parseJSON([]byte(deep)); ferr == nil {
		t.Fatal("parseJSON accepted nesting beyond maxDepth")
	}
	ok := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	checkFastAgrees(t, []byte(ok))
}

func FuzzParseFast(f *testing.F) {
	for _, s := range fastJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkFastAgrees(t, data) })
}

// corpusStrings returns the []byte and string values of a fuzz corpus file
// ("go test fuzz v1" format), unquoted.
func corpusStrings(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		for _, prefix := range []string{"[]byte(", "string("} {
			if arg, ok := strings.CutPrefix(line, prefix); ok {
				if s, err := strconv.Unquote(strings.TrimSuffix(arg, ")")); err == nil {
					out = append(out, s)
				}
			}
		}
	}
	return out
}
