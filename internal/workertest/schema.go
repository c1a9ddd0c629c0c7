package workertest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/kcleanup/kcleanup/internal/repo"
)

// ValidateWorkerStatus checks a /v1/status body against
// docs/schema/worker-status.schema.json (with the status schema it refers to).
func ValidateWorkerStatus(t testing.TB, body []byte) {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	var id string
	for _, name := range []string{"status.schema.json", "worker-status.schema.json"} {
		data, err := os.ReadFile(filepath.Join(root, "docs", "schema", name))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		id, _ = doc.(map[string]any)["$id"].(string)
		if err := c.AddResource(id, doc); err != nil {
			t.Fatal(err)
		}
	}
	s, err := c.Compile(id)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(inst); err != nil {
		t.Errorf("/v1/status does not match worker-status.schema.json: %v\n%s", err, body)
	}
}
