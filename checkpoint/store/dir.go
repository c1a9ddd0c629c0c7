package store

import (
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/checkpoint"
)

// Dir is a directory listed once, whose children are then opened without resolving (and
// confining) the whole path again for each: what a retention policy's round does over
// thousands of recovery points. Locally the directory is resolved and held to the roots once;
// a child that is a plain directory holding a plain _metadata is then under the roots by
// construction, and a child or _metadata that is a symbolic link is resolved and checked in
// full, as Open does. On S3, where nothing is resolved, each child is Open'ed as before.
type Dir struct {
	path string // as given (or joined from the parent's): what Path and errors say
	opts Options
	c    *confinement
	real string // local: the resolved path, under the roots; "" on S3
}

// ListDir lists the directory p as List does, and returns it for opening its children.
func ListDir(ctx context.Context, p string, opts Options) (*Dir, []Entry, error) {
	cwd, _ := os.Getwd()
	scheme, raw, err := splitRef(p, cwd)
	if err != nil {
		return nil, nil, err
	}
	var c *confinement
	if opts.Confined {
		c = &confinement{roots: resolveRoots(opts.Roots)}
	}
	d := &Dir{path: p, opts: opts, c: c}
	if scheme == "file" {
		real, entries, err := listLocal(raw, c)
		d.real = real
		return d, entries, err
	}
	ref, err := parseS3(p, raw)
	if err != nil {
		return nil, nil, err
	}
	entries, err := listS3(ctx, ref, c)
	return d, entries, err
}

// Path is the path of the child name, joined to the directory as it was given.
func (d *Dir) Path(name string) string {
	if strings.Contains(d.path, "://") {
		return strings.TrimSuffix(d.path, "/") + "/" + name
	}
	return path.Join(d.path, name)
}

// child is the resolved path of a child name that is a plain directory (not a link), or ""
// when it must be resolved in full.
func (d *Dir) child(name string) (string, error) {
	if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return "", errors.Newf("%q is not a name directly under %s: expected a name the listing gave", name, d.path)
	}
	if d.real == "" {
		return "", nil
	}
	p := filepath.Join(d.real, name)
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() {
		return "", nil // a link, or gone: Open and List say what it is
	}
	return p, nil
}

// ListSub lists the child directory name as List would list Path(name).
func (d *Dir) ListSub(ctx context.Context, name string) (*Dir, []Entry, error) {
	real, err := d.child(name)
	if err != nil {
		return nil, nil, err
	}
	if real == "" {
		return ListDir(ctx, d.Path(name), d.opts)
	}
	sub := &Dir{path: d.Path(name), opts: d.opts, c: d.c, real: real}
	entries, err := readLocalDir(real, sub.path)
	return sub, entries, err
}

// OpenPoint opens the child name as Open opens Path(name): a checkpoint or savepoint
// directory. Locally, a plain directory holding a plain _metadata costs one lstat each.
func (d *Dir) OpenPoint(ctx context.Context, name string) (checkpoint.Store, Location, error) {
	real, err := d.child(name)
	if err != nil {
		return nil, Location{}, err
	}
	if real == "" {
		return Open(ctx, d.Path(name), d.opts)
	}
	meta := filepath.Join(real, MetadataName)
	mi, err := os.Lstat(meta)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, Location{}, errors.Mark(errors.Newf("%s is a directory without %s: expected a checkpoint directory (chk-N) or a savepoint directory", d.Path(name), MetadataName), ErrNotFound)
	case err != nil:
		return nil, Location{}, errors.Newf("checkpoint path %s: %v", d.Path(name), err)
	case !mi.Mode().IsRegular():
		return Open(ctx, d.Path(name), d.opts) // a link (resolved and checked there), or not a file (said there)
	}
	dir := Ref{Scheme: "file", Path: real}
	loc := Location{Dir: dir, Metadata: Ref{Scheme: "file", Path: meta}, Written: mi.ModTime(), Size: mi.Size()}
	return &localStore{dir: dir, c: d.c, plainMetadata: true}, loc, nil
}

// openPlainMetadata opens the _metadata that OpenPoint found a regular file in a directory
// that was no link, refusing a link put in its path since (openNoLinks) and never blocking on a
// FIFO (O_NONBLOCK).
func openPlainMetadata(p string) (checkpoint.File, error) {
	f, err := openNoLinks(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errors.Mark(errors.Newf("checkpoint file %s does not exist", p), ErrNotFound)
		}
		return nil, errors.Newf("checkpoint file %s: %v (a symbolic link put in its path since the listing is refused: the next round resolves and checks it)", p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, errors.Newf("checkpoint file %s: %v", p, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, errors.Newf("checkpoint file %s is not a regular file (%s): expected a file Flink wrote", p, fi.Mode().Type())
	}
	return localFile{File: f, size: fi.Size()}, nil
}
