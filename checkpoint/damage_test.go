package checkpoint

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
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

// hugeFile is a real state file that claims to be 1 TiB long (zeros after
// its real bytes), as a crafted checkpoint could make a state file appear.
type hugeFile struct{ real []byte }

func (f hugeFile) Size() int64  { return 1 << 40 }
func (f hugeFile) Close() error { return nil }
func (f hugeFile) ReadAt(p []byte, off int64) (int, error) {
	for i := range p {
		if int64(i)+off < int64(len(f.real)) {
			p[i] = f.real[int64(i)+off]
		} else {
			p[i] = 0
		}
	}
	return len(p), nil
}

type hugeStore struct {
	memStore
	huge string
}

func (s hugeStore) Open(ctx context.Context, name string) (File, error) {
	if name == s.huge {
		return hugeFile{real: s.memStore[name]}, nil
	}
	return s.memStore.Open(ctx, name)
}

// TestReadHugeStateFile: a state file whose last element would run to the
// end of 1 TiB is refused before anything of that size is read or allocated.
func TestReadHugeStateFile(t *testing.T) {
	dir := filepath.Join("testdata", "flink", "flink-2.2.0", "mixed")
	meta, _ := os.ReadFile(filepath.Join(dir, "_metadata"))
	state, _ := os.ReadFile(filepath.Join(dir, "op-state-1"))
	abs, _ := os.ReadFile(filepath.Join(dir, "abs", "op-state-2"))
	name := append([]byte{0, 10}, "op-state-1"...)
	i := bytes.Index(meta, name)
	meta = bytes.Clone(meta)
	binary.BigEndian.PutUint64(meta[i+len(name):], 1<<40)
	st := hugeStore{memStore{MetadataFile: meta, "op-state-1": state, "file:/checkpoints/job/chk-7/op-state-2": abs}, "op-state-1"}
	_, err := Read(context.Background(), st, Selector{})
	var fe *FormatError
	if !errors.As(err, &fe) || fe.File != "op-state-1" || !strings.Contains(fe.Expected, "at most") {
		t.Fatalf("%v, want a FormatError in op-state-1 refusing the element's size", err)
	}
	t.Log(err)
}

// TestReadUnknownHandleKind: a keyed state handle kind this reader does not
// know (here: a real key-group handle's kind byte changed to 42) is refused
// naming the byte, never skipped by a guess.
func TestReadUnknownHandleKind(t *testing.T) {
	for _, fd := range flinkDirs {
		dir := filepath.Join("testdata", "flink", fd.dir, "mixed")
		meta, _ := os.ReadFile(filepath.Join(dir, "_metadata"))
		// KEY_GROUPS_HANDLE_V2 (12), first key group 0, 64 key groups.
		i := bytes.Index(meta, []byte{12, 0, 0, 0, 0, 0, 0, 0, 64})
		if i < 0 {
			t.Fatalf("%s: no key-group handle found", fd.dir)
		}
		meta = bytes.Clone(meta)
		meta[i] = 42
		_, err := Read(context.Background(), newDirStoreWith(dir, MetadataFile, meta), Selector{})
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Offset != int64(i) || !strings.Contains(fe.Expected, "found 42") || !strings.Contains(fe.Expected, "does not know") {
			t.Errorf("%s: %v, want a FormatError at byte %d naming kind 42", fd.dir, err, i)
		}
	}
}

// newDirStoreWith is newDirStore with one file replaced.
func newDirStoreWith(dir, name string, b []byte) Store {
	return overlayStore{newDirStore(dir), name, b}
}

type overlayStore struct {
	*dirStore
	name string
	b    []byte
}

func (s overlayStore) Open(ctx context.Context, name string) (File, error) {
	if name == s.name {
		return memFile{bytes.NewReader(s.b)}, nil
	}
	return s.dirStore.Open(ctx, name)
}
