// Package flinkgentest hands tests the checkpoints and savepoints that real Flink jobs wrote
// (internal/flinkgen, run by `make test`), with what Flink's State Processor API read from each.
package flinkgentest

import (
	"bytes"
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

// FollowCases are three recovery points one Flink job wrote, with one subtask's markers of
// topic "actions" on 4 partitions: a checkpoint (offsets 1100-1103), a canonical savepoint
// (2100-2103) and a native one (3100-3103), all of one Flink version (2.0, hashmap, p1).
func FollowCases(cases []Case) ([]Case, error) {
	byKind := map[string]Case{}
	for _, c := range cases {
		if c.Backend == "hashmap" && c.Parallelism == 1 && c.FlinkVersion == "2.0.0" && strings.HasSuffix(c.Name, "/p1") {
			byKind[c.Kind] = c
		}
	}
	var out []Case
	for _, k := range []string{"checkpoint", "savepoint-canonical", "savepoint-native"} {
		c, ok := byKind[k]
		if !ok {
			return nil, fmt.Errorf("the generated checkpoints have no Flink 2.0 hashmap p1 %s", k)
		}
		out = append(out, c)
	}
	return out, nil
}

// CopyAs writes the _metadata of a generated recovery point to dir/_metadata with its markers'
// topic name and topic ID replaced by another topic's of the same lengths (Kryo writes an ASCII
// string as its bytes, the last with its high bit set): real Flink bytes, naming a topic the
// test broker holds.
func CopyAs(c Case, dir, topic, topicID string) error {
	b, err := os.ReadFile(filepath.Join(c.Path, "_metadata"))
	if err != nil {
		return err
	}
	if len(c.Operators) == 0 || len(c.Operators[0].Markers) == 0 {
		return fmt.Errorf("%s: no markers to rename", c.Name)
	}
	kryo := func(s string) []byte { k := []byte(s); k[len(k)-1] |= 0x80; return k }
	m := c.Operators[0].Markers[0]
	for _, r := range [][2]string{{m.Topic, topic}, {m.TopicID, topicID}} {
		if len(r[0]) != len(r[1]) || bytes.Count(b, kryo(r[0])) != 1 {
			return fmt.Errorf("%s: cannot replace %q by %q in its _metadata", c.Name, r[0], r[1])
		}
		b = bytes.Replace(b, kryo(r[0]), kryo(r[1]), 1)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "_metadata"), b, 0o644)
}
