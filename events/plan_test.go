package events

import (
	"bytes"
	"strings"
	"testing"
)

// The expected IDs below were computed outside Go, with the shell, e.g.
//
//	printf '1\nchk-42\norders.v2\n-39OXTwrGgn459bFtKOSgQ\n2=5\n10=0\n11=9223372036854775807\n' | sha256sum
//
// so they pin the Flink Agents ID algorithm, not this implementation.
var planIDVectors = []struct {
	name                 string
	recoveryPoint, topic string
	topicID              string
	offsets              Offsets
	want                 string
}{
	{"seed example C1", "cp-7", "action-state", topicA, Offsets{0: 100, 1: 150}, planC1ID},
	{"numeric not lexical order", "chk-42", "orders.v2", "-39OXTwrGgn459bFtKOSgQ",
		Offsets{11: 9223372036854775807, 2: 5, 10: 0},
		"a0dc11ff10dfae8339ad58a05cd7c3dbc2e772ae8ae44c766f66f316e8840c60"},
	{"non-ASCII recovery point", "chk-ü-检查点-7", "action-state", topicA, Offsets{0: 100, 1: 150},
		"7604d57141d571c9d4a6ac70343970990251030d7ee3996c276306dce08f1efb"},
	{"URL recovery point, offset zero", "s3://bucket/sp/savepoint-a1b2?x=1&y=<2>", "t", "_____________________w",
		Offsets{0: 0},
		"12499b72f93024fc646fa49fec905403b8caf5179882d4ac496f3c6bea5257d8"},
	{"many partitions up to MaxInt32", "chk-9", "action_state-2", "AAAAAAAAAAAAAAAAAAAAAQ",
		Offsets{2147483647: 0, 100: 100, 20: 20, 10: 10, 9: 9, 8: 8, 7: 7, 6: 6, 5: 5, 4: 4, 3: 3, 2: 2, 1: 1},
		"c2605c2746bcf8fc77d7a84d884c5e01ba411ab92a4211b616846f8622430557"},
}

func TestComputePlanIDVectors(t *testing.T) {
	for _, v := range planIDVectors {
		t.Run(v.name, func(t *testing.T) {
			if got := ComputePlanID(v.recoveryPoint, v.topic, v.topicID, v.offsets); got != v.want {
				t.Fatalf("ComputePlanID = %s, want %s", got, v.want)
			}
		})
	}
}

func TestPlanRoundTrip(t *testing.T) {
	for _, v := range planIDVectors {
		t.Run(v.name, func(t *testing.T) {
			p := Plan{PlanID: v.want, SourceRecoveryPoint: v.recoveryPoint, Topic: v.topic, TopicID: v.topicID, Offsets: v.offsets}
			if err := p.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			data := p.Encode()
			if !bytes.HasSuffix(data, []byte("}\n")) {
				t.Fatalf("Encode does not end with a newline: %q", data)
			}
			got, err := ParsePlan(data)
			if err != nil {
				t.Fatalf("ParsePlan(Encode()): %v\n%s", err, data)
			}
			if !plansEqual(got, p) {
				t.Fatalf("round trip changed the plan:\n got %+v\nwant %+v", got, p)
			}
			if again := got.Encode(); !bytes.Equal(again, data) {
				t.Fatalf("Encode is not deterministic:\n%s\n%s", data, again)
			}
		})
	}
}

func TestPlanEncodeFormat(t *testing.T) {
	want := `{
  "schemaVersion": 1,
  "planId": "a0dc11ff10dfae8339ad58a05cd7c3dbc2e772ae8ae44c766f66f316e8840c60",
  "sourceRecoveryPoint": "chk-42",
  "topic": "orders.v2",
  "topicId": "-39OXTwrGgn459bFtKOSgQ",
  "offsets": {
    "2": 5,
    "10": 0,
    "11": 9223372036854775807
  }
}
`
	v := planIDVectors[1]
	p := Plan{PlanID: v.want, SourceRecoveryPoint: v.recoveryPoint, Topic: v.topic, TopicID: v.topicID, Offsets: v.offsets}
	if got := string(p.Encode()); got != want {
		t.Fatalf("Encode:\n%s\nwant:\n%s", got, want)
	}
}

