package events

import (
	stderrors "errors"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	for _, e := range []Event{Planned, Committed, Deleting, Applied} {
		t.Run(string(e), func(t *testing.T) {
			env := envelopeOf(e, planC1())
			if err := env.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			key, value := env.Encode()
			if string(key) != planC1ID+"/"+string(e) {
				t.Fatalf("key %q", key)
			}
			got, err := Decode(key, value)
			if err != nil {
				t.Fatalf("Decode(Encode()): %v\n%s", err, value)
			}
			if !envelopesEqual(got, env) {
				t.Fatalf("round trip changed the envelope:\n got %+v\nwant %+v", got, env)
			}
			if _, again := got.Encode(); string(again) != string(value) {
				t.Fatalf("Encode is not deterministic:\n%s\n%s", value, again)
			}
		})
	}
}

func TestEnvelopeEncodeFormat(t *testing.T) {
	_, value := envelopeOf(Committed, planC1()).Encode()
	want := `{"schemaVersion":1,"event":"COMMITTED","planId":"` + planC1ID + `","plan":` + planC1JSON +
		`,"at":"2025-03-04T05:06:07.89Z","actor":"worker-1/4242","boundary":{"0":100,"1":150,"2":7}}`
	if string(value) != want {
		t.Fatalf("Encode:\n%s\nwant:\n%s", value, want)
	}
}

