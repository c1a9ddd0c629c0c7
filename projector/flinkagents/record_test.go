package flinkagents

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/events"
)

// Plan IDs computed by Java 17 itself (StringBuilder of the canonical text,
// String.getBytes(UTF_8), SHA-256, lowercase hex), as Flink Agents'
// calculatePlanId does: the reference the Go side must match.
var javaIDs = []struct {
	name          string
	rp, topic, id string
	offsets       events.Offsets
	want          string
}{
	{"lone surrogate hashes as ?", wtf8([]uint16{'c', 'h', 'k', '-', 0xd800, '-', '7'}), "action-state", "AAAAAAAAAAAAAAAAAAAAAQ", events.Offsets{0: 100},
		"1644903c5867016314f367efe6722dbc4fc865ea3bc23c143972839f70b7751f"},
	{"a literal ?", "chk-?-7", "action-state", "AAAAAAAAAAAAAAAAAAAAAQ", events.Offsets{0: 100},
		"1644903c5867016314f367efe6722dbc4fc865ea3bc23c143972839f70b7751f"},
	{"a surrogate pair is one character", "chk-\U0001F600-7", "action-state", "AAAAAAAAAAAAAAAAAAAAAQ", events.Offsets{0: 100},
		"722aa5fa80da53504f43b1e97ef948bafa17f4d0ac1cbc0813d935267bdb8e6a"},
	{"newline and control character", "chk\n7\x01", "action-state", "AAAAAAAAAAAAAAAAAAAAAQ", events.Offsets{0: 100, 1: 0},
		"e2a9c6e9453bf2fde536c2640502c6aa38b7d9ac730cfcbcf54d08bab62c8fe1"},
	{"topic ID of any length", "chk-7", "action-state", "not-a-topic-id", events.Offsets{0: 0},
		"4ab7e5dd2ff8c4f28b97019baec7cf7fdc613feae40c7a123d0fc6382e552d02"},
}

func TestPlanIDAsJavaComputesIt(t *testing.T) {
	for _, c := range javaIDs {
		if got := ComputePlanID(c.rp, c.topic, c.id, c.offsets); got != c.want {
			t.Errorf("%s: plan ID %s, Java computes %s", c.name, got, c.want)
		}
	}
}

func TestSurrogatePairFromEscapesEqualsRawCharacter(t *testing.T) {
	a, err1 := parseJSON([]byte(`"chk-\ud83d\ude00-7"`))
	b, err2 := parseJSON([]byte("\"chk-\U0001F600-7\""))
	if err1 != nil || err2 != nil || a.text != b.text || HasLoneSurrogate(a.text) {
		t.Fatalf("escaped pair %q and raw character %q should be one string (%v %v)", a.text, b.text, err1, err2)
	}
	// A high surrogate followed by a raw pair: the first is lone.
	c, _ := parseJSON([]byte("\"\\ud83d\U0001F600\""))
	if !HasLoneSurrogate(c.text) || javaUTF8(c.text) != "?\U0001F600" {
		t.Fatalf("got %q", javaUTF8(c.text))
	}
}

func TestValueNotUTF8CannotTell(t *testing.T) {
	p := Plan{SourceRecoveryPoint: "chk-1", Topic: "action-state", TopicID: "AAAAAAAAAAAAAAAAAAAAAQ", Offsets: events.Offsets{0: 1}}
	p.PlanID = ComputePlanID(p.SourceRecoveryPoint, p.Topic, p.TopicID, p.Offsets)
	v := []byte(strings.Replace(string(encodeRecord(Committed, p)), "chk-1", "chk-\xff", 1))
	f := New()
	err := f.Step(Record{Offset: 3, Key: []byte(p.PlanID), Value: v})
	if err == nil || !errors.Is(err, ErrCannotTell) || errors.Is(err, ErrJobFails) || err.Offset != 3 {
		t.Fatalf("got %v", err)
	}
	if _, berr := f.Effective(); !errors.Is(berr, ErrCannotTell) {
		t.Fatalf("effective after an unsupported record: %v", berr)
	}
	if verr := f.Validate([]events.Marker{{Topic: p.Topic, TopicID: p.TopicID, Offsets: events.Offsets{0: 5}}}); verr == nil {
		t.Fatal("an unreadable control topic allowed a recovery point")
	}
}

