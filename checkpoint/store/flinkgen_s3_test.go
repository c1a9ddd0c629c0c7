package store

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/checkpoint"
	"github.com/kcleanup/kcleanup/internal/flinkgentest"
)

// TestS3ReadsRealSavepoints: every savepoint real Flink jobs wrote (internal/flinkgen), copied
// to the real S3-compatible server as a savepoint is moved (savepoints name their files
// relative to _metadata), reads exactly as it reads from the local directory Flink wrote,
// under every spelling Flink users give (s3://, s3a://, s3p://, the _metadata key).
func TestS3ReadsRealSavepoints(t *testing.T) {
	needS3(t)
	cases := flinkgentest.Cases(t)
	ctx := context.Background()
	read := 0
	for _, c := range cases {
		if !strings.HasPrefix(c.Kind, "savepoint") || len(c.Operators) != 1 {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			objects := map[string][]byte{}
			err := filepath.WalkDir(c.Path, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := os.ReadFile(p)
				rel, _ := filepath.Rel(c.Path, p)
				objects["moved/"+filepath.Base(c.Path)+"/"+filepath.ToSlash(rel)] = b
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			bucket := newBucket(t, objects)
			sel := checkpoint.Selector{OperatorUID: c.Operators[0].UID}
			lst, _, err := Open(ctx, c.Path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want, wantErr := checkpoint.Read(ctx, lst, sel)
			key := "moved/" + filepath.Base(c.Path)
			for _, p := range []string{"s3://" + bucket + "/" + key, "s3a://" + bucket + "/" + key, "s3p://" + bucket + "/" + key + "/", "s3://" + bucket + "/" + key + "/_metadata"} {
				st, loc, err := Open(ctx, p, Options{})
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				if loc.Written.IsZero() {
					t.Errorf("%s: no Last-Modified for _metadata", p)
				}
				got, err := checkpoint.Read(ctx, st, sel)
				if (err == nil) != (wantErr == nil) {
					t.Fatalf("%s: %v; locally: %v", p, err, wantErr)
				}
				if err == nil && !reflect.DeepEqual(got.Holders, want.Holders) {
					t.Fatalf("%s reads other markers than the local copy:\n%+v\n%+v", p, got.Holders, want.Holders)
				}
				read++
			}
		})
	}
	if read == 0 {
		t.Fatal("no savepoint of the generator was read over S3")
	}
}