func TestEnvelopeAtIsUTC(t *testing.T) {
	// Whatever zone the writer or the reader is in, the same instant is
	// written and decoded the same way (replicas must agree, docs/design.md §5).
	env := envelopeOf(Planned, planC1())
	env.At = time.Date(2025, 3, 4, 7, 6, 7, 0, time.FixedZone("CEST", 2*3600))
	key, value := env.Encode()
	if !strings.Contains(string(value), `"at":"2025-03-04T05:06:07Z"`) {
		t.Fatalf("at not written in UTC: %s", value)
	}
	in := strings.Replace(string(value), `"2025-03-04T05:06:07Z"`, `"2025-03-04T07:06:07+02:00"`, 1)
	got, err := Decode(key, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if got.At.Location() != time.UTC || !got.At.Equal(env.At) {
		t.Fatalf("At = %v (%v), want %v in UTC", got.At, got.At.Location(), env.At)
	}
}

// validRecord is a known-good record to break one rule at a time.
func validRecord(t *testing.T, e Event) (key, value string) {
	t.Helper()
	k, v := envelopeOf(e, planC1()).Encode()
	return string(k), string(v)
}

func TestDecodeErrorClasses(t *testing.T) {
	pk, pv := validRecord(t, Planned)
	ck, cv := validRecord(t, Committed)
	ak, av := validRecord(t, Applied)
	_, dv := validRecord(t, Deleting)
	otherPlan := Plan{SourceRecoveryPoint: "cp-8", Topic: "action-state", TopicID: topicA, Offsets: Offsets{0: 1, 1: 2}}
	otherPlan.PlanID = ComputePlanID(otherPlan.SourceRecoveryPoint, otherPlan.Topic, otherPlan.TopicID, otherPlan.Offsets)
	newEvent := `{"schemaVersion":1,"event":"PAUSED","planId":"` + planC1ID + `","plan":{"anything":true},"reason":"new field"}`
	cases := []struct {
		name       string
		key        string
		value      *string // nil: a tombstone
		class      error
		field      string
		reasonPart string
	}{
		{"tombstone", pk, nil, ErrTombstone, "value", "tombstone"},
		{"empty value", pk, ptr(""), ErrMalformed, "value", "empty"},
		{"not JSON", pk, ptr("PLANNED"), ErrMalformed, "value", "not valid JSON"},
		{"JSON array", pk, ptr("[" + pv + "]"), ErrMalformed, "value", "is an array"},
		{"JSON string", pk, ptr(`"x"`), ErrMalformed, "value", "is a string"},
		{"trailing content", pk, ptr(pv + pv), ErrMalformed, "value", "trailing content"},
		{"invalid UTF-8", pk, ptr(strings.Replace(pv, "worker-1", "worker-\xff", 1)), ErrMalformed, "value", "UTF-8"},
		{"newer schema", "anything at all", ptr(`{"schemaVersion":2,"event":"X","somethingNew":{"a":[1]}}`), ErrNewerSchema, "schemaVersion", "upgrade"},
		{"newer schema, huge", pk, ptr(`{"schemaVersion":123456789012345678901234567890}`), ErrNewerSchema, "schemaVersion", "only schema version 1"},
		{"newer plan schema", pk, ptr(strings.Replace(pv, `"plan":{"schemaVersion":1,`, `"plan":{"schemaVersion":3,`, 1)), ErrNewerSchema, "plan.schemaVersion", "upgrade"},
		{"schema version 0", pk, ptr(strings.Replace(pv, `{"schemaVersion":1`, `{"schemaVersion":0`, 1)), ErrMalformed, "schemaVersion", "expected schema version 1"},
		{"schema version -2", pk, ptr(strings.Replace(pv, `{"schemaVersion":1`, `{"schemaVersion":-2`, 1)), ErrMalformed, "schemaVersion", "expected"},
		{"schema version 2.0", pk, ptr(strings.Replace(pv, `{"schemaVersion":1`, `{"schemaVersion":2.0`, 1)), ErrMalformed, "schemaVersion", "expected"},
		{"schema version string", pk, ptr(strings.Replace(pv, `{"schemaVersion":1`, `{"schemaVersion":"2"`, 1)), ErrMalformed, "schemaVersion", "is a string"},
		{"schema version missing", pk, ptr(strings.Replace(pv, `{"schemaVersion":1,`, `{`, 1)), ErrMalformed, "schemaVersion", "missing"},
		{"duplicate schema version", pk, ptr(strings.Replace(pv, `{"schemaVersion":1`, `{"schemaVersion":2,"schemaVersion":1`, 1)), ErrMalformed, "schemaVersion", "more than once"},
		{"unknown event", planC1ID + "/PAUSED", ptr(newEvent), ErrUnknownEvent, "event", `"PAUSED"`},
		{"unknown event, key names another", planC1ID + "/RESUMED", ptr(newEvent), ErrMalformed, "event", `the key names "RESUMED"`},
		{"unknown event, key names a known one", planC1ID + "/PLANNED", ptr(newEvent), ErrMalformed, "event", `the key names "PLANNED"`},
		{"known body event, unknown key event", planC1ID + "/PAUSED", &pv, ErrMalformed, "event", `the key names "PAUSED"`},
		{"unknown event, other plan ID", otherPlan.PlanID + "/PAUSED", ptr(newEvent), ErrMalformed, "planId", "the key names"},
		{"unknown event, lower case", planC1ID + "/PAUSED", ptr(strings.Replace(newEvent, `"PAUSED"`, `"paused"`, 1)), ErrMalformed, "event", `"paused"`},
		{"key event differs", planC1ID + "/DELETING", &pv, ErrMalformed, "event", `is "PLANNED" but the key names "DELETING"`},
		{"key plan ID differs", otherPlan.PlanID + "/PLANNED", &pv, ErrMalformed, "planId", "the key names"},
		{"key without slash", planC1ID + "PLANNED", &pv, ErrMalformed, "key", "<planId>/<EVENT>"},
		{"key with two slashes", pk + "/x", &pv, ErrMalformed, "key", "<planId>/<EVENT>"},
		{"key upper-case hex", strings.ToUpper(planC1ID) + "/PLANNED", &pv, ErrMalformed, "key", "64 lowercase hex"},
		{"key lower-case event", planC1ID + "/planned", &pv, ErrMalformed, "key", "<planId>/<EVENT>"},
		{"empty key", "", &pv, ErrMalformed, "key", "<planId>/<EVENT>"},
		{"body planId is not the plan's", otherPlan.PlanID + "/PLANNED", ptr(strings.Replace(pv, `"planId":"`+planC1ID+`","plan"`, `"planId":"`+otherPlan.PlanID+`","plan"`, 1)), ErrMalformed, "planId", "plan.planId"},
		{"tampered plan", pk, ptr(strings.Replace(pv, `"1":150`, `"1":151`, 1)), ErrMalformed, "plan.planId", "edited"},
		{"plan partition key", pk, ptr(strings.Replace(pv, `"1":150`, `"01":150`, 1)), ErrMalformed, `plan.offsets["01"]`, "canonical partition"},
		{"plan duplicate partition", pk, ptr(strings.Replace(pv, `"1":150`, `"0":150`, 1)), ErrMalformed, `plan.offsets["0"]`, "more than once"},
		{"plan unknown field", pk, ptr(strings.Replace(pv, `"topic":`, `"x":1,"topic":`, 1)), ErrMalformed, "plan.x", "not a known field"},
		{"plan zero topic ID", pk, ptr(strings.Replace(pv, topicA, zeroTopicID, 1)), ErrMalformed, "plan.topicId", "zero topic ID"},
		{"plan null", pk, ptr(strings.Replace(pv, planC1JSON, "null", 1)), ErrMalformed, "plan", "is null"},
		{"plan missing", pk, ptr(strings.Replace(pv, `"plan":`+planC1JSON+`,`, "", 1)), ErrMalformed, "plan", "missing"},
		{"unknown field", pk, ptr(strings.Replace(pv, `"actor":`, `"host":"h","actor":`, 1)), ErrMalformed, "host", "not a known field"},
		{"duplicate actor", pk, ptr(strings.Replace(pv, `"actor":`, `"actor":"a","actor":`, 1)), ErrMalformed, "actor", "more than once"},
		{"actor empty", pk, ptr(strings.Replace(pv, `"worker-1/4242"`, `""`, 1)), ErrMalformed, "actor", "blank"},
		{"actor blank", pk, ptr(strings.Replace(pv, `"worker-1/4242"`, `"  "`, 1)), ErrMalformed, "actor", "blank"},
		{"actor escape sequence", pk, ptr(strings.Replace(pv, `"worker-1/4242"`, `"w\u001b[2J"`, 1)), ErrMalformed, "actor", "control character"},
		{"actor null", pk, ptr(strings.Replace(pv, `"worker-1/4242"`, `null`, 1)), ErrMalformed, "actor", "is null"},
		{"actor missing", pk, ptr(strings.Replace(pv, `,"actor":"worker-1/4242"`, ``, 1)), ErrMalformed, "actor", "missing"},
		{"at not a time", pk, ptr(strings.Replace(pv, `"2025-03-04T05:06:07.89Z"`, `"yesterday"`, 1)), ErrMalformed, "at", "RFC 3339"},
		{"at without zone", pk, ptr(strings.Replace(pv, `"2025-03-04T05:06:07.89Z"`, `"2025-03-04T05:06:07"`, 1)), ErrMalformed, "at", "RFC 3339"},
		{"at lower-case t", pk, ptr(strings.Replace(pv, `"2025-03-04T05:06:07.89Z"`, `"2025-03-04t05:06:07.89Z"`, 1)), ErrMalformed, "at", "RFC 3339"},
		{"at comma fraction", pk, ptr(strings.Replace(pv, `"2025-03-04T05:06:07.89Z"`, `"2025-03-04T05:06:07,89Z"`, 1)), ErrMalformed, "at", "RFC 3339"},
		{"at ten fraction digits", pk, ptr(strings.Replace(pv, `"2025-03-04T05:06:07.89Z"`, `"2025-03-04T05:06:07.1234567891Z"`, 1)), ErrMalformed, "at", "RFC 3339"},
		{"at offset hour 24", pk, ptr(strings.Replace(pv, `"2025-03-04T05:06:07.89Z"`, `"2025-03-04T05:06:07+24:00"`, 1)), ErrMalformed, "at", "RFC 3339"},
		{"at February 30", pk, ptr(strings.Replace(pv, `"2025-03-04T05:06:07.89Z"`, `"2025-02-30T05:06:07Z"`, 1)), ErrMalformed, "at", "RFC 3339"},
		{"at a number", pk, ptr(strings.Replace(pv, `"2025-03-04T05:06:07.89Z"`, `1741064767`, 1)), ErrMalformed, "at", "is a number"},
		{"at before year 0 in UTC", pk, ptr(strings.Replace(pv, `"2025-03-04T05:06:07.89Z"`, `"0000-01-01T00:00:00+01:00"`, 1)), ErrMalformed, "at", "between years"},
		{"at missing", pk, ptr(strings.Replace(pv, `"at":"2025-03-04T05:06:07.89Z",`, ``, 1)), ErrMalformed, "at", "missing"},
		{"event missing", pk, ptr(strings.Replace(pv, `"event":"PLANNED",`, ``, 1)), ErrMalformed, "event", "missing"},
		{"event null", pk, ptr(strings.Replace(pv, `"event":"PLANNED"`, `"event":null`, 1)), ErrMalformed, "event", "is null"},
		{"planId missing", pk, ptr(strings.Replace(pv, `"planId":"`+planC1ID+`",`, ``, 1)), ErrMalformed, "planId", "missing"},
		{"boundary on PLANNED", pk, ptr(strings.TrimSuffix(pv, "}") + `,"boundary":{"0":1}}`), ErrMalformed, "boundary", "not allowed on PLANNED"},
		{"boundary on DELETING", planC1ID + "/DELETING", ptr(strings.Replace(dv, `"actor"`, `"boundary":{"0":1},"actor"`, 1)), ErrMalformed, "boundary", "COMMITTED only"},
		{"boundary missing on COMMITTED", ck, ptr(strings.Replace(cv, `,"boundary":{"0":100,"1":150,"2":7}`, ``, 1)), ErrMalformed, "boundary", "missing"},
		{"boundary empty", ck, ptr(strings.Replace(cv, `"boundary":{"0":100,"1":150,"2":7}`, `"boundary":{}`, 1)), ErrMalformed, "boundary", "at least one partition"},
		{"boundary null", ck, ptr(strings.Replace(cv, `"boundary":{"0":100,"1":150,"2":7}`, `"boundary":null`, 1)), ErrMalformed, "boundary", "is null"},
		{"boundary negative", ck, ptr(strings.Replace(cv, `"2":7}`, `"2":-7}`, 1)), ErrMalformed, `boundary["2"]`, "from 0"},
		{"logStart on COMMITTED", ck, ptr(strings.TrimSuffix(cv, "}") + `,"logStart":{"0":1}}`), ErrMalformed, "logStart", "APPLIED only"},
		{"logStart missing on APPLIED", ak, ptr(strings.Replace(av, `,"logStart":{"0":100,"1":151}`, ``, 1)), ErrMalformed, "logStart", "missing"},
		{"logStart fraction", ak, ptr(strings.Replace(av, `"1":151}`, `"1":151.5}`, 1)), ErrMalformed, `logStart["1"]`, "fraction"},
		// The field of a nesting error is the path to where the limit was hit: x[0][0]...
		{"deep nesting", pk, ptr(strings.Replace(pv, `"actor"`, `"x":`+strings.Repeat("[", 100)+strings.Repeat("]", 100)+`,"actor"`, 1)), ErrMalformed, "x[0][0]*", "nests deeper"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var value []byte
			if c.value != nil {
				value = []byte(*c.value)
			}
			env, err := Decode([]byte(c.key), value)
			if err == nil {
				t.Fatalf("Decode accepted %s", value)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T %v is not a *DecodeError", err, err)
			}
			// A field ending in * is a prefix.
			fieldOK := de.Field == c.field || strings.HasSuffix(c.field, "*") && strings.HasPrefix(de.Field, strings.TrimSuffix(c.field, "*"))
			if !fieldOK || !strings.Contains(de.Reason, c.reasonPart) {
				t.Fatalf("DecodeError{Field: %q, Reason: %q}, want field %q and a reason saying %q", de.Field, de.Reason, c.field, c.reasonPart)
			}
			assertClass(t, err, c.class)
			if !envelopesEqual(env, Envelope{}) {
				t.Fatalf("Decode returned a non-zero envelope with an error: %+v", env)
			}
		})
	}
}