func TestParsePlanAcceptsOtherWhitespaceAndFieldOrder(t *testing.T) {
	// The ID covers content, not bytes: a plan written by Flink Agents' tool
	// with other whitespace or field order must load.
	in := "\n\t{ \"offsets\" : { \"1\" : 150 , \"0\" : 100 } , \"topicId\":\"" + topicA +
		"\",\"topic\":\"action-state\",\"sourceRecoveryPoint\":\"cp-7\",\"planId\":\"" + planC1ID +
		"\",\"schemaVersion\":1}\r\n  "
	p, err := ParsePlan([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if !plansEqual(p, planC1()) {
		t.Fatalf("got %+v", p)
	}
	// Escapes in strings are content too: "\u0063p-7" is "cp-7".
	if _, err := ParsePlan([]byte(mutate(t, planC1JSON, `"cp-7"`, `"\u0063p-7"`))); err != nil {
		t.Fatalf("escaped recovery point: %v", err)
	}
}

func TestParsePlanStrict(t *testing.T) {
	// Each case breaks exactly one rule of the valid plan planC1JSON; the
	// error must name the field (mention) and say what was expected (reason).
	cases := []struct {
		name, in, mention, reason string
	}{
		{"unknown field", mutate(t, planC1JSON, `"topic":`, `"extra":1,"topic":`), `"extra"`, "not a known field"},
		{"duplicate field", mutate(t, planC1JSON, `"topic":`, `"topic":"action-state","topic":`), `"topic"`, "more than once"},
		{"duplicate partition", mutate(t, planC1JSON, `"1":150`, `"0":150`), `offsets["0"]`, "more than once"},
		{"trailing object", planC1JSON + `{}`, "", "trailing content"},
		{"trailing garbage", planC1JSON + ` x`, "", "trailing content"},
		{"trailing brace", planC1JSON + `}`, "", "trailing content"},
		{"fractional offset", mutate(t, planC1JSON, `"0":100`, `"0":100.5`), `offsets["0"]`, "without fraction"},
		{"integral fraction", mutate(t, planC1JSON, `"0":100`, `"0":100.0`), `offsets["0"]`, "without fraction"},
		{"exponent offset", mutate(t, planC1JSON, `"0":100`, `"0":1e2`), `offsets["0"]`, "exponent"},
		{"negative offset", mutate(t, planC1JSON, `"0":100`, `"0":-1`), `offsets["0"]`, "from 0 to"},
		{"negative zero offset", mutate(t, planC1JSON, `"0":100`, `"0":-0`), `offsets["0"]`, "from 0 to"},
		{"offset beyond int64", mutate(t, planC1JSON, `"0":100`, `"0":9223372036854775808`), `offsets["0"]`, "9223372036854775807"},
		{"string offset", mutate(t, planC1JSON, `"0":100`, `"0":"100"`), `offsets["0"]`, "is a string"},
		{"null offset", mutate(t, planC1JSON, `"0":100`, `"0":null`), `offsets["0"]`, "is null"},
		{"plus key", mutate(t, planC1JSON, `"0":100`, `"+0":100`), `offsets["+0"]`, "canonical partition"},
		{"leading zero key", mutate(t, planC1JSON, `"0":100`, `"00":100`), `offsets["00"]`, "leading zeros"},
		{"leading zero key 01", mutate(t, planC1JSON, `"1":150`, `"01":150`), `offsets["01"]`, "leading zeros"},
		{"negative key", mutate(t, planC1JSON, `"1":150`, `"-1":150`), `offsets["-1"]`, "canonical partition"},
		{"space key", mutate(t, planC1JSON, `"1":150`, `" 1":150`), `offsets[" 1"]`, "canonical partition"},
		{"trailing space key", mutate(t, planC1JSON, `"1":150`, `"1 ":150`), `offsets["1 "]`, "canonical partition"},
		{"empty key", mutate(t, planC1JSON, `"1":150`, `"":150`), `offsets[""]`, "canonical partition"},
		{"hex key", mutate(t, planC1JSON, `"1":150`, `"0x1":150`), `offsets["0x1"]`, "canonical partition"},
		{"non-ASCII digit key", mutate(t, planC1JSON, `"1":150`, `"١":150`), `offsets["١"]`, "canonical partition"},
		{"key beyond int32", mutate(t, planC1JSON, `"1":150`, `"2147483648":150`), `offsets["2147483648"]`, "2147483647"},
		{"key of 11 digits", mutate(t, planC1JSON, `"1":150`, `"10000000000":150`), `offsets["10000000000"]`, "2147483647"},
		{"empty offsets", mutate(t, planC1JSON, `{"0":100,"1":150}`, `{}`), `"offsets"`, "at least one partition"},
		{"offsets array", mutate(t, planC1JSON, `{"0":100,"1":150}`, `[100,150]`), `"offsets"`, "is an array"},
		{"null offsets", mutate(t, planC1JSON, `{"0":100,"1":150}`, `null`), `"offsets"`, "is null"},
		{"empty topic", mutate(t, planC1JSON, `"action-state"`, `""`), `"topic"`, "blank"},
		{"blank topic", mutate(t, planC1JSON, `"action-state"`, `"  "`), `"topic"`, "blank"},
		{"illegal topic", mutate(t, planC1JSON, `"action-state"`, `"action/state"`), `"topic"`, "Kafka topic name"},
		{"dot topic", mutate(t, planC1JSON, `"action-state"`, `".."`), `"topic"`, "Kafka topic name"},
		{"long topic", mutate(t, planC1JSON, `"action-state"`, `"`+strings.Repeat("a", 250)+`"`), `"topic"`, "249"},
		{"null topic", mutate(t, planC1JSON, `"action-state"`, `null`), `"topic"`, "is null"},
		{"empty recovery point", mutate(t, planC1JSON, `"cp-7"`, `""`), `"sourceRecoveryPoint"`, "blank"},
		{"whitespace recovery point", mutate(t, planC1JSON, `"cp-7"`, `" \t "`), `"sourceRecoveryPoint"`, "blank"},
		{"newline in recovery point", mutate(t, planC1JSON, `"cp-7"`, `"cp\n7"`), `"sourceRecoveryPoint"`, "control character"},
		{"null recovery point", mutate(t, planC1JSON, `"cp-7"`, `null`), `"sourceRecoveryPoint"`, "is null"},
		{"numeric recovery point", mutate(t, planC1JSON, `"cp-7"`, `7`), `"sourceRecoveryPoint"`, "is a number"},
		{"schema version 2", mutate(t, planC1JSON, `"schemaVersion":1`, `"schemaVersion":2`), `"schemaVersion"`, "only schema version 1"},
		{"schema version 0", mutate(t, planC1JSON, `"schemaVersion":1`, `"schemaVersion":0`), `"schemaVersion"`, "only schema version 1"},
		{"schema version 1.0", mutate(t, planC1JSON, `"schemaVersion":1`, `"schemaVersion":1.0`), `"schemaVersion"`, "only schema version 1"},
		{"schema version string", mutate(t, planC1JSON, `"schemaVersion":1`, `"schemaVersion":"1"`), `"schemaVersion"`, "is a string"},
		{"schema version null", mutate(t, planC1JSON, `"schemaVersion":1`, `"schemaVersion":null`), `"schemaVersion"`, "is null"},
		{"topic ID short", mutate(t, planC1JSON, topicA, "MTIzNDU2Nzg5MDEyMzQ1"), `"topicId"`, "22 characters"},
		{"topic ID padded", mutate(t, planC1JSON, topicA, topicA+"=="), `"topicId"`, "22 characters"},
		{"topic ID standard base64", mutate(t, planC1JSON, topicA, "+39OXTwrGgn459bFtKOSgQ"), `"topicId"`, "URL-safe base64"},
		{"topic ID slash", mutate(t, planC1JSON, topicA, "/39OXTwrGgn459bFtKOSgQ"), `"topicId"`, "URL-safe base64"},
		{"topic ID non-canonical bits", mutate(t, planC1JSON, topicA, "MTIzNDU2Nzg5MDEyMzQ1Nh"), `"topicId"`, "URL-safe base64"},
		{"topic ID UUID text", mutate(t, planC1JSON, topicA, "fb7f4e5d-3c2b-1a09-f8e7-d6c5b4a39281"), `"topicId"`, "22 characters"},
		{"zero topic ID", mutate(t, planC1JSON, topicA, "AAAAAAAAAAAAAAAAAAAAAA"), `"topicId"`, "zero topic ID"},
		{"null topic ID", mutate(t, planC1JSON, `"`+topicA+`"`, "null"), `"topicId"`, "is null"},
		{"plan ID upper case", mutate(t, planC1JSON, planC1ID, strings.ToUpper(planC1ID)), `"planId"`, "64 lowercase hex"},
		{"plan ID short", mutate(t, planC1JSON, planC1ID, planC1ID[:63]), `"planId"`, "64 lowercase hex"},
		{"plan ID null", mutate(t, planC1JSON, `"`+planC1ID+`"`, "null"), `"planId"`, "is null"},
		{"edited offset", mutate(t, planC1JSON, `"1":150`, `"1":151`), planC1ID, "edited after it was made"},
		{"edited recovery point", mutate(t, planC1JSON, `"cp-7"`, `"cp-8"`), `"planId"`, "edited after it was made"},
		{"missing planId", mutate(t, planC1JSON, `"planId":"`+planC1ID+`",`, ``), `"planId"`, "missing"},
		{"missing offsets", mutate(t, planC1JSON, `,"offsets":{"0":100,"1":150}`, ``), `"offsets"`, "missing"},
		{"missing schemaVersion", mutate(t, planC1JSON, `"schemaVersion":1,`, ``), `"schemaVersion"`, "missing"},
		{"array", `[` + planC1JSON + `]`, "", "expected a JSON object"},
		{"null document", `null`, "", "expected a JSON object"},
		{"empty input", ``, "", "empty"},
		{"whitespace input", " \n", "", "empty"},
		{"truncated", planC1JSON[:len(planC1JSON)-1], "", "ends early (truncated?) at byte"},
		{"invalid UTF-8", mutate(t, planC1JSON, `"cp-7"`, "\"cp-\xff\""), "", "UTF-8"},
		{"single quotes", `{'schemaVersion':1}`, "", "not valid JSON"},
		{"comment", `// plan` + "\n" + planC1JSON, "", "not valid JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParsePlan([]byte(c.in))
			if err == nil {
				t.Fatalf("ParsePlan accepted %s", c.in)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.mention) || !strings.Contains(msg, c.reason) {
				t.Fatalf("error %q\nshould mention %q and say %q", msg, c.mention, c.reason)
			}
		})
	}
}

func TestParsePlanEditedNamesBothIDs(t *testing.T) {
	edited := mutate(t, planC1JSON, `"1":150`, `"1":151`)
	_, err := ParsePlan([]byte(edited))
	if err == nil {
		t.Fatal("edited plan accepted")
	}
	want := ComputePlanID("cp-7", "action-state", topicA, Offsets{0: 100, 1: 151})
	if !strings.Contains(err.Error(), planC1ID) || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q should name the stated ID %s and the content's %s", err, planC1ID, want)
	}
}

