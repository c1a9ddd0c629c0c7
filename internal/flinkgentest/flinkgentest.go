// Package flinkgentest hands tests the checkpoints and savepoints that real Flink jobs wrote
// (internal/flinkgen, run by `make test`), with what Flink's State Processor API read from each.
package flinkgentest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	out, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Load reads the manifest of dir, the generator's output (internal/flinkgen/generate.sh prints
// it), for a program that is not a test (kcbench).
func Load(dir string) ([]Case, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
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
		return nil, fmt.Errorf("%s/manifest.json: %w", dir, err)
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
						return nil, fmt.Errorf("%s/manifest.json: legacy partition %q: %w", dir, p, err)
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
		return nil, fmt.Errorf("%s/manifest.json lists no case", dir)
	}
	return out, nil
}

// JobID is the job directory LayOutCheckpoints writes its checkpoints under.
const JobID = "c799859f5eeb76d63173c73f0df79c67"

// FollowMetadata is the _metadata a watched location of many checkpoints is laid out from: a
// real Flink 2.0 checkpoint's (hashmap, parallelism 1), the smallest kind a job writes.
func FollowMetadata(cases []Case) ([]byte, error) {
	for _, c := range cases {
		if c.Kind == "checkpoint" && c.Backend == "hashmap" && c.FlinkVersion == "2.0.0" && strings.HasSuffix(c.Name, "/p1") {
			return os.ReadFile(filepath.Join(c.Path, "_metadata"))
		}
	}
	return nil, fmt.Errorf("no Flink 2.0 hashmap p1 checkpoint among the %d generated cases", len(cases))
}

// LayOutCheckpoints lays out n completed checkpoints as Flink does, <base>/<JobID>/chk-1 … chk-n,
// each holding metadata as its _metadata: the watched location of a retention policy (the
// worker's BenchmarkFollowRound10000 and kcbench's B10 measure a round over it).
func LayOutCheckpoints(base string, n int, metadata []byte) error {
	job := filepath.Join(base, JobID)
	for i := 1; i <= n; i++ {
		dir := filepath.Join(job, fmt.Sprintf("chk-%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "_metadata"), metadata, 0o644); err != nil {
			return err
		}
	}
	return nil
}
