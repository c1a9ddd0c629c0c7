package checkpoint

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
)

const tid = "x7Jq0L9cRZ2Y5wqv3lNnAg"

// flinkDirs are the directories of testdata/flink, with the metadata version
// and line each must report.
var flinkDirs = []struct {
	dir     string
	version int
	line    Line
}{
	{"flink-1.20.3", 4, Flink1},
	{"flink-2.2.0-v5", 5, Flink2},
	{"flink-2.2.0", 6, Flink2},
}

func readCase(t *testing.T, dir, name string, sel Selector) (*Checkpoint, error) {
	t.Helper()
	return Read(context.Background(), newDirStore(filepath.Join("testdata", "flink", dir, name)), sel)
}

func marker(topic string, offsets events.Offsets) RecoveryMarker {
	return RecoveryMarker{SchemaVersion: 1, Topic: topic, TopicID: tid, Offsets: offsets}
}

// TestReadMixed: the marker operator between operators holding every other
// handle kind; its three subtasks' state inline, in a relative file and in an
// absolute file.
func TestReadMixed(t *testing.T) {
	for _, fd := range flinkDirs {
		t.Run(fd.dir, func(t *testing.T) {
			for _, sel := range []Selector{{}, {OperatorUID: "action-state-markers"}, {OperatorUIDHash: "ADA96E354475F5C9E615602FD4EF59C9"}} {
				c, err := readCase(t, fd.dir, "mixed", sel)
				if err != nil {
					t.Fatalf("%+v: %v", sel, err)
				}
				if c.ID != 7 || c.Version != fd.version || c.Line != fd.line || c.Operators != 4 || len(c.Holders) != 1 {
					t.Fatalf("got ID %d version %d line %v operators %d holders %d", c.ID, c.Version, c.Line, c.Operators, len(c.Holders))
				}
				op := c.Selected
				wantUID := ""
				if fd.version >= 5 {
					wantUID = "action-state-markers"
				}
				if op.UID != wantUID || op.UIDHash != "ada96e354475f5c9e615602fd4ef59c9" || op.Parallelism != 3 || op.MaxParallelism != 128 {
					t.Errorf("operator %+v", op)
				}
				want := []Subtask{
					{Index: 0, Markers: []RecoveryMarker{marker("actions", events.Offsets{0: 100, 1: 120})}},
					{Index: 1, Markers: []RecoveryMarker{marker("actions", events.Offsets{0: 90, 1: 130})}},
					{Index: 2, Markers: []RecoveryMarker{marker("actions", events.Offsets{0: 95, 1: 125})}},
				}
				if !reflect.DeepEqual(op.Subtasks, want) {
					t.Errorf("subtasks\n got %+v\nwant %+v", op.Subtasks, want)
				}
				ms, err := c.Markers()
				if err != nil {
					t.Fatal(err)
				}
				plan, err := events.BuildPlan("chk-7", markersOf(ms))
				if err != nil {
					t.Fatal(err)
				}
				if plan.Offsets[0] != 90 || plan.Offsets[1] != 120 {
					t.Errorf("plan offsets %v, want the per-partition minimum {0:90 1:120}", plan.Offsets)
				}
			}
		})
	}
}

func markersOf(ms []SubtaskMarker) []events.Marker {
	var out []events.Marker
	for _, m := range ms {
		out = append(out, m.Marker)
	}
	return out
}

// TestReadCompressed: Snappy-framed operator state (offsets count compressed
// bytes), a topic outside ASCII and the BMP.
func TestReadCompressed(t *testing.T) {
	for _, fd := range flinkDirs {
		t.Run(fd.dir, func(t *testing.T) {
			c, err := readCase(t, fd.dir, "compressed", Selector{})
			if err != nil {
				t.Fatal(err)
			}
			const topic = "actions-🦀-été"
			var want []Subtask
			var first []RecoveryMarker
			for i := int64(0); i < 3; i++ {
				first = append(first, marker(topic, events.Offsets{0: 100 + i, 1: 200, 2: 1 << 40}))
			}
			want = append(want, Subtask{Index: 0, Markers: first}, Subtask{Index: 1, Markers: []RecoveryMarker{marker(topic, events.Offsets{0: 99, 1: 201, 2: 7})}})
			if !reflect.DeepEqual(c.Selected.Subtasks, want) {
				t.Errorf("subtasks\n got %+v\nwant %+v", c.Selected.Subtasks, want)
			}
			// The topic is not a legal Kafka topic name: the marker rules refuse it, naming it in UTF-8.
			_, err = c.Markers()
			if !errors.Is(err, ErrInvalidMarker) || !strings.Contains(err.Error(), topic) {
				t.Errorf("Markers: %v, want ErrInvalidMarker naming %q", err, topic)
			}
		})
	}
}