// Every plan Flink Agents accepts and kcleanup refuses converts with a
// precise reason; the ones kcleanup can hold keep their ID.
func TestKcleanupConversion(t *testing.T) {
	cases := []struct {
		name, rp, tid string
		offsets       events.Offsets
		refuse        string // substring of the reason; "" converts
	}{
		{"plain", "chk-7", "AAAAAAAAAAAAAAAAAAAAAQ", events.Offsets{0: 0, 1: 5}, ""},
		{"lone surrogate", wtf8([]uint16{'c', 0xdc00}), "AAAAAAAAAAAAAAAAAAAAAQ", events.Offsets{0: 1}, "lone UTF-16 surrogate"},
		{"newline", "chk\n7", "AAAAAAAAAAAAAAAAAAAAAQ", events.Offsets{0: 1}, "control character"},
		{"short topic ID", "chk-7", "abc", events.Offsets{0: 1}, "topicId"},
		{"blank for Go, not for Java", "\u00a0", "AAAAAAAAAAAAAAAAAAAAAQ", events.Offsets{0: 1}, "blank"},
	}
	for _, c := range cases {
		p := Plan{SourceRecoveryPoint: c.rp, Topic: "action-state", TopicID: c.tid, Offsets: c.offsets}
		p.PlanID = ComputePlanID(p.SourceRecoveryPoint, p.Topic, p.TopicID, p.Offsets)
		// The job's parser accepts every one of them.
		if _, _, err := ParseValue(encodeRecord(Applied, p)); err != nil {
			t.Fatalf("%s: the job's parser accepts this plan, ParseValue says %v", c.name, err)
		}
		kp, err := p.Kcleanup()
		if c.refuse == "" {
			if err != nil || kp.PlanID != p.PlanID {
				t.Errorf("%s: %v (ID %s vs %s)", c.name, err, kp.PlanID, p.PlanID)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.refuse) || !errors.Is(err, ErrCannotTell) {
			t.Errorf("%s: got %v, want a refusal naming %q", c.name, err, c.refuse)
		}
	}
}

// A kcleanup plan file is a plan Flink Agents' parser accepts, with the same
// content and ID (kcleanup's rules are the stricter ones).
func TestKcleanupPlanIsFlinkPlan(t *testing.T) {
	kp, err := events.BuildPlan("chk-9", []events.Marker{{Topic: "action-state", TopicID: "AAAAAAAAAAAAAAAAAAAAAQ", Offsets: events.Offsets{0: 7, 3: 9}}})
	if err != nil {
		t.Fatal(err)
	}
	v := append([]byte(`{"schemaVersion":1,"status":"COMMITTED","plan":`), kp.Encode()...)
	v = append(v, '}')
	_, p, perr := ParseValue(v)
	if perr != nil {
		t.Fatal(perr)
	}
	if p.PlanID != kp.PlanID || !p.Offsets.Equal(kp.Offsets) || p.SourceRecoveryPoint != kp.SourceRecoveryPoint || p.TopicID != kp.TopicID {
		t.Fatalf("got %+v, want %+v", p, kp)
	}
}

func TestJSONGrammar(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{`-0`, true}, {`0`, true}, {`1.5e-3`, true}, {`01`, false}, {`+1`, false}, {`1.`, false}, {`.1`, false},
		{`NaN`, false}, {`"a\x"`, false}, {"\"a\x01\"", false}, {"\"a\x7f\"", true}, {"\ufeff{}", false},
		{"\v{}", false}, {"\u00a0{}", false}, {`{} `, true}, {`{}x`, false}, {`{}}`, false}, {``, false},
		{`{"a":1,"\u0061":2}`, false}, {`'a'`, false}, {`[1,]`, false}, {`{"a":1,}`, false}, {`"\ud800"`, true},
		{`tru`, false}, {`nul`, false}, {`[[[[1]]]]`, true}, {strings.Repeat("[", 100) + strings.Repeat("]", 100), false},
	} {
		_, err := parseJSON([]byte(c.in))
		if (err == nil) != c.ok {
			t.Errorf("parseJSON(%q): err %v, want ok=%v", c.in, err, c.ok)
		}
		// Where RFC 8259 decides (no lone surrogate, no duplicate, no
		// nesting limit), Go's own validator agrees.
		if !strings.Contains(c.in, `\u`) && !strings.Contains(c.in, "[[[[[") && json.Valid([]byte(c.in)) != c.ok {
			t.Errorf("json.Valid(%q) disagrees with ok=%v", c.in, c.ok)
		}
	}
}
