package events

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// These tests keep docs/schema/*.schema.json and the code from drifting
// apart: the schemas list exactly the fields the encoders write, and their
// patterns agree with the Go checks on sample values.

func loadSchema(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "docs", "schema", name))
	if err != nil {
		t.Fatal(err)
	}
	// scan also rejects duplicate keys, which encoding/json would hide.
	if _, ferr := scan(data); ferr != nil {
		t.Fatalf("%s: %v", name, ferr)
	}
	var s map[string]any
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if got := s["$schema"]; got != "https://json-schema.org/draft/2020-12/schema" {
		t.Fatalf("%s: $schema is %v, want draft 2020-12", name, got)
	}
	return s
}

// at walks a path of object keys.
func at(t *testing.T, v any, path ...string) any {
	t.Helper()
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("schema has no object at %q", strings.Join(path, "/"))
		}
		v, ok = m[p]
		if !ok {
			t.Fatalf("schema has no %q (path %q)", p, strings.Join(path, "/"))
		}
	}
	return v
}

func strs(t *testing.T, v any) []string {
	t.Helper()
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("%v is not an array", v)
	}
	out := make([]string, len(list))
	for i, x := range list {
		out[i], ok = x.(string)
		if !ok {
			t.Fatalf("%v is not a string", x)
		}
	}
	return out
}