// TestReadSelection: several holders without a selector are listed; an
// operator not in the checkpoint, one without the state, and an empty state
// are three different errors.
func TestReadSelection(t *testing.T) {
	for _, fd := range flinkDirs {
		t.Run(fd.dir, func(t *testing.T) {
			_, err := readCase(t, fd.dir, "two-holders", Selector{})
			if !errors.Is(err, ErrAmbiguous) {
				t.Fatalf("no selector: %v, want ErrAmbiguous", err)
			}
			msg := err.Error() + errors.FlattenHints(err)
			for _, s := range []string{OperatorID("markers-a"), OperatorID("markers-b"), "parallelism 1", "parallelism 2", `"topic-a"`, `"topic-b"`, "--operator-uid", "--operator-uid-hash"} {
				if !strings.Contains(msg, s) {
					t.Errorf("ambiguity error lacks %q: %s", s, msg)
				}
			}
			c, err := readCase(t, fd.dir, "two-holders", Selector{OperatorUID: "markers-b"})
			if err != nil {
				t.Fatal(err)
			}
			if c.Selected.UIDHash != OperatorID("markers-b") || len(c.Selected.Subtasks) != 2 || c.Selected.Subtasks[1].Markers[0].Offsets[0] != 3 {
				t.Errorf("selected %+v", c.Selected)
			}
			c, err = readCase(t, fd.dir, "two-holders", Selector{OperatorUID: "markers-a"})
			if err != nil || c.Selected != &c.Holders[0] {
				t.Errorf("markers-a: %v; Selected is not Holders[0]", err)
			}
			_, err = readCase(t, fd.dir, "two-holders", Selector{OperatorUID: "nope"})
			if !errors.Is(err, ErrOperatorNotFound) || errors.Is(err, ErrNoRecoveryState) {
				t.Errorf("unknown uid: %v, want ErrOperatorNotFound only", err)
			}
			_, err = readCase(t, fd.dir, "two-holders", Selector{OperatorUID: "plain"})
			if !errors.Is(err, ErrNoRecoveryState) || errors.Is(err, ErrOperatorNotFound) {
				t.Errorf("operator without the state: %v, want ErrNoRecoveryState only", err)
			}
			_, err = readCase(t, fd.dir, "empty", Selector{OperatorUID: "action-state-markers"})
			if !errors.Is(err, ErrEmptyRecoveryState) || errors.Is(err, ErrNoRecoveryState) {
				t.Errorf("empty state: %v, want ErrEmptyRecoveryState only", err)
			}
			_, err = readCase(t, fd.dir, "empty", Selector{})
			if !errors.Is(err, ErrEmptyRecoveryState) {
				t.Errorf("empty state, no selector: %v, want ErrEmptyRecoveryState", err)
			}
			_, err = readCase(t, fd.dir, "mixed", Selector{OperatorUIDHash: "not-hex"})
			if err == nil {
				t.Errorf("a uid hash that is not hex: no error")
			}
		})
	}
}

// TestReadLegacy: a legacy Map<Integer, Long> element is reported, and
// refused by the marker rules with the seed's reason.
func TestReadLegacy(t *testing.T) {
	for _, fd := range flinkDirs {
		t.Run(fd.dir, func(t *testing.T) {
			c, err := readCase(t, fd.dir, "legacy", Selector{})
			if err != nil {
				t.Fatal(err)
			}
			s := c.Selected.Subtasks[0]
			if !reflect.DeepEqual(s.Legacy, []events.Offsets{{0: 100, 1: 5}}) || len(s.Markers) != 1 {
				t.Errorf("subtask %+v", s)
			}
			_, err = c.Markers()
			if !errors.Is(err, ErrLegacyMarker) || !strings.Contains(err.Error(), "does not identify the physical topic") {
				t.Errorf("Markers: %v, want ErrLegacyMarker", err)
			}
		})
	}
}

// TestReadMissingStateFile names the file the checkpoint names.
func TestReadMissingStateFile(t *testing.T) {
	for _, fd := range flinkDirs {
		st := newDirStore(filepath.Join("testdata", "flink", fd.dir, "mixed"))
		delete(st.abs, "file:/checkpoints/job/chk-7/op-state-2")
		_, err := Read(context.Background(), st, Selector{})
		if !errors.Is(err, ErrStateFile) || !strings.Contains(err.Error(), "file:/checkpoints/job/chk-7/op-state-2") || !strings.Contains(err.Error(), "subtask 2") {
			t.Errorf("%s: %v, want ErrStateFile naming the file and subtask 2", fd.dir, err)
		}
	}
}

