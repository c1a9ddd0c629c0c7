package checkpoint

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/errors"
)

// compressedCase is testdata/flink/<dir>/compressed with op-state-1 replaced
// and its declared size patched to match.
func compressedCase(t *testing.T, dir string, state []byte) memStore {
	t.Helper()
	meta, err := os.ReadFile(filepath.Join("testdata", "flink", dir, "compressed", "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	name := append([]byte{0, 10}, "op-state-1"...)
	i := bytes.Index(meta, name)
	if i < 0 {
		t.Fatal("no relative handle op-state-1")
	}
	meta = bytes.Clone(meta)
	binary.BigEndian.PutUint64(meta[i+len(name):], uint64(len(state)))
	return memStore{MetadataFile: meta, "op-state-1": state}
}

// TestReadDamagedCompressedState: in a Snappy-compressed state file, every
// byte from the first element on is covered by a frame header or a CRC-32C:
// flipping any of them is a FormatError naming op-state-1, never a marker of
// other values. (Bytes before it are the serialization proxy's serializer
// snapshots, which kcleanup does not read; uncompressed elements carry no
// checksum, for Flink neither.)
func TestReadDamagedCompressedState(t *testing.T) {
	for _, fd := range flinkDirs {
		state, err := os.ReadFile(filepath.Join("testdata", "flink", fd.dir, "compressed", "op-state-1"))
		if err != nil {
			t.Fatal(err)
		}
		st := compressedCase(t, fd.dir, state)
		m, err := parseMetadata(MetadataFile, st[MetadataFile])
		if err != nil {
			t.Fatal(err)
		}
		first := m.operators[0].subtasks[1].managed.state(StateName).offsets[0]
		if m.operators[0].subtasks[1].index != 1 {
			first = m.operators[0].subtasks[0].managed.state(StateName).offsets[0]
		}
		for i := int(first); i < len(state); i++ {
			damaged := bytes.Clone(state)
			damaged[i] ^= 0x10
			_, err := Read(context.Background(), compressedCase(t, fd.dir, damaged), Selector{})
			var fe *FormatError
			if !errors.As(err, &fe) || fe.File != "op-state-1" {
				t.Fatalf("%s: byte %d flipped: %v, want a FormatError in op-state-1", fd.dir, i, err)
			}
		}
		// Every cut of the file (its declared size following) is refused too.
		for i := 0; i < len(state); i++ {
			_, err := Read(context.Background(), compressedCase(t, fd.dir, state[:i]), Selector{})
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("%s: cut at %d: %v, want ErrFormat", fd.dir, i, err)
			}
		}
	}
}

// TestReadStateFileSizeMismatch: a state file shorter or longer than the
// metadata declares is refused before it is decoded.
func TestReadStateFileSizeMismatch(t *testing.T) {
	dir := filepath.Join("testdata", "flink", "flink-2.2.0", "compressed")
	meta, _ := os.ReadFile(filepath.Join(dir, "_metadata"))
	state, _ := os.ReadFile(filepath.Join(dir, "op-state-1"))
	for _, b := range [][]byte{state[:len(state)-1], append(bytes.Clone(state), 0)} {
		_, err := Read(context.Background(), memStore{MetadataFile: meta, "op-state-1": b}, Selector{})
		var fe *FormatError
		if !errors.As(err, &fe) || fe.File != "op-state-1" {
			t.Errorf("%d bytes for %d: %v, want a FormatError in op-state-1", len(b), len(state), err)
		}
	}
}
