package report

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/protocol"
)

// TestStatusSchemasMatchTheDocuments keeps docs/schema/status.schema.json
// and worker-status.schema.json from drifting from the Go types: every
// field is in the schema, every schema property is a field, and the fields
// without omitempty or omitzero are the required ones (but for the status document,
// whose worker-only fields are absent from `kcleanup status`). The CLI's
// TestJSONDocumentsMatchTheirSchemas validates real output.
func TestStatusSchemasMatchTheDocuments(t *testing.T) {
	load := func(name string) (object, map[string]object) {
		data, err := os.ReadFile("../docs/schema/" + name)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			object
			Defs map[string]object `json:"$defs"`
		}
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return s.object, s.Defs
	}
	status, sdefs := load("status.schema.json")
	ws, wdefs := load("worker-status.schema.json")
	op := sdefs["operation"]
	for name, tc := range map[string]struct {
		schema object
		typ    reflect.Type
	}{
		// One object: the status document with, on a worker, its own fields.
		"status": {status, reflect.TypeFor[struct {
			Status
			TopicStatus
		}]()},
		"operation":    {op, reflect.TypeFor[OperationStatus]()},
		"step":         {inner[object](t, inner[map[string]any](t, op.Properties["history"])["items"]), reflect.TypeFor[StepStatus]()},
		"rejected":     {sdefs["rejected"], reflect.TypeFor[RejectedRecord]()},
		"blocked":      {sdefs["blocked"], reflect.TypeFor[BlockedOperation]()},
		"repair":       {inner[object](t, inner[map[string]any](t, status.Properties["repairs"])["items"]), reflect.TypeFor[PendingRepair]()},
		"retraction":   {inner[object](t, inner[map[string]any](t, status.Properties["retractions"])["items"]), reflect.TypeFor[PendingRetraction]()},
		"dataTopic":    {inner[object](t, status.Properties["dataTopic"]), reflect.TypeFor[DataTopicOffsets]()},
		"maintenance":  {inner[object](t, inner[map[string]any](t, status.Properties["maintenance"])["items"]), reflect.TypeFor[MaintenanceRecord]()},
		"flinkAgents":  {sdefs["flinkAgents"], reflect.TypeFor[FlinkStatus]()},
		"mirror":       {sdefs["mirror"], reflect.TypeFor[protocol.MirrorAssessment]()},
		"mirrorHold":   {inner[object](t, sdefs["mirror"].Properties["hold"]), reflect.TypeFor[protocol.MirrorHold]()},
		"pin":          {sdefs["pin"], reflect.TypeFor[PinStatus]()},
		"noTombstones": {sdefs["noTombstones"], reflect.TypeFor[DeclarationStatus]()},
		"worker":       {ws, reflect.TypeFor[WorkerStatus]()},
		"fleet":        {wdefs["fleet"], reflect.TypeFor[FleetStatus]()},
		"member":       {wdefs["member"], reflect.TypeFor[FleetMember]()},
	} {
		fields, required := ownFields(tc.typ)
		var props []string
		for k := range tc.schema.Properties {
			props = append(props, k)
		}
		slices.Sort(props)
		if !slices.Equal(fields, props) {
			t.Errorf("%s: the document has fields %v, the schema %v", name, fields, props)
		}
		if req := slices.Sorted(slices.Values(tc.schema.Required)); name != "status" && tc.schema.Required != nil && !slices.Equal(required, req) {
			t.Errorf("%s: the document always has %v, the schema requires %v", name, required, req)
		}
	}
}

// object is a JSON Schema object's properties and required list.
type object struct {
	Required   []string       `json:"required"`
	Properties map[string]any `json:"properties"`
}

// inner is a schema object nested in a property.
func inner[T any](t *testing.T, v any) T {
	t.Helper()
	b, _ := json.Marshal(v)
	var o T
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	return o
}

// ownFields lists the JSON names of a struct's fields (those of embedded
// structs, except an embedded Status inside TopicStatus, flattened), and
// those always present.
func ownFields(typ reflect.Type) (all, required []string) {
	for f := range typ.Fields() {
		if f.Anonymous {
			if typ != reflect.TypeFor[TopicStatus]() {
				a, r := ownFields(f.Type)
				all, required = append(all, a...), append(required, r...)
			}
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		all = append(all, name)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			required = append(required, name)
		}
	}
	slices.Sort(all)
	slices.Sort(required)
	return all, required
}
