package store

import (
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/checkpoint"
)

// MetadataName is the file of a checkpoint or savepoint directory that Flink writes last and
// that names every other file.
const MetadataName = "_metadata"

// ErrOutsideRoots marks a refusal to read a location outside Options.Roots (a worker answers
// it with 403).
var ErrOutsideRoots = errors.New("outside the allowed checkpoint roots")

// ErrNotFound marks a path, file or bucket that does not exist.
var ErrNotFound = errors.New("not found")

// Options says where Open may read.
type Options struct {
	// Confined limits every read, of PATH and of every file the checkpoint names, to Roots
	// (none: nothing). A worker sets it; the command line, reading as its own user, does not.
	Confined bool
	Roots    Roots
}

// Location says what Open resolved PATH to.
type Location struct {
	Metadata Ref // the _metadata file
	Dir      Ref // the directory that holds it, which relative names start from
	// Written is when _metadata was last modified (the file's mtime, the object's
	// Last-Modified): Flink writes it last, so this is when the checkpoint completed. Zero
	// when the store does not say.
	Written time.Time
	// Size is the size of _metadata in bytes (-1 when the store does not say): with Metadata
	// and Written, what tells a _metadata already read from a new one.
	Size int64
}

// Open resolves PATH as an operator gives it — a checkpoint directory (chk-N), a savepoint
// directory or its _metadata file; a local path, a file: URL or an s3:// URL — and returns
// the store of that checkpoint's files and where its _metadata is. A relative local PATH is
// taken from the working directory.
func Open(ctx context.Context, p string, opts Options) (checkpoint.Store, Location, error) {
	cwd, _ := os.Getwd()
	scheme, raw, err := splitRef(p, cwd)
	if err != nil {
		return nil, Location{}, err
	}
	var c *confinement
	if opts.Confined {
		c = &confinement{roots: resolveRoots(opts.Roots)}
	}
	if scheme == "file" {
		return openLocal(raw, c)
	}
	ref, err := parseS3(p, raw)
	if err != nil {
		return nil, Location{}, err
	}
	return openS3(ctx, ref, c)
}

// confinement is Options.Roots in force, local roots with their symbolic links resolved.
type confinement struct{ roots Roots }

func (c *confinement) check(r Ref, what string) error {
	if c == nil || c.roots.Allow(r) {
		return nil
	}
	return errors.Mark(errors.Newf("%s %s is outside the allowed checkpoint roots (%s): the worker reads checkpoints only under its --checkpoint-root locations", what, r, c.roots), ErrOutsideRoots)
}

