package checkpoint

import (
	"context"
	"io"
)

// File is one file of a checkpoint, read at offsets (a remote store reads ranges, never the
// whole object).
type File interface {
	io.ReaderAt
	Size() int64
	Close() error
}

// Store opens the files of one checkpoint; package checkpoint/store implements it.
type Store interface {
	// Open opens a file named as the checkpoint names it: relative to the directory that holds
	// _metadata, or absolute on the same store.
	Open(ctx context.Context, name string) (File, error)
}