func ptr(s string) *string { return &s }

var classes = []error{ErrTombstone, ErrMalformed, ErrNewerSchema, ErrUnknownEvent}

// assertClass checks that err matches want, and no other class, with both
// cockroachdb/errors and the standard library, also when wrapped.
func assertClass(t *testing.T, err, want error) {
	t.Helper()
	wrapped := errors.Wrapf(err, "decode control record %d", 42)
	for _, c := range classes {
		for _, e := range []error{err, wrapped} {
			if got := errors.Is(e, c); got != (c == want) {
				t.Errorf("errors.Is(%v, %v) = %v", e, c, got)
			}
			if got := stderrors.Is(e, c); got != (c == want) {
				t.Errorf("std errors.Is(%v, %v) = %v", e, c, got)
			}
		}
	}
}

func TestDecodeErrorText(t *testing.T) {
	_, err := Decode([]byte(planC1ID+"/PLANNED"), []byte(strings.Replace(mustValue(t, Planned), `"1":150`, `"01":150`, 1)))
	want := `control record field plan.offsets["01"]: is not a canonical partition number: expected a decimal number from 0 to 2147483647, without sign, spaces or leading zeros`
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	_, err = Decode([]byte(planC1ID+"/PLANNED"), []byte(strings.Replace(mustValue(t, Planned), `"worker-1/4242"`, `""`, 1)))
	if err == nil || !strings.HasPrefix(err.Error(), `control record field "actor": is blank: expected`) {
		t.Fatalf("got %v", err)
	}
	// A DecodeError made by hand (zero class) still classifies as malformed.
	assertClass(t, &DecodeError{Field: "x", Reason: "y"}, ErrMalformed)
}