// resolveRoots resolves the symbolic links of local roots that exist, so that a root given
// through a link still holds the paths under its target.
func resolveRoots(rs Roots) Roots {
	out := make(Roots, 0, len(rs))
	for _, r := range rs {
		if r.Scheme == "file" {
			if p, err := filepath.EvalSymlinks(r.Path); err == nil {
				out = append(out, Ref{Scheme: "file", Path: filepath.Clean(p)})
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

// relativeName checks a name that a checkpoint gives relative to its directory: Flink writes
// a file name there, so a name that leaves the directory is refused.
func relativeName(name string) error {
	for _, seg := range strings.Split(name, "/") {
		switch seg {
		case "", ".", "..":
			return errors.Newf("the checkpoint names the file %q, which leaves its directory or has an empty segment: expected a file name relative to the directory of _metadata", name)
		}
	}
	return nil
}

// isAbsoluteName tells a name that carries its own location (a scheme or a leading slash).
func isAbsoluteName(name string) bool {
	_, _, ok := cutScheme(name)
	return ok || strings.HasPrefix(name, "/")
}

func otherStore(name string, on Ref) error {
	return errors.Newf("the checkpoint names the file %q, which is not on the store that holds its _metadata (%s): kcleanup reads a checkpoint's files only from that store (same scheme and bucket)", name, storeName(on))
}

func storeName(r Ref) string {
	if r.Scheme == "s3" {
		return "s3://" + r.Bucket
	}
	return "the local file system"
}

// ---- local files -------------------------------------------------------------------------

type localStore struct {
	dir Ref
	c   *confinement
	// plainMetadata: Dir.OpenPoint found dir (resolved, under the roots) holding a regular
	// _metadata, so that file is opened without resolving it again.
	plainMetadata bool
}

// openLocal resolves raw (absolute, not cleaned) with its symbolic links, so that both the
// roots and the file read are the real location.
func openLocal(raw string, c *confinement) (checkpoint.Store, Location, error) {
	// Confined, the path as written is held to the roots before the file system is touched,
	// so that the answer says nothing of what exists outside them; its links are resolved
	// and checked again below.
	if err := c.check(Ref{Scheme: "file", Path: filepath.Clean(raw)}, "checkpoint path"); err != nil {
		return nil, Location{}, err
	}
	real, err := filepath.EvalSymlinks(raw)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, Location{}, errors.Mark(errors.Newf("checkpoint path %s does not exist: expected a checkpoint directory (chk-N), a savepoint directory or its _metadata file", raw), ErrNotFound)
		}
		return nil, Location{}, errors.Newf("checkpoint path %s: %v", raw, err)
	}
	ref := Ref{Scheme: "file", Path: filepath.Clean(real)}
	if err := c.check(ref, "checkpoint path"); err != nil {
		return nil, Location{}, err
	}
	fi, err := os.Stat(ref.Path)
	if err != nil {
		return nil, Location{}, errors.Newf("checkpoint path %s: %v", raw, err)
	}
	var loc Location
	switch {
	case fi.IsDir():
		loc = Location{Dir: ref, Metadata: Ref{Scheme: "file", Path: filepath.Join(ref.Path, MetadataName)}}
		if _, err := os.Stat(loc.Metadata.Path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, Location{}, errors.Mark(errors.Newf("%s is a directory without %s: expected a checkpoint directory (chk-N) or a savepoint directory", raw, MetadataName), ErrNotFound)
			}
			return nil, Location{}, errors.Newf("checkpoint path %s: %v", raw, err)
		}
	case fi.Mode().IsRegular():
		loc = Location{Dir: Ref{Scheme: "file", Path: filepath.Dir(ref.Path)}, Metadata: ref}
	default:
		return nil, Location{}, errors.Newf("checkpoint path %s is neither a directory nor a regular file: expected a checkpoint directory (chk-N), a savepoint directory or its _metadata file", raw)
	}
	loc.Size = -1
	if mi, err := os.Stat(loc.Metadata.Path); err == nil {
		loc.Written, loc.Size = mi.ModTime(), mi.Size()
	}
	return &localStore{dir: loc.Dir, c: c}, loc, nil
}

func (s *localStore) Open(_ context.Context, name string) (checkpoint.File, error) {
	if s.plainMetadata && name == MetadataName {
		return openPlainMetadata(filepath.Join(s.dir.Path, MetadataName))
	}
	var raw string
	if isAbsoluteName(name) {
		scheme, r, err := splitRef(name, "")
		if err != nil {
			return nil, errors.Newf("the checkpoint names the file %q: %s", name, err.Error())
		}
		if scheme != "file" {
			return nil, otherStore(name, s.dir)
		}
		raw = r
	} else {
		if err := relativeName(name); err != nil {
			return nil, err
		}
		raw = filepath.Join(s.dir.Path, filepath.FromSlash(name))
	}
	real, err := filepath.EvalSymlinks(raw)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errors.Mark(errors.Newf("checkpoint file %s does not exist (named %q by the checkpoint in %s)", raw, name, s.dir), ErrNotFound)
		}
		return nil, errors.Newf("checkpoint file %s: %v", raw, err)
	}
	ref := Ref{Scheme: "file", Path: filepath.Clean(real)}
	if err := s.c.check(ref, "checkpoint file"); err != nil {
		return nil, err
	}
	// A regular file only: a FIFO would block the open, a device never end.
	fi, err := os.Stat(ref.Path)
	if err != nil {
		return nil, errors.Newf("checkpoint file %s: %v", raw, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.Newf("checkpoint file %s is not a regular file (%s): expected a file Flink wrote", raw, fi.Mode().Type())
	}
	f, err := os.Open(ref.Path)
	if err != nil {
		return nil, errors.Newf("checkpoint file %s: %v", raw, err)
	}
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, errors.Newf("checkpoint file %s: %v", raw, err)
	}
	return localFile{File: f, size: fi.Size()}, nil
}

type localFile struct {
	*os.File
	size int64
}

func (f localFile) Size() int64 { return f.size }

// keyJoin joins an S3 directory key and a relative name.
func keyJoin(dir, name string) string {
	if dir == "" {
		return name
	}
	return path.Join(dir, name)
}
