package store

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cockroachdb/errors"
)

func names(es []Entry) []string {
	var out []string
	for _, e := range es {
		n := e.Name
		if e.Dir {
			n += "/"
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// TestListLocal: the names directly under a directory, directories marked; a missing directory
// is ErrNotFound (never an empty listing); outside the roots nothing is listed.
func TestListLocal(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{"job/chk-1", "job/chk-2", "savepoint-a"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "job", "chk-1", MetadataName), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := List(context.Background(), base, Options{})
	if err != nil || !slices.Equal(names(got), []string{"job/", "savepoint-a/"}) {
		t.Fatalf("List(base) = %v, %v", names(got), err)
	}
	got, err = List(context.Background(), filepath.Join(base, "job", "chk-1"), Options{Confined: true, Roots: Roots{{Scheme: "file", Path: base}}})
	if err != nil || !slices.Equal(names(got), []string{MetadataName}) {
		t.Fatalf("List(chk-1) = %v, %v", names(got), err)
	}
	if _, err := List(context.Background(), filepath.Join(base, "nope"), Options{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a missing directory: %v, want ErrNotFound", err)
	}
	if _, err := List(context.Background(), base, Options{Confined: true, Roots: Roots{{Scheme: "file", Path: t.TempDir()}}}); !errors.Is(err, ErrOutsideRoots) {
		t.Fatalf("outside the roots: %v, want ErrOutsideRoots", err)
	}
}

// TestListS3 lists a checkpoint base directory on the real S3-compatible server as Flink lays it
// out: prefixes are directories, objects names; a prefix with nothing under it is ErrNotFound;
// outside the roots no request is made.
func TestListS3(t *testing.T) {
	needS3(t)
	bucket := newBucket(t, map[string][]byte{
		"ck/job/chk-1/_metadata": []byte("m"), "ck/job/chk-2/_metadata": []byte("m"), "ck/job/shared/x": []byte("s"),
		"ck/savepoint-a/_metadata": []byte("m"), "ck/readme": []byte("r"),
	})
	ctx := context.Background()
	got, err := List(ctx, "s3://"+bucket+"/ck", Options{})
	if err != nil || !slices.Equal(names(got), []string{"job/", "readme", "savepoint-a/"}) {
		t.Fatalf("List(ck) = %v, %v", names(got), err)
	}
	got, err = List(ctx, "s3a://"+bucket+"/ck/job/", Options{Confined: true, Roots: Roots{{Scheme: "s3", Bucket: bucket, Path: "ck"}}})
	if err != nil || !slices.Equal(names(got), []string{"chk-1/", "chk-2/", "shared/"}) {
		t.Fatalf("List(ck/job) = %v, %v", names(got), err)
	}
	if _, err := List(ctx, "s3://"+bucket+"/nothing", Options{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an empty prefix: %v, want ErrNotFound", err)
	}
	if _, err := List(ctx, "s3://"+bucket+"/ck", Options{Confined: true, Roots: Roots{{Scheme: "s3", Bucket: bucket + "-other"}}}); !errors.Is(err, ErrOutsideRoots) {
		t.Fatalf("outside the roots: %v, want ErrOutsideRoots", err)
	}
}