// TestReadWrongLine: the metadata's version decides the Kryo; a state file
// of the other line (swapped in, its declared size patched to match) is an
// error naming the file, the element and the line, never plausible markers.
func TestReadWrongLine(t *testing.T) {
	for _, tc := range []struct{ meta, state string }{{"flink-1.20.3", "flink-2.2.0"}, {"flink-2.2.0", "flink-1.20.3"}} {
		dir := filepath.Join("testdata", "flink", tc.meta, "mixed")
		meta, _ := os.ReadFile(filepath.Join(dir, "_metadata"))
		abs, _ := os.ReadFile(filepath.Join(dir, "abs", "op-state-2"))
		swapped, _ := os.ReadFile(filepath.Join("testdata", "flink", tc.state, "mixed", "op-state-1"))
		// A relative file handle: writeUTF("op-state-1"), then the size as a long.
		name := append([]byte{0, 10}, "op-state-1"...)
		i := bytes.Index(meta, name)
		if i < 0 {
			t.Fatal("no relative handle op-state-1 in", dir)
		}
		meta = bytes.Clone(meta)
		binary.BigEndian.PutUint64(meta[i+len(name):], uint64(len(swapped)))
		st := memStore{"_metadata": meta, "file:/checkpoints/job/chk-7/op-state-2": abs, "op-state-1": swapped}
		_, err := Read(context.Background(), st, Selector{})
		var fe *FormatError
		if !errors.Is(err, ErrFormat) || !errors.As(err, &fe) || fe.File != "op-state-1" || !strings.Contains(err.Error(), "element 0 of recoveryMarker") {
			t.Errorf("metadata of %s, state of %s: %v, want a FormatError in op-state-1's element 0", tc.meta, tc.state, err)
		}
		t.Log(err)
	}
}

// TestReadTruncatedMetadata: every prefix of a real _metadata is refused
// with a FormatError naming _metadata and an offset within the prefix.
func TestReadTruncatedMetadata(t *testing.T) {
	for _, fd := range flinkDirs {
		meta, err := os.ReadFile(filepath.Join("testdata", "flink", fd.dir, "mixed", "_metadata"))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(meta); i++ {
			_, err := Read(context.Background(), memStore{"_metadata": meta[:i]}, Selector{})
			var fe *FormatError
			if !errors.As(err, &fe) || !errors.Is(err, ErrFormat) {
				t.Fatalf("%s cut at %d: %v, want a FormatError", fd.dir, i, err)
			}
			if fe.File != "_metadata" || fe.Offset < 0 || fe.Offset > int64(i) {
				t.Fatalf("%s cut at %d: error at %s byte %d", fd.dir, i, fe.File, fe.Offset)
			}
		}
	}
}

func TestReadForeignFiles(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":          {},
		"json":           []byte(`{"checkpoint": 1}`),
		"newer version":  {0x49, 0x60, 0x67, 0x2d, 0, 0, 0, 99},
		"version 2":      {0x49, 0x60, 0x67, 0x2d, 0, 0, 0, 2},
		"huge op count":  append([]byte{0x49, 0x60, 0x67, 0x2d, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}, 0x7f, 0xff, 0xff, 0xff),
		"neg checkpoint": {0x49, 0x60, 0x67, 0x2d, 0, 0, 0, 6, 0xff, 0, 0, 0, 0, 0, 0, 1},
	} {
		_, err := Read(context.Background(), memStore{"_metadata": b}, Selector{})
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Errorf("%s: %v, want a FormatError", name, err)
			continue
		}
		t.Logf("%s: %v", name, err)
	}
	_, err := Read(context.Background(), memStore{}, Selector{})
	if !errors.Is(err, ErrStateFile) {
		t.Errorf("no _metadata: %v, want ErrStateFile", err)
	}
}

// TestReadOtherHolderUnreadable: with a selector, another holder whose state
// is damaged is reported, not fatal; without one, it is fatal.
func TestReadOtherHolderUnreadable(t *testing.T) {
	for _, fd := range flinkDirs {
		meta, _ := os.ReadFile(filepath.Join("testdata", "flink", fd.dir, "two-holders", "_metadata"))
		meta = bytes.Clone(meta)
		i := bytes.Index(meta, []byte("topic-\xe1")) // Kryo ASCII: the last byte marked
		meta[i-1] = 0x7f                             // the topic's reference marker: no such object
		st := memStore{MetadataFile: meta}
		c, err := Read(context.Background(), st, Selector{OperatorUID: "markers-b"})
		if err != nil {
			t.Fatalf("%s: %v", fd.dir, err)
		}
		if len(c.Holders) != 2 || c.Holders[0].Err == nil || c.Holders[1].Err != nil || c.Selected.UIDHash != OperatorID("markers-b") {
			t.Errorf("%s: holders %+v", fd.dir, c.Holders)
		}
		if _, err := Read(context.Background(), st, Selector{}); !errors.Is(err, ErrFormat) {
			t.Errorf("%s without a selector: %v, want ErrFormat", fd.dir, err)
		}
	}
}