// written lists the top-level fields of an encoded document, in order.
func written(t *testing.T, data []byte) []string {
	t.Helper()
	var names []string
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	if _, err := dec.ReadToken(); err != nil {
		t.Fatal(err)
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, name.String())
		if err := dec.SkipValue(); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// checkObject: required (in order) and properties are exactly fields, and
// no other property is allowed.
func checkObject(t *testing.T, obj any, fields []string) {
	t.Helper()
	if got := strs(t, at(t, obj, "required")); !slices.Equal(got, fields) {
		t.Errorf("required = %v, want %v", got, fields)
	}
	props := slices.Sorted(maps.Keys(at(t, obj, "properties").(map[string]any)))
	if want := slices.Sorted(slices.Values(fields)); !slices.Equal(props, want) {
		t.Errorf("properties = %v, want %v", props, want)
	}
	if at(t, obj, "additionalProperties") != false {
		t.Error("additionalProperties is not false")
	}
}

func TestPlanSchemaMatchesEncoder(t *testing.T) {
	s := loadSchema(t, "plan.schema.json")
	fields := written(t, planC1().Encode())
	if !slices.Equal(fields, planFields) {
		t.Fatalf("Encode writes %v, parser expects %v", fields, planFields)
	}
	checkObject(t, s, fields)
}

func TestMarkerSchemaMatchesEncoder(t *testing.T) {
	s := loadSchema(t, "marker.schema.json")
	m := marker(Offsets{0: 1})
	if fields := written(t, m.Encode()); !slices.Equal(fields, markerFields[:4]) {
		t.Fatalf("Encode writes %v, parser expects %v", fields, markerFields[:4])
	}
	m.Source = &MarkerSource{CheckpointID: 42, OperatorUID: "u", OperatorUIDHash: strings.Repeat("a", 32), Parallelism: 2, Subtask: 1}
	fields := written(t, m.Encode())
	if !slices.Equal(fields, markerFields) {
		t.Fatalf("Encode with a source writes %v, parser expects %v", fields, markerFields)
	}
	def := at(t, s, "$defs", "marker")
	if got := strs(t, at(t, def, "required")); !slices.Equal(got, fields[:4]) {
		t.Errorf("required = %v, want %v", got, fields[:4])
	}
	props := slices.Sorted(maps.Keys(at(t, def, "properties").(map[string]any)))
	if want := slices.Sorted(slices.Values(fields)); !slices.Equal(props, want) {
		t.Errorf("properties = %v, want %v", props, want)
	}
	if at(t, def, "additionalProperties") != false {
		t.Error("additionalProperties is not false")
	}
	for _, f := range fields[4:] { // the source's four come together
		var others []string
		for _, g := range fields[4:] {
			if g != f {
				others = append(others, g)
			}
		}
		if got := strs(t, at(t, def, "dependentRequired", f)); !slices.Equal(got, others) {
			t.Errorf("dependentRequired[%s] = %v, want %v", f, got, others)
		}
	}
	op := at(t, def, "properties", "operator")
	if got := slices.Sorted(maps.Keys(at(t, op, "properties").(map[string]any))); !slices.Equal(got, operatorFields) {
		t.Errorf("operator properties = %v, want %v", got, operatorFields)
	}
	hash := pattern(t, at(t, op, "properties", "uidHash", "pattern"))
	for _, h := range []string{strings.Repeat("a", 32), strings.Repeat("A", 32), strings.Repeat("0", 31), strings.Repeat("0", 33), strings.Repeat("g", 32), ""} {
		if hash.MatchString(h) != isUIDHash(h) {
			t.Errorf("uidHash %q: schema says %v, code says %v", h, hash.MatchString(h), isUIDHash(h))
		}
	}
	if at(t, def, "properties", "parallelism", "maximum") != float64(MaxParallelism) {
		t.Errorf("parallelism maximum differs from MaxParallelism %d", MaxParallelism)
	}
}

func TestEnvelopeSchemaMatchesEncoder(t *testing.T) {
	s := loadSchema(t, "envelope.schema.json")
	props := slices.Sorted(maps.Keys(at(t, s, "properties").(map[string]any)))
	if want := slices.Sorted(slices.Values(envelopeFields)); !slices.Equal(props, want) {
		t.Errorf("properties = %v, want %v", props, want)
	}
	if at(t, s, "additionalProperties") != false {
		t.Error("additionalProperties is not false")
	}
	if got := strs(t, at(t, s, "properties", "event", "enum")); !slices.Equal(got, []string{"PLANNED", "COMMITTED", "DELETING", "APPLIED"}) {
		t.Errorf("event enum = %v", got)
	}
	// Each allOf entry: if event is E, then field F is required, else forbidden.
	conditional := map[Event][]string{}
	for _, c := range at(t, s, "allOf").([]any) {
		if _, ok := at(t, c, "if", "properties").(map[string]any)["schemaVersion"]; ok {
			// Version 5: a PLANNED or COMMITTED with the operator's reason.
			if v := at(t, c, "if", "properties", "schemaVersion", "const"); v != float64(ReasonSchemaVersion) {
				t.Errorf("allOf on schemaVersion %v, want %d", v, ReasonSchemaVersion)
			}
			if got := strs(t, at(t, c, "then", "properties", "event", "enum")); !slices.Equal(got, []string{"PLANNED", "COMMITTED"}) {
				t.Errorf("version %d events = %v, want PLANNED and COMMITTED (carriesReason)", ReasonSchemaVersion, got)
			}
			for _, e := range []Event{Planned, Committed} {
				env := envelopeOf(e, planC1())
				env.Reason = "why"
				_, value := env.Encode()
				want := append(slices.Clone(strs(t, at(t, s, "required"))), "reason")
				if e == Committed {
					want = append(want, "boundary")
				}
				if got := slices.Sorted(slices.Values(written(t, value))); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
					t.Errorf("%s with a reason: Encode writes %v, schema requires %v", e, got, want)
				}
			}
			if at(t, s, "properties", "reason", "maxLength") != float64(MaxReasonBytes) {
				t.Errorf("reason maxLength differs from MaxReasonBytes %d", MaxReasonBytes)
			}
			continue
		}
		e := Event(at(t, c, "if", "properties", "event", "const").(string))
		then := strs(t, at(t, c, "then", "required"))
		if els := strs(t, at(t, c, "else", "not", "required")); !slices.Equal(then, els) {
			t.Errorf("allOf for %s requires %v but forbids %v elsewhere", e, then, els)
		}
		conditional[e] = append(conditional[e], then...)
	}
	required := strs(t, at(t, s, "required"))
	for _, e := range []Event{Planned, Committed, Deleting, Applied} {
		_, value := envelopeOf(e, planC1()).Encode()
		want := append(slices.Clone(required), conditional[e]...)
		if got := written(t, value); !slices.Equal(got, want) {
			t.Errorf("%s: Encode writes %v, schema requires %v", e, got, want)
		}
	}
}

