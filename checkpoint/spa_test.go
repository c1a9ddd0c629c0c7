package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
)

// TestReadMatchesStateProcessorAPI compares what Read finds with what
// Flink's own State Processor API (SavepointReader.readUnionState of
// flink-state-processor-api 1.20.0 and 2.2.0) read from the same directory
// for the same uid: testdata/flink/<dir>/<case>/spa-<uid>.txt, one element a
// line, each as the Java program printed it (a marker's fields, or a legacy
// map, maps as Java's TreeMap prints them). Flink reads no element both for
// an operator without the state and for an empty state; kcleanup tells the
// two apart.
func TestReadMatchesStateProcessorAPI(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "flink", "*", "*", "spa-*.txt"))
	if err != nil || len(files) < 18 {
		t.Fatalf("%d files of the State Processor API's reads: %v", len(files), err)
	}
	for _, f := range files {
		dir := filepath.Dir(f)
		uid := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "spa-"), ".txt")
		t.Run(strings.TrimPrefix(dir, filepath.Join("testdata", "flink")+string(filepath.Separator))+"/"+uid, func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Split(strings.TrimSpace(string(raw)), "\n")
			if want[0] == "" {
				want = nil
			}
			slices.Sort(want)
			c, err := readCase(t, filepath.Base(filepath.Dir(dir)), filepath.Base(dir), Selector{OperatorUID: uid})
			if len(want) == 0 {
				if !errors.Is(err, ErrEmptyRecoveryState) && !errors.Is(err, ErrNoRecoveryState) {
					t.Fatalf("Flink read no element; Read: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range c.Selected.Subtasks {
				for _, m := range s.Markers {
					got = append(got, fmt.Sprintf("marker %d %s %s %s", m.SchemaVersion, m.Topic, m.TopicID, javaMap(m.Offsets)))
				}
				for _, l := range s.Legacy {
					got = append(got, "legacy "+javaMap(l))
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("elements\n got %q\nwant %q (Flink's State Processor API)", got, want)
			}
		})
	}
}

// javaMap prints offsets as Java's TreeMap<Integer, Long>.toString does.
func javaMap(o events.Offsets) string {
	keys := make([]int32, 0, len(o))
	for p := range o {
		keys = append(keys, p)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, p := range keys {
		parts[i] = fmt.Sprintf("%d=%d", p, o[p])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
