package gate

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestSchemaMatchesTheDocument keeps docs/schema/verdict.schema.json and the
// verdict document from drifting apart: the same fields, the same reasons.
func TestSchemaMatchesTheDocument(t *testing.T) {
	data, err := os.ReadFile("../docs/schema/verdict.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties map[string]any `json:"properties"`
		Defs       struct {
			Reason  struct{ Enum []string } `json:"reason"`
			Refusal struct {
				Properties map[string]any `json:"properties"`
			} `json:"refusal"`
			Checked struct {
				Properties map[string]any `json:"properties"`
			} `json:"checked"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		schema map[string]any
		typ    reflect.Type
	}{
		"verdict": {s.Properties, reflect.TypeFor[Verdict]()},
		"refusal": {s.Defs.Refusal.Properties, reflect.TypeFor[Refusal]()},
		"checked": {s.Defs.Checked.Properties, reflect.TypeFor[Checked]()},
	} {
		var inSchema []string
		for k := range tc.schema {
			inSchema = append(inSchema, k)
		}
		slices.Sort(inSchema)
		if got := jsonFields(tc.typ); !slices.Equal(got, inSchema) {
			t.Errorf("%s: the document has fields %v, the schema %v", name, got, inSchema)
		}
	}
	var reasons []string
	for _, r := range Reasons() {
		reasons = append(reasons, string(r))
	}
	if !slices.Equal(reasons, s.Defs.Reason.Enum) {
		t.Errorf("reasons %v, schema %v", reasons, s.Defs.Reason.Enum)
	}
}

// jsonFields lists the JSON names of a struct's fields, embedded structs flattened.
func jsonFields(typ reflect.Type) []string {
	var out []string
	for f := range typ.Fields() {
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && ft.Kind() == reflect.Struct {
			out = append(out, jsonFields(ft)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
