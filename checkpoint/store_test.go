package checkpoint

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path"
	"strings"
)

// dirStore is the test double of Store: files of an fs.FS (os.DirFS of a
// test directory), names relative to its root; an absolute name is looked
// up in abs, which maps it to a file of the same FS.
type dirStore struct {
	fsys  fs.FS
	abs   map[string]string
	opens []string
}

func newDirStore(dir string) *dirStore {
	return &dirStore{fsys: os.DirFS(dir), abs: map[string]string{
		"file:/checkpoints/job/chk-7/op-state-2":   "abs/op-state-2",
		"file:/checkpoints/job/taskowned/merged-0": "abs/merged-0",
	}}
}

func (s *dirStore) Open(_ context.Context, name string) (File, error) {
	s.opens = append(s.opens, name)
	if local, ok := s.abs[name]; ok {
		name = local
	} else if strings.Contains(name, ":") || path.IsAbs(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	b, err := fs.ReadFile(s.fsys, name)
	if err != nil {
		return nil, err
	}
	return memFile{bytes.NewReader(b)}, nil
}

// memStore holds files in memory, for inputs made or damaged by a test.
type memStore map[string][]byte

func (s memStore) Open(_ context.Context, name string) (File, error) {
	b, ok := s[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return memFile{bytes.NewReader(b)}, nil
}

type memFile struct{ *bytes.Reader }

func (memFile) Close() error { return nil }
