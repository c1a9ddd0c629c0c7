package checkpoint

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// largeMetadata builds a _metadata of at least size bytes from a real one
// (testdata/flink/<dir>/mixed): its first operator — keyed state with an
// incremental RocksDB handle, key-group offsets and channel state — repeated,
// then the marker operator and the rest, as a job of many keyed operators
// would have them.
func largeMetadata(t testing.TB, dir string, size int) ([]byte, memStore) {
	t.Helper()
	base := filepath.Join("testdata", "flink", dir, "mixed")
	meta, err := os.ReadFile(filepath.Join(base, "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseMetadata(MetadataFile, meta)
	if err != nil {
		t.Fatal(err)
	}
	// Find where each operator starts by parsing again, operator by operator.
	d := &decoder{file: MetadataFile, b: meta}
	p := &metaParser{d: d, version: m.version}
	d.off = 8 + 8 // magic, version, checkpoint ID
	for masters := d.count("", 8); masters > 0; masters-- {
		d.i32("")
		d.take(int(d.i32("")), "")
	}
	countAt := d.off
	n := d.count("", 1)
	starts := []int{d.off}
	for i := 0; i < n; i++ {
		p.operator()
		starts = append(starts, d.off)
	}
	if d.err != nil {
		t.Fatal(d.err)
	}
	first := meta[starts[0]:starts[1]]
	copies := size / len(first)
	var b bytes.Buffer
	b.Write(meta[:countAt])
	binary.Write(&b, binary.BigEndian, int32(n+copies))
	for i := 0; i < copies; i++ {
		b.Write(first)
	}
	b.Write(meta[starts[0]:])
	st := memStore{MetadataFile: b.Bytes()}
	st["op-state-1"], _ = os.ReadFile(filepath.Join(base, "op-state-1"))
	st["file:/checkpoints/job/chk-7/op-state-2"], _ = os.ReadFile(filepath.Join(base, "abs", "op-state-2"))
	return b.Bytes(), st
}

func TestLargeMetadata(t *testing.T) {
	meta, st := largeMetadata(t, "flink-2.2.0", 1<<20)
	c, err := Read(context.Background(), st, Selector{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Operators < 100 || len(c.Selected.Subtasks) != 3 {
		t.Errorf("%d operators, %d subtasks", c.Operators, len(c.Selected.Subtasks))
	}
	t.Logf("%d bytes, %d operators", len(meta), c.Operators)
}

// BenchmarkReadLargeMetadata reads a 16 MB _metadata (B9's shape: many
// operators with keyed state, one holding the markers); MB/s is of _metadata.
func BenchmarkReadLargeMetadata(b *testing.B) {
	meta, st := largeMetadata(b, "flink-2.2.0", 16<<20)
	b.SetBytes(int64(len(meta)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := Read(context.Background(), st, Selector{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadRealCheckpoint reads a real job's retained checkpoint
// (testdata/flinkgen: Flink 2.2.0, parallelism 2, all state inline).
func BenchmarkReadRealCheckpoint(b *testing.B) {
	dir := filepath.Join("testdata", "flinkgen", "flink-2.2_hashmap_checkpoint_p2")
	meta, err := os.ReadFile(filepath.Join(dir, "_metadata"))
	if err != nil {
		b.Fatal(err)
	}
	st := memStore{MetadataFile: meta}
	b.SetBytes(int64(len(meta)))
	b.ReportAllocs()
	for range b.N {
		if _, err := Read(context.Background(), st, Selector{OperatorUID: "action-state-markers"}); err != nil {
			b.Fatal(err)
		}
	}
}
