package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
)

// The generator's manifest (internal/flinkgen: real Flink jobs on a
// MiniCluster, read back with Flink's State Processor API).
type flinkgenManifest struct {
	Cases []flinkgenCase `json:"cases"`
}

type flinkgenCase struct {
	Name            string `json:"name"`
	FlinkVersion    string `json:"flinkVersion"`
	Backend         string `json:"backend"`
	Kind            string `json:"kind"`
	Path            string `json:"path"`
	Parallelism     int    `json:"parallelism"`
	MarkerOperators []struct {
		UID     string `json:"uid"`
		UIDHash string `json:"uidHash"`
		// StateNames are the operator state names Flink's metadata lists
		// for the operator (optional): they tell an operator without
		// recoveryMarker from an empty one, which Flink reads alike.
		StateNames []string `json:"stateNames"`
	} `json:"markerOperators"`
	MetadataVersion int                         `json:"metadataVersion"`
	CheckpointID    int64                       `json:"checkpointId"`
	Expected        *flinkgenExpected           `json:"expected"`
	ExpectedByUID   map[string]flinkgenExpected `json:"expectedByUid"`
	Notes           string                      `json:"notes"`
}

type flinkgenExpected struct {
	Markers []struct {
		SchemaVersion int32            `json:"schemaVersion"`
		Topic         string           `json:"topic"`
		TopicID       string           `json:"topicId"`
		Offsets       map[string]int64 `json:"offsets"`
	} `json:"markers"`
	Legacy []map[string]int64 `json:"legacy"`
}

// TestFlinkgenCases reads every case the generator wrote and compares the
// elements with what Flink's State Processor API read from the same path,
// as multisets. It runs on the directory named by KCLEANUP_FLINKGEN_DIR.
func TestFlinkgenCases(t *testing.T) {
	dir := os.Getenv("KCLEANUP_FLINKGEN_DIR")
	if dir == "" {
		const how = "KCLEANUP_FLINKGEN_DIR is unset: run KCLEANUP_FLINKGEN_DIR=$(internal/flinkgen/generate.sh | tail -n 1) go test ./checkpoint -run TestFlinkgenCases (make test sets it)"
		if os.Getenv("CI") == "true" {
			t.Fatal(how)
		}
		t.Skip(how)
	}
	checkFlinkgen(t, dir)
}

// TestFlinkgenSamples runs the same comparison on a few cases of the
// generator's first output kept in testdata/flinkgen (their _metadata, all
// state inline; the manifest entries as the generator wrote them, with
// the State Processor API's reads), so it runs everywhere.
func TestFlinkgenSamples(t *testing.T) {
	checkFlinkgen(t, filepath.Join("testdata", "flinkgen"))
}

func checkFlinkgen(t *testing.T, dir string) {
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m flinkgenManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(m.Cases) == 0 {
		t.Fatal("manifest.json lists no case")
	}
	for _, c := range m.Cases {
		t.Run(c.Name, func(t *testing.T) {
			st := &genStore{root: dir, dir: filepath.Join(dir, c.Path)}
			wantLine := Flink2
			if strings.HasPrefix(c.FlinkVersion, "1.") {
				wantLine = Flink1
			}
			expected := c.ExpectedByUID
			if c.Expected != nil {
				if len(c.MarkerOperators) != 1 {
					t.Fatalf("expected is for one marker operator, the case has %d", len(c.MarkerOperators))
				}
				expected = map[string]flinkgenExpected{c.MarkerOperators[0].UID: *c.Expected}
			}
			for _, mo := range c.MarkerOperators {
				if OperatorID(mo.UID) != mo.UIDHash {
					t.Errorf("OperatorID(%q) = %s, the generator says %s", mo.UID, OperatorID(mo.UID), mo.UIDHash)
				}
				want, ok := expected[mo.UID]
				if !ok {
					t.Fatalf("no expected elements for uid %q", mo.UID)
				}
				sels := []Selector{{OperatorUID: mo.UID}, {OperatorUIDHash: mo.UIDHash}}
				if len(c.MarkerOperators) == 1 {
					sels = append(sels, Selector{})
				}
				for _, sel := range sels {
					cp, err := Read(context.Background(), st, sel)
					if len(want.Markers) == 0 && len(want.Legacy) == 0 {
						// Flink reads no element: kcleanup must say why.
						wantErr := ErrEmptyRecoveryState
						if mo.StateNames != nil && !slices.Contains(mo.StateNames, StateName) {
							wantErr = ErrNoRecoveryState
							if sel == (Selector{}) {
								wantErr = ErrNoMarkerOperator
							}
						}
						if !errors.Is(err, wantErr) {
							t.Errorf("%+v: %v, want %v (Flink reads no element; its state names: %v)", sel, err, wantErr, mo.StateNames)
						}
						continue
					}
					if err != nil {
						t.Fatalf("%+v: %v", sel, err)
					}
					if c.MetadataVersion != 0 && cp.Version != c.MetadataVersion || c.CheckpointID != 0 && cp.ID != c.CheckpointID {
						t.Errorf("metadata version %d, checkpoint ID %d; Flink read %d and %d", cp.Version, cp.ID, c.MetadataVersion, c.CheckpointID)
					}
					if cp.Line != wantLine {
						t.Errorf("line %v (metadata version %d) for Flink %s", cp.Line, cp.Version, c.FlinkVersion)
					}
					op := cp.Selected
					if op.UIDHash != mo.UIDHash || (cp.Version >= 5 && op.UID != mo.UID) {
						t.Errorf("selected uid %q hash %s, want %q %s", op.UID, op.UIDHash, mo.UID, mo.UIDHash)
					}
					if c.Parallelism != 0 && op.Parallelism != c.Parallelism {
						t.Errorf("parallelism %d, want %d", op.Parallelism, c.Parallelism)
					}
					got, gotLegacy := elementsOf(op)
					wantM, wantL := expectedOf(t, want)
					if !slices.Equal(got, wantM) {
						t.Errorf("markers (as multisets)\n got %v\nwant %v", got, wantM)
					}
					if !slices.Equal(gotLegacy, wantL) {
						t.Errorf("legacy markers (as multisets)\n got %v\nwant %v", gotLegacy, wantL)
					}
				}
			}
		})
	}
}

