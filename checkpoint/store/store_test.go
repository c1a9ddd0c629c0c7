package store

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/checkpoint"
)

// writeCheckpoint lays out dir/chk-7 with a _metadata and one state file, and returns it.
func writeCheckpoint(t *testing.T, dir string) string {
	t.Helper()
	chk := filepath.Join(dir, "chk-7")
	if err := os.MkdirAll(chk, 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(chk, MetadataName), "METADATA-BYTES")
	mustWrite(t, filepath.Join(chk, "3f2a-state"), "0123456789")
	return chk
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readAll reads a File whole through ReadAt.
func readAll(t *testing.T, f checkpoint.File) string {
	t.Helper()
	b, err := io.ReadAll(io.NewSectionReader(f, 0, f.Size()))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func openRead(t *testing.T, st checkpoint.Store, name string) string {
	t.Helper()
	f, err := st.Open(context.Background(), name)
	if err != nil {
		t.Fatalf("Open(%q): %v", name, err)
	}
	defer f.Close()
	return readAll(t, f)
}

func TestOpenLocal(t *testing.T) {
	dir := t.TempDir()
	chk := writeCheckpoint(t, dir)
	meta := filepath.Join(chk, MetadataName)
	for _, p := range []string{chk, chk + "/", meta, "file:" + chk, "file://" + chk, "file://localhost" + meta, chk + "/../chk-7"} {
		st, loc, err := Open(context.Background(), p, Options{})
		if err != nil {
			t.Fatalf("Open(%q): %v", p, err)
		}
		if loc.Metadata.Path != meta || loc.Dir.Path != chk || loc.Dir.Scheme != "file" {
			t.Errorf("Open(%q) located %+v, want the metadata %s in %s", p, loc, meta, chk)
		}
		if got := openRead(t, st, MetadataName); got != "METADATA-BYTES" {
			t.Errorf("Open(%q): _metadata reads %q", p, got)
		}
		// Relative names, and absolute ones as Flink writes them (file:/...), on the same store.
		for _, name := range []string{"3f2a-state", "file:" + chk + "/3f2a-state", "file://" + chk + "/3f2a-state", chk + "/3f2a-state"} {
			if got := openRead(t, st, name); got != "0123456789" {
				t.Errorf("Open(%q).Open(%q) reads %q", p, name, got)
			}
		}
	}

	// A relative PATH is taken from the working directory.
	t.Chdir(dir)
	if _, loc, err := Open(context.Background(), "chk-7", Options{}); err != nil || loc.Dir.Path != chk {
		t.Errorf("Open(chk-7) from %s: %+v, %v", dir, loc, err)
	}

	st, _, err := Open(context.Background(), chk, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := st.Open(context.Background(), "3f2a-state")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if n, err := f.ReadAt(buf, 8); n != 2 || err != io.EOF || string(buf[:n]) != "89" {
		t.Errorf("ReadAt past the end: %d, %v, %q; want 2, EOF, \"89\"", n, err, buf[:n])
	}
	f.Close()
}

func TestOpenLocalErrors(t *testing.T) {
	dir := t.TempDir()
	chk := writeCheckpoint(t, dir)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	for _, tc := range []struct{ path, err string }{
		{filepath.Join(dir, "chk-8"), "does not exist"},
		{empty, "a directory without _metadata"},
		{"/dev/null", "neither a directory nor a regular file"},
		{"s3a:/bucket", "not an S3 URL"},
		{"gs://bucket/x", `scheme "gs"`},
	} {
		_, _, err := Open(context.Background(), tc.path, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Open(%q): %v; want an error with %q", tc.path, err, tc.err)
		}
	}
	if _, _, err := Open(context.Background(), filepath.Join(dir, "chk-8"), Options{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("a missing checkpoint is not ErrNotFound: %v", err)
	}
	st, _, err := Open(context.Background(), chk, Options{})
	if err != nil {
		t.Fatal(err)
	}
	os.Symlink("/dev/zero", filepath.Join(chk, "zero"))
	for _, tc := range []struct{ name, err string }{
		{"missing-state", "does not exist"},
		{"../chk-7/3f2a-state", "leaves its directory"},
		{"sub//x", "empty segment"},
		{"s3://bucket/chk-7/3f2a-state", "not on the store that holds its _metadata"},
		{"file://evil/etc/passwd", `names host "evil"`},
		{"zero", "not a regular file"},
	} {
		_, err := st.Open(context.Background(), tc.name)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Open(%q): %v; want an error with %q", tc.name, err, tc.err)
		}
	}
}

// TestOpenLocalConfined: under Options.Confined, PATH and every file the checkpoint names
// must lie under the roots after symbolic links are resolved.
func TestOpenLocalConfined(t *testing.T) {
	dir := t.TempDir()
	allowed := filepath.Join(dir, "allowed")
	outside := filepath.Join(dir, "outside")
	os.MkdirAll(allowed, 0o755)
	os.MkdirAll(outside, 0o755)
	chk := writeCheckpoint(t, allowed)
	secret := writeCheckpoint(t, outside)
	os.Symlink(secret, filepath.Join(allowed, "link-out"))                              // a directory link leaving the root
	os.Symlink(filepath.Join(secret, "3f2a-state"), filepath.Join(chk, "state-link"))   // a file link leaving it
	os.Symlink(allowed, filepath.Join(dir, "allowed-link"))                             // a root given through a link
	os.Symlink(filepath.Join(outside, "chk-7"), filepath.Join(allowed, "chk-7", "sub")) // for .. after a link
	opts := Options{Confined: true, Roots: mustRoots(t, allowed)}

	st, _, err := Open(context.Background(), chk, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := openRead(t, st, "3f2a-state"); got != "0123456789" {
		t.Errorf("a file under the root reads %q", got)
	}
	for _, name := range []string{"state-link", "file:" + secret + "/3f2a-state", secret + "/_metadata"} {
		if _, err := st.Open(context.Background(), name); !errors.Is(err, ErrOutsideRoots) {
			t.Errorf("Open(%q) = %v; want ErrOutsideRoots", name, err)
		}
	}
	for _, p := range []string{secret, filepath.Join(allowed, "link-out"), allowed + "/../outside/chk-7", chk + "/sub/../.."} {
		_, _, err := Open(context.Background(), p, opts)
		if !errors.Is(err, ErrOutsideRoots) {
			t.Errorf("Open(%q) = %v; want ErrOutsideRoots", p, err)
		}
	}
	// No roots: nothing. A root given through a link holds its target's paths.
	if _, _, err := Open(context.Background(), chk, Options{Confined: true}); !errors.Is(err, ErrOutsideRoots) {
		t.Errorf("no roots: %v; want ErrOutsideRoots", err)
	}
	if _, _, err := Open(context.Background(), chk, Options{Confined: true, Roots: mustRoots(t, filepath.Join(dir, "allowed-link"))}); err != nil {
		t.Errorf("a root given through a link: %v", err)
	}
}

func mustRoots(t *testing.T, specs ...string) Roots {
	t.Helper()
	rs, err := ParseRoots(specs)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}