func pattern(t *testing.T, v any) *regexp.Regexp {
	t.Helper()
	return regexp.MustCompile(v.(string))
}

func TestSchemaPatternsAgreeWithCode(t *testing.T) {
	plan := loadSchema(t, "plan.schema.json")
	env := loadSchema(t, "envelope.schema.json")

	planID := pattern(t, at(t, plan, "properties", "planId", "pattern"))
	if envID := at(t, env, "properties", "planId", "pattern"); envID != planID.String() {
		t.Errorf("envelope planId pattern %v differs from the plan's %v", envID, planID)
	}
	for _, s := range []string{planC1ID, strings.ToUpper(planC1ID), planC1ID[1:], planC1ID + "0", "", strings.Repeat("g", 64)} {
		if planID.MatchString(s) != isPlanID(s) {
			t.Errorf("planId %q: schema says %v, code says %v", s, planID.MatchString(s), isPlanID(s))
		}
	}

	key := pattern(t, at(t, plan, "$defs", "offsets", "propertyNames", "pattern"))
	for _, s := range []string{"0", "1", "10", "2147483647", "00", "01", "+1", "-1", " 1", "1 ", "", "1.0", "１", "99999999999"} {
		_, ok := parsePartition(s)
		if key.MatchString(s) != ok {
			t.Errorf("partition key %q: schema says %v, code says %v", s, key.MatchString(s), ok)
		}
	}

	topicID := pattern(t, at(t, plan, "$defs", "topicId", "pattern"))
	zero := at(t, plan, "$defs", "topicId", "not", "const")
	for _, s := range []string{topicA, "-39OXTwrGgn459bFtKOSgQ", "_____________________w", "AAAAAAAAAAAAAAAAAAAAAQ",
		zeroTopicID, "MTIzNDU2Nzg5MDEyMzQ1Nh", "MTIzNDU2Nzg5MDEyMzQ1N", topicA + "A", "+39OXTwrGgn459bFtKOSgQ", "MTIzNDU2Nzg5MDEyMzQ1N="} {
		schemaOK := topicID.MatchString(s) && s != zero
		if codeOK := ValidTopicID(s) == nil; schemaOK != codeOK {
			t.Errorf("topic ID %q: schema says %v, code says %v", s, schemaOK, codeOK)
		}
	}

	topic := pattern(t, at(t, plan, "$defs", "topic", "pattern"))
	notTopic := strs(t, at(t, plan, "$defs", "topic", "not", "enum"))
	for _, s := range []string{"action-state", "a.b_c-D9", ".", "..", "...", "", " ", "a/b", "ü", strings.Repeat("a", 249), strings.Repeat("a", 250)} {
		schemaOK := topic.MatchString(s) && !slices.Contains(notTopic, s)
		if codeOK := checkTopic("topic", s) == nil; schemaOK != codeOK {
			t.Errorf("topic %q: schema says %v, code says %v", s, schemaOK, codeOK)
		}
	}

	texts := []string{"cp-7", "chk-ü-检查点-7", " x ", "", " ", "\t", "a\nb", "a\x00", "a\u0085b", "a\x7fb", "s3://b/p?a=1&b=2"}
	for _, c := range []struct {
		schema any
		check  func(field, s string) *fieldError
	}{
		{at(t, plan, "properties", "sourceRecoveryPoint", "allOf"), checkRecoveryPoint},
		{at(t, env, "properties", "actor", "allOf"), checkActor},
	} {
		for _, s := range texts {
			schemaOK := true
			for _, p := range c.schema.([]any) {
				schemaOK = schemaOK && pattern(t, at(t, p, "pattern")).MatchString(s)
			}
			if codeOK := c.check("f", s) == nil; schemaOK != codeOK {
				t.Errorf("text %q: schema %v says %v, code says %v", s, c.schema, schemaOK, codeOK)
			}
		}
	}

	// The code checks "at" without a regular expression (it runs for every
	// record); the schema's pattern must accept exactly what it accepts.
	atPattern := pattern(t, at(t, env, "properties", "at", "pattern"))
	for _, s := range rfc3339Samples() {
		if schemaOK, codeOK := atPattern.MatchString(s), rfc3339Shape(s); schemaOK != codeOK {
			t.Errorf("at %q: schema says %v, code says %v", s, schemaOK, codeOK)
		}
	}
}

