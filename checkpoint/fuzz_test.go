package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/errors"
)

// FuzzReadMetadata feeds Read a _metadata of any bytes beside the state files
// of testdata/flink/*/mixed, seeded with the real ones: it must return a
// checkpoint or an error of one of Read's classes, never panic, and never
// allocate past the input's size (go test -fuzz would run out of memory).
func FuzzReadMetadata(f *testing.F) {
	// The state files of each directory's cases, by the names the metadata uses.
	stores := make([]memStore, len(flinkDirs))
	for i, fd := range flinkDirs {
		stores[i] = memStore{}
		for _, c := range []string{"mixed", "compressed", "two-holders", "empty", "legacy", "file-merging"} {
			dir := filepath.Join("testdata", "flink", fd.dir, c)
			meta, err := os.ReadFile(filepath.Join(dir, "_metadata"))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(meta, uint8(i))
			if b, err := os.ReadFile(filepath.Join(dir, "op-state-1")); err == nil {
				stores[i][c+"/op-state-1"] = b
			}
			if b, err := os.ReadFile(filepath.Join(dir, "abs", "op-state-2")); err == nil {
				stores[i]["file:/checkpoints/job/chk-7/op-state-2"] = b
			}
			if b, err := os.ReadFile(filepath.Join(dir, "abs", "merged-0")); err == nil {
				stores[i]["file:/checkpoints/job/taskowned/merged-0"] = b
			}
		}
	}
	// Real jobs' checkpoints (testdata/flinkgen): their state is inline.
	samples, _ := filepath.Glob(filepath.Join("testdata", "flinkgen", "*", "_metadata"))
	for _, s := range samples {
		meta, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(meta, uint8(0))
	}
	f.Fuzz(func(t *testing.T, meta []byte, dir uint8) {
		st := stores[int(dir)%len(stores)]
		for _, c := range []string{"mixed", "compressed"} {
			files := memStore{"_metadata": meta, "op-state-1": st[c+"/op-state-1"], "file:/checkpoints/job/chk-7/op-state-2": st["file:/checkpoints/job/chk-7/op-state-2"],
				"file:/checkpoints/job/taskowned/merged-0": st["file:/checkpoints/job/taskowned/merged-0"]}
			for _, sel := range []Selector{{}, {OperatorUID: "action-state-markers"}} {
				c, err := Read(context.Background(), files, sel)
				if err == nil {
					if c.Selected == nil {
						t.Fatal("no error and no operator selected")
					}
					c.Markers()
					continue
				}
				known := false
				for _, class := range []error{ErrFormat, ErrOperatorNotFound, ErrNoRecoveryState, ErrEmptyRecoveryState, ErrAmbiguous, ErrNoMarkerOperator, ErrStateFile} {
					known = known || errors.Is(err, class)
				}
				if !known {
					t.Fatalf("error of no class: %v", err)
				}
			}
		}
	})
}

// FuzzDecodeElement feeds the Kryo decoder any bytes for both lines, seeded
// with the elements Flink wrote: a FormatError or an element, never a panic,
// and never more bytes taken than given.
func FuzzDecodeElement(f *testing.F) {
	for dir := range kryoLines {
		for name := range kryoExpected {
			f.Add(readKryo(f, dir, name), dir == "flink-2.2.0")
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, kryo5 bool) {
		line := Flink1
		if kryo5 {
			line = Flink2
		}
		e, n, err := DecodeElement(b, line)
		if n < 0 || n > len(b) {
			t.Fatalf("took %d of %d bytes", n, len(b))
		}
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("not a FormatError: %v", err)
			}
			return
		}
		if (e.Marker == nil) == (e.Legacy == nil) {
			t.Fatalf("element %+v: want exactly one of marker and legacy", e)
		}
	})
}