func mustValue(t *testing.T, e Event) string {
	_, v := validRecord(t, e)
	return v
}

func TestParseKey(t *testing.T) {
	for _, e := range []Event{Planned, Committed, Deleting, Applied} {
		id, got, err := ParseKey([]byte(Key(planC1ID, e)))
		if err != nil || id != planC1ID || got != e {
			t.Errorf("ParseKey(Key(%s)) = %q, %q, %v", e, id, got, err)
		}
	}
	// A well-formed key of a future event: both parts, and ErrUnknownEvent.
	id, e, err := ParseKey([]byte(planC1ID + "/PAUSED_2"))
	if id != planC1ID || e != "PAUSED_2" {
		t.Errorf("ParseKey of a future event = %q, %q", id, e)
	}
	assertClass(t, err, ErrUnknownEvent)

	for _, key := range []string{
		"", "/", planC1ID, planC1ID + "/", "/PLANNED", planC1ID + "/PLANNED/", planC1ID + "/PLANNED ",
		" " + planC1ID + "/PLANNED", planC1ID[:63] + "/PLANNED", planC1ID + "0/PLANNED",
		strings.ToUpper(planC1ID) + "/PLANNED", planC1ID + "/Planned", planC1ID + "/1PLANNED",
		planC1ID + "/" + strings.Repeat("A", 65), planC1ID + "/PLANNED\x00", planC1ID + "/\xff",
	} {
		id, e, err := ParseKey([]byte(key))
		if err == nil || id != "" || e != "" {
			t.Errorf("ParseKey(%q) = %q, %q, %v; want a malformed-key error", key, id, e, err)
			continue
		}
		assertClass(t, err, ErrMalformed)
		var de *DecodeError
		if !errors.As(err, &de) || de.Field != "key" {
			t.Errorf("ParseKey(%q) error %v does not name the key", key, err)
		}
	}
}