// rfc3339Samples are valid times and, for each, every one-byte change to
// one of the characters that matter.
func rfc3339Samples() []string {
	valid := []string{
		"2025-03-04T05:06:07Z", "2025-03-04T05:06:07.89Z", "2025-03-04T05:06:07.123456789Z", "0000-01-01T00:00:00+23:59",
		"9999-12-31T23:59:59.5-19:09", "2025-03-04T05:06:07+00:00", "2025-03-04T05:06:07.1-02:30",
	}
	out := []string{"", "Z", "2025-03-04T05:06:07", "2025-03-04T05:06:07.Z", "2025-03-04T05:06:07.1234567890Z",
		"2025-03-04T05:06:07+24:00", "2025-03-04T05:06:07+2:00", "2025-03-04T05:06:07+02:60", "2025-03-04T05:06:07+0200",
		"2025-03-04T05:06:07ZZ", "2025-03-04T05:06:07.5", "x2025-03-04T05:06:07Z"}
	for _, v := range valid {
		out = append(out, v, v+" ", " "+v)
		for i := range len(v) {
			for _, c := range []byte{'0', '9', '-', '+', ':', '.', 'T', 't', 'Z', 'z', ' ', '2', '5', '6'} {
				b := []byte(v)
				b[i] = c
				out = append(out, string(b), v[:i]+v[i+1:], v[:i]+string(c)+v[i:])
			}
		}
	}
	return out
}

func TestMirrorEventSchemaMatchesEncoder(t *testing.T) {
	s := loadSchema(t, "mirror-event.schema.json")
	checkObject(t, s, mirrorFields)
	if got := strs(t, at(t, s, "properties", "event", "enum")); !slices.Equal(got, []string{string(MirrorAttached), string(MirrorDetached)}) {
		t.Errorf("event enum = %v", got)
	}
	if v := at(t, s, "properties", "schemaVersion", "const"); v != float64(MirrorSchemaVersion) {
		t.Errorf("schemaVersion const = %v, want %d", v, MirrorSchemaVersion)
	}
	for _, e := range []Event{MirrorAttached, MirrorDetached} {
		_, value := mirrorEvent(e).Encode()
		if got := written(t, value); !slices.Equal(got, mirrorFields) {
			t.Errorf("%s: Encode writes %v, schema requires %v", e, got, mirrorFields)
		}
	}
}

func TestMirrorGraceEventSchemaMatchesEncoder(t *testing.T) {
	s := loadSchema(t, "mirror-grace-event.schema.json")
	checkObject(t, s, mirrorGraceFields)
	if v := at(t, s, "properties", "schemaVersion", "const"); v != float64(MirrorGraceSchemaVersion) {
		t.Errorf("schemaVersion const = %v, want %d", v, MirrorGraceSchemaVersion)
	}
	if v := at(t, s, "properties", "restoreGraceSeconds", "maximum"); v != MaxRestoreGrace.Seconds() {
		t.Errorf("restoreGraceSeconds maximum = %v, want %v", v, MaxRestoreGrace.Seconds())
	}
	_, value := NewMirrorEvent(MirrorAttached, Mirror{Topic: "m", TopicID: mirrorTopicID, Reason: "r", HasGrace: true, RestoreGrace: time.Minute}, time.Unix(0, 0), "a").Encode()
	if got := written(t, value); !slices.Equal(got, mirrorGraceFields) {
		t.Errorf("Encode writes %v, schema requires %v", got, mirrorGraceFields)
	}
}
