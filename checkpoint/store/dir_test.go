package store

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/cockroachdb/errors"
)

// TestDirOpensPointsAsOpenDoes: a point opened under a listed directory (Dir.OpenPoint, one
// lstat of the point and one of its _metadata) is where Open puts it, with the same size and
// modification time, and its files read the same, still confined.
func TestDirOpensPointsAsOpenDoes(t *testing.T) {
	base := t.TempDir()
	job := filepath.Join(base, "job")
	chk := writeCheckpoint(t, job)
	os.MkdirAll(filepath.Join(job, "chk-8"), 0o755) // being written: no _metadata yet
	opts := Options{Confined: true, Roots: mustRoots(t, base)}
	ctx := context.Background()

	d, entries, err := ListDir(ctx, base, opts)
	if err != nil || !slices.Equal(names(entries), []string{"job/"}) {
		t.Fatalf("ListDir(base) = %v, %v", names(entries), err)
	}
	jd, entries, err := d.ListSub(ctx, "job")
	if err != nil || !slices.Equal(names(entries), []string{"chk-7/", "chk-8/"}) {
		t.Fatalf("ListSub(job) = %v, %v", names(entries), err)
	}
	if got := jd.Path("chk-7"); got != chk {
		t.Fatalf("Path(chk-7) = %s, want %s", got, chk)
	}
	st, loc, err := jd.OpenPoint(ctx, "chk-7")
	if err != nil {
		t.Fatal(err)
	}
	_, want, err := Open(ctx, chk, opts)
	if err != nil {
		t.Fatal(err)
	}
	if loc.Dir != want.Dir || loc.Metadata != want.Metadata || loc.Size != want.Size || !loc.Written.Equal(want.Written) {
		t.Fatalf("OpenPoint: %+v; Open: %+v", loc, want)
	}
	if got := openRead(t, st, MetadataName); got != "METADATA-BYTES" {
		t.Errorf("_metadata reads %q", got)
	}
	if got := openRead(t, st, "3f2a-state"); got != "0123456789" {
		t.Errorf("a state file reads %q", got)
	}
	if _, _, err := jd.OpenPoint(ctx, "chk-8"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a directory without _metadata: %v, want ErrNotFound", err)
	}
	for _, name := range []string{"..", ".", "", "chk-7/..", "../job"} {
		if _, _, err := jd.OpenPoint(ctx, name); err == nil {
			t.Errorf("OpenPoint(%q) opened: want an error (not a name directly under the directory)", name)
		}
	}
}

// TestDirConfined: a point, a _metadata or a job directory under a listed directory that is a
// symbolic link leaving --checkpoint-root is refused (ErrOutsideRoots) when opened or read, as
// Open refuses it; a
// link that stays under the root is followed; a _metadata, or the point's directory, turned
// into a link after the point was opened is not read; a FIFO in place of _metadata is refused, not waited on.
func TestDirConfined(t *testing.T) {
	dir := t.TempDir()
	allowed := filepath.Join(dir, "allowed")
	outside := filepath.Join(dir, "outside")
	secret := writeCheckpoint(t, outside)
	inside := writeCheckpoint(t, filepath.Join(allowed, "elsewhere"))
	job := filepath.Join(allowed, "job")
	writeCheckpoint(t, job)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(secret, filepath.Join(job, "chk-1"))) // a point leaving the root
	must(os.Symlink(inside, filepath.Join(job, "chk-2"))) // a point that stays under it
	must(os.MkdirAll(filepath.Join(job, "chk-3"), 0o755)) // its _metadata leaves the root
	must(os.Symlink(filepath.Join(secret, MetadataName), filepath.Join(job, "chk-3", MetadataName)))
	must(os.MkdirAll(filepath.Join(job, "chk-4"), 0o755)) // a FIFO as _metadata
	must(syscall.Mkfifo(filepath.Join(job, "chk-4", MetadataName), 0o644))
	must(os.Symlink(outside, filepath.Join(allowed, "job-out"))) // a job directory leaving it
	opts := Options{Confined: true, Roots: mustRoots(t, allowed)}
	ctx := context.Background()

	d, _, err := ListDir(ctx, allowed, opts)
	must(err)
	jd, _, err := d.ListSub(ctx, "job")
	must(err)
	if _, _, err := jd.OpenPoint(ctx, "chk-1"); !errors.Is(err, ErrOutsideRoots) {
		t.Errorf("OpenPoint(chk-1) = %v; want ErrOutsideRoots", err)
	}
	// A directory under the root whose _metadata links out opens, as Open opens it, but its
	// _metadata is refused when read.
	if st, _, err := jd.OpenPoint(ctx, "chk-3"); !errors.Is(err, ErrOutsideRoots) {
		must(err)
		if _, err := st.Open(ctx, MetadataName); !errors.Is(err, ErrOutsideRoots) {
			t.Errorf("reading chk-3/_metadata = %v; want ErrOutsideRoots", err)
		}
	}
	st, loc, err := jd.OpenPoint(ctx, "chk-2")
	if err != nil || loc.Dir.Path != inside {
		t.Fatalf("a link under the root: %+v, %v; want it resolved to %s", loc, err, inside)
	}
	if got := openRead(t, st, MetadataName); got != "METADATA-BYTES" {
		t.Errorf("_metadata through a link under the root reads %q", got)
	}
	if st, _, err := jd.OpenPoint(ctx, "chk-4"); err == nil {
		if _, err := st.Open(ctx, MetadataName); err == nil {
			t.Errorf("a FIFO as _metadata opened: want a refusal")
		}
	}
	if _, _, err := d.ListSub(ctx, "job-out"); !errors.Is(err, ErrOutsideRoots) {
		t.Errorf("ListSub(job-out) = %v; want ErrOutsideRoots", err)
	}
	if _, _, err := ListDir(ctx, allowed+"/../outside", opts); !errors.Is(err, ErrOutsideRoots) {
		t.Errorf("ListDir(allowed/../outside) = %v; want ErrOutsideRoots", err)
	}

	// Swapped after OpenPoint checked it: the plain _metadata, now a link, is not followed.
	st, _, err = jd.OpenPoint(ctx, "chk-7")
	must(err)
	meta := filepath.Join(job, "chk-7", MetadataName)
	must(os.Remove(meta))
	must(os.Symlink(filepath.Join(secret, MetadataName), meta))
	if f, err := st.Open(ctx, MetadataName); err == nil {
		f.Close()
		t.Errorf("a _metadata replaced by a link leaving the root was opened")
	}
	// The point's directory itself swapped for a link leaving the root: not followed either.
	writeCheckpoint(t, filepath.Join(allowed, "job2"))
	jd2, _, err := d.ListSub(ctx, "job2")
	must(err)
	st, _, err = jd2.OpenPoint(ctx, "chk-7")
	must(err)
	point := filepath.Join(allowed, "job2", "chk-7")
	must(os.Rename(point, point+".old"))
	must(os.Symlink(secret, point))
	if f, err := st.Open(ctx, MetadataName); err == nil {
		f.Close()
		t.Errorf("a point directory replaced by a link leaving the root was read through")
	}
}