func TestEnvelopeValidate(t *testing.T) {
	env := envelopeOf(Committed, planC1())
	env.Boundary = nil
	if err := env.Validate(); err == nil || !strings.Contains(err.Error(), "boundary") {
		t.Fatalf("Validate of COMMITTED without boundary = %v", err)
	}
	env = envelopeOf(Planned, planC1())
	env.At = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := env.Validate(); err == nil || !strings.Contains(err.Error(), `"at"`) {
		t.Fatalf("Validate of year 10000 = %v", err)
	}
	env = envelopeOf(Planned, planC1())
	env.PlanID = ""
	if err := env.Validate(); err == nil {
		t.Fatal("Validate accepted an envelope without plan ID")
	}
	// Encode writes invalid UTF-8 as U+FFFD, a record that decodes to another
	// actor (or mirror reason) than the one written: Validate refuses it.
	env = envelopeOf(Planned, planC1())
	env.Actor = "\x8e"
	if err := env.Validate(); err == nil || !strings.Contains(err.Error(), `field "actor": is not valid UTF-8`) {
		t.Fatalf("Validate of actor %q = %v", env.Actor, err)
	}
	mirror := NewMirrorEvent(MirrorAttached, Mirror{Topic: "ops.mirror", TopicID: "-39OXTwrGgn459bFtKOSgQ", Reason: "drill \xff"}, time.Unix(0, 0), "h/1")
	if err := mirror.Validate(); err == nil || !strings.Contains(err.Error(), `field "reason": is not valid UTF-8`) {
		t.Fatalf("Validate of mirror reason %q = %v", mirror.Mirror.Reason, err)
	}
}