func TestPlanValidate(t *testing.T) {
	if err := planC1().Validate(); err != nil {
		t.Fatalf("valid plan: %v", err)
	}
	cases := []struct {
		name    string
		edit    func(p *Plan)
		mention string
	}{
		{"no offsets", func(p *Plan) { p.Offsets = nil }, `"offsets"`},
		{"negative partition", func(p *Plan) { p.Offsets[-1] = 5 }, "partition -1"},
		{"negative offset", func(p *Plan) { p.Offsets[1] = -5 }, `offsets["1"]`},
		{"blank topic", func(p *Plan) { p.Topic = "" }, `"topic"`},
		{"zero topic ID", func(p *Plan) { p.TopicID = zeroTopicID }, `"topicId"`},
		{"blank recovery point", func(p *Plan) { p.SourceRecoveryPoint = " " }, `"sourceRecoveryPoint"`},
		{"invalid UTF-8 recovery point", func(p *Plan) { p.SourceRecoveryPoint = "cp-\xff" }, `"sourceRecoveryPoint"`},
		{"wrong ID", func(p *Plan) { p.Offsets[0] = 99 }, planC1ID},
		{"no ID", func(p *Plan) { p.PlanID = "" }, `"planId"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := planC1()
			c.edit(&p)
			err := p.Validate()
			if err == nil || !strings.Contains(err.Error(), c.mention) {
				t.Fatalf("Validate = %v, want an error mentioning %q", err, c.mention)
			}
		})
	}
}

func TestEncodeEscapesStrings(t *testing.T) {
	rp := "s3://b/p?a=1&b=<2> \"q\" \\ \u2028 ü"
	p := Plan{SourceRecoveryPoint: rp, Topic: "t", TopicID: topicA, Offsets: Offsets{0: 1}}
	p.PlanID = ComputePlanID(p.SourceRecoveryPoint, p.Topic, p.TopicID, p.Offsets)
	data := p.Encode()
	if !bytes.Contains(data, []byte(`?a=1&b=<2>`)) {
		t.Errorf("Encode escaped URL characters needlessly: %s", data)
	}
	got, err := ParsePlan(data)
	if err != nil || got.SourceRecoveryPoint != rp {
		t.Fatalf("ParsePlan(Encode()) = %q, %v; want %q", got.SourceRecoveryPoint, err, rp)
	}
}

func TestValidTopicID(t *testing.T) {
	for _, id := range []string{topicA, "-39OXTwrGgn459bFtKOSgQ", "_____________________w", "AAAAAAAAAAAAAAAAAAAAAQ"} {
		if err := ValidTopicID(id); err != nil {
			t.Errorf("ValidTopicID(%q) = %v", id, err)
		}
	}
	for _, id := range []string{"", zeroTopicID, "MTIzNDU2Nzg5MDEyMzQ1Nh", topicA + "A", "MTIzNDU2Nzg5MDEyMzQ1N=", "MTIzNDU2Nzg5MDEyMzQ1N\x00"} {
		err := ValidTopicID(id)
		if err == nil || !strings.Contains(err.Error(), "topic ID") {
			t.Errorf("ValidTopicID(%q) = %v, want an error", id, err)
		}
	}
}

func TestParsePlanSkipsABOM(t *testing.T) {
	p, err := ParsePlan([]byte("\xef\xbb\xbf" + planC1JSON))
	if err != nil || p.PlanID != planC1ID {
		t.Fatalf("ParsePlan with a BOM = %+v, %v", p, err)
	}
	// A control record is not a file: a BOM there is named, not skipped.
	k, v := envelopeOf(Planned, planC1()).Encode()
	_, err = Decode(k, append([]byte("\xef\xbb\xbf"), v...))
	if err == nil || !strings.Contains(err.Error(), "byte order mark") {
		t.Fatalf("Decode with a BOM = %v", err)
	}
}
