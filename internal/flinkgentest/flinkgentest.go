// Package flinkgentest hands tests the checkpoints and savepoints that real Flink jobs wrote
// (internal/flinkgen, run by `make test`), with what Flink's State Processor API read from each.
package flinkgentest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kcleanup/kcleanup/events"
)

// Env names the generator's output directory; `make test` sets it.
const Env = "KCLEANUP_FLINKGEN_DIR"

// Case is one checkpoint or savepoint of the manifest.
type Case struct {
	Name, FlinkVersion, Backend, Kind string
	// Path is the checkpoint's (chk-N) or savepoint's directory, absolute.
	Path        string
	Parallelism int
	Operators   []Operator
}

// Operator is one operator holding recoveryMarker, with the elements Flink read from it.
type Operator struct {
	UID, UIDHash string
	Markers      []events.Marker // as Flink's State Processor API read them (a multiset)
	Legacy       []events.Offsets
}

// Cases reads the manifest of the directory Env names. Unset, the test is skipped saying how
// to run it, except under CI=true, where it fails: CI never passes without real checkpoints.
func Cases(t testing.TB) []Case {
	t.Helper()
	dir := os.Getenv(Env)
	if dir == "" {
		const how = Env + " is unset: run " + Env + "=$(internal/flinkgen/generate.sh | tail -n 1) go test ... (make test sets it)"
		if os.Getenv("CI") == "true" {
			t.Fatal(how)
		}
		t.Skip(how)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	type expected struct {
		Markers []events.Marker `json:"markers"`
		Legacy  []map[string]int64
	}
	var m struct {
		Cases []struct {
			Name, FlinkVersion, Backend, Kind, Path string
			Parallelism                             int
			MarkerOperators                         []struct{ UID, UIDHash string }
			Expected                                *expected
			ExpectedByUID                           map[string]expected
		}
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s/manifest.json: %v", dir, err)
	}
	var out []Case
	for _, c := range m.Cases {
		k := Case{Name: c.Name, FlinkVersion: c.FlinkVersion, Backend: c.Backend, Kind: c.Kind,
			Path: filepath.Join(dir, c.Path), Parallelism: c.Parallelism}
		for _, mo := range c.MarkerOperators {
			e := c.ExpectedByUID[mo.UID]
			if c.Expected != nil && len(c.MarkerOperators) == 1 {
				e = *c.Expected
			}
			op := Operator{UID: mo.UID, UIDHash: mo.UIDHash, Markers: e.Markers}
			for _, l := range e.Legacy {
				o := events.Offsets{}
				for p, v := range l {
					var n int32
					if err := json.Unmarshal([]byte(p), &n); err != nil {
						t.Fatalf("legacy partition %q: %v", p, err)
					}
					o[n] = v
				}
				op.Legacy = append(op.Legacy, o)
			}
			k.Operators = append(k.Operators, op)
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		t.Fatalf("%s/manifest.json lists no case", dir)
	}
	return out
}