func TestDecodeFinerCauses(t *testing.T) {
	pk, pv := validRecord(t, Planned)
	cases := []struct {
		name, key, value string
		detail           error
	}{
		{"tampered plan", pk, strings.Replace(pv, `"1":150`, `"1":151`, 1), ErrPlanEdited},
		{"key names another event", planC1ID + "/DELETING", pv, ErrKeyMismatch},
		{"key names another plan", strings.Repeat("0", 64) + "/PLANNED", pv, ErrKeyMismatch},
		{"malformed key", "x", pv, nil},
		{"plan partition key", pk, strings.Replace(pv, `"1":150`, `"01":150`, 1), nil},
		{"actor", pk, strings.Replace(pv, `"worker-1/4242"`, `""`, 1), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode([]byte(c.key), []byte(c.value))
			assertClass(t, err, ErrMalformed)
			for _, d := range []error{ErrPlanEdited, ErrKeyMismatch} {
				if got := errors.Is(err, d); got != (d == c.detail) {
					t.Errorf("errors.Is(%v, %v) = %v", err, d, got)
				}
				if got := stderrors.Is(err, d); got != (d == c.detail) {
					t.Errorf("std errors.Is(%v, %v) = %v", err, d, got)
				}
			}
		})
	}
	_, err := ParsePlan([]byte(strings.Replace(planC1JSON, `"1":150`, `"1":151`, 1)))
	if !errors.Is(err, ErrPlanEdited) {
		t.Errorf("ParsePlan of an edited plan: %v does not match ErrPlanEdited", err)
	}
	if hints := errors.GetAllHints(err); len(hints) == 0 || !strings.Contains(hints[0], "kcleanup plan") {
		t.Errorf("ParsePlan of an edited plan: hints %q", hints)
	}
	_, err = ParsePlan([]byte(strings.Replace(planC1JSON, `"1":150`, `"01":150`, 1)))
	if errors.Is(err, ErrPlanEdited) {
		t.Errorf("ParsePlan: %v matches ErrPlanEdited", err)
	}
}