func offsetsKey(o events.Offsets) string {
	keys := make([]int32, 0, len(o))
	for p := range o {
		keys = append(keys, p)
	}
	slices.Sort(keys)
	var b bytes.Buffer
	for _, p := range keys {
		fmt.Fprintf(&b, "%d:%d,", p, o[p])
	}
	return b.String()
}

func elementsOf(op *Operator) (markers, legacy []string) {
	for _, s := range op.Subtasks {
		for _, m := range s.Markers {
			markers = append(markers, fmt.Sprintf("%d|%q|%q|%s", m.SchemaVersion, m.Topic, m.TopicID, offsetsKey(m.Offsets)))
		}
		for _, l := range s.Legacy {
			legacy = append(legacy, offsetsKey(l))
		}
	}
	slices.Sort(markers)
	slices.Sort(legacy)
	return markers, legacy
}

func expectedOf(t *testing.T, e flinkgenExpected) (markers, legacy []string) {
	t.Helper()
	conv := func(m map[string]int64) events.Offsets {
		o := events.Offsets{}
		for k, v := range m {
			p, err := strconv.ParseInt(k, 10, 32)
			if err != nil {
				t.Fatalf("expected partition %q: %v", k, err)
			}
			o[int32(p)] = v
		}
		return o
	}
	for _, m := range e.Markers {
		markers = append(markers, fmt.Sprintf("%d|%q|%q|%s", m.SchemaVersion, m.Topic, m.TopicID, offsetsKey(conv(m.Offsets))))
	}
	for _, l := range e.Legacy {
		legacy = append(legacy, offsetsKey(conv(l)))
	}
	slices.Sort(markers)
	slices.Sort(legacy)
	return markers, legacy
}

// genStore opens a generated case's files: names relative to the case
// directory, and absolute ones (file handles of retained checkpoints,
// "file:/…" where the generator ran) by the longest tail of the path that
// exists under the generator's output directory, which may have been moved
// since (it is written to a temporary directory, then renamed).
type genStore struct{ root, dir string }

func (s *genStore) Open(_ context.Context, name string) (File, error) {
	local := filepath.Join(s.dir, filepath.FromSlash(name))
	if rest, ok := strings.CutPrefix(name, "file:"); ok || filepath.IsAbs(name) {
		if !ok {
			rest = name
		}
		rest = strings.TrimPrefix(rest, "//")
		local = ""
		parts := strings.Split(strings.Trim(rest, "/"), "/")
		for i := range parts {
			cand := filepath.Join(append([]string{s.root}, parts[i:]...)...)
			if _, err := os.Stat(cand); err == nil {
				local = cand
				break
			}
		}
		if local == "" {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
	}
	b, err := os.ReadFile(local)
	if err != nil {
		return nil, err
	}
	return memFile{bytes.NewReader(b)}, nil
}
