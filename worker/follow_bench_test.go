package worker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/checkpoint/store"
	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/flinkgentest"
	"github.com/kcleanup/kcleanup/projector"
)

// followBase lays out n checkpoints as Flink does, <base>/<job id>/chk-N, each a copy of a real
// Flink 2.0 checkpoint's _metadata (hashmap, parallelism 1): flinkgentest's fixture, which
// kcbench's B10 lays out too.
func followBase(tb testing.TB, n int) string {
	tb.Helper()
	meta, err := flinkgentest.FollowMetadata(flinkgentest.Cases(tb))
	if err != nil {
		tb.Fatal(err)
	}
	base := tb.TempDir()
	if err := flinkgentest.LayOutCheckpoints(base, n, meta); err != nil {
		tb.Fatal(err)
	}
	return base
}

// BenchmarkFollowRound10000 is one round of a policy over a checkpoint base directory of 10,000
// completed checkpoints (docs/benchmarks.md, "Following the job"): cold, every _metadata read;
// cached, every _metadata skipped by path, size and modification time (an lstat of each point
// and of its _metadata); and the
// floors of the same walk with the standard library alone (os.ReadDir, then os.Stat or
// os.ReadFile of each _metadata), for the ratios docs/benchmarks.md gives.
func BenchmarkFollowRound10000(b *testing.B) {
	base := followBase(b, 10000)
	p := projector.Policy{Retention: events.Retention{Watch: []string{base}, Every: time.Minute}}
	ctx := context.Background()
	check := func(f *Follower) {
		got := f.Round(ctx, p)
		if len(got) != 1 || got[0].Err != "" || len(got[0].Points) != 10000 || got[0].Points[0].Err != "" {
			b.Fatalf("round: %d locations, err %q, %d points", len(got), got[0].Err, len(got[0].Points))
		}
	}
	floor := func(b *testing.B, each func(string) error) {
		job := filepath.Join(base, flinkgentest.JobID)
		for i := 0; i < b.N; i++ {
			entries, err := os.ReadDir(job)
			if err != nil || len(entries) != 10000 {
				b.Fatalf("floor: %d entries, %v", len(entries), err)
			}
			for _, e := range entries {
				if err := each(filepath.Join(job, e.Name(), store.MetadataName)); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("floor-stat", func(b *testing.B) {
		floor(b, func(p string) error { _, err := os.Stat(p); return err })
	})
	b.Run("floor-read", func(b *testing.B) {
		floor(b, func(p string) error { _, err := os.ReadFile(p); return err })
	})
	b.Run("cold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			check(&Follower{Store: store.Options{Confined: true, Roots: store.Roots{{Scheme: "file", Path: base}}}})
		}
	})
	b.Run("cached", func(b *testing.B) {
		f := &Follower{Store: store.Options{Confined: true, Roots: store.Roots{{Scheme: "file", Path: base}}}}
		check(f)
		reads := f.Reads
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			check(f)
		}
		if f.Reads != reads {
			b.Fatalf("the cached rounds read %d _metadata files again", f.Reads-reads)
		}
	})
}

// TestFollowerSkipsMetadataAlreadyRead: a second round reads no _metadata again; a _metadata
// rewritten (another size or modification time) is read again; a deleted point leaves the cache.
func TestFollowerSkipsMetadataAlreadyRead(t *testing.T) {
	base := followBase(t, 3)
	p := projector.Policy{Retention: events.Retention{Watch: []string{base}, Every: time.Minute}}
	f := &Follower{Store: store.Options{Confined: true, Roots: store.Roots{{Scheme: "file", Path: base}}}}
	ctx := context.Background()
	if got := f.Round(ctx, p); len(got[0].Points) != 3 || f.Reads != 3 || f.Hits != 0 {
		t.Fatalf("first round: %d points, %d reads, %d hits", len(got[0].Points), f.Reads, f.Hits)
	}
	if got := f.Round(ctx, p); len(got[0].Points) != 3 || f.Reads != 3 || f.Hits != 3 || len(got[0].Points[1].Markers) != 1 {
		t.Fatalf("second round: %d points, %d reads, %d hits", len(got[0].Points), f.Reads, f.Hits)
	}
	meta := filepath.Join(base, flinkgentest.JobID, "chk-2", store.MetadataName)
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(meta, later, later); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(base, flinkgentest.JobID, "chk-3")); err != nil {
		t.Fatal(err)
	}
	got := f.Round(ctx, p)
	listed := got[0].Points
	f.Forget(got)
	if len(listed) != 2 || f.Reads != 4 || len(f.cache) != 2 {
		t.Fatalf("after a touch and a delete: %d points, %d reads, %d cached", len(listed), f.Reads, len(f.cache))
	}
}

// TestFollowerConfinedToRoot: a round lists and reads under --checkpoint-root only. A point
// that is a link leaving it, or whose _metadata is, is listed with an error and no markers
// (nothing outside is read, even once cached); a point linked from elsewhere under the root is
// read; a job directory linking out of the root, or a watched location with a .. leaving it,
// is refused as outside.
func TestFollowerConfinedToRoot(t *testing.T) {
	dir := t.TempDir()
	root, outside := filepath.Join(dir, "root"), filepath.Join(dir, "outside")
	base := filepath.Join(root, "ck")
	meta, err := flinkgentest.FollowMetadata(flinkgentest.Cases(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{base, outside, filepath.Join(root, "other")} {
		if err := flinkgentest.LayOutCheckpoints(b, 2, meta); err != nil {
			t.Fatal(err)
		}
	}
	job := filepath.Join(base, flinkgentest.JobID)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(outside, flinkgentest.JobID, "chk-1")
	must(os.Symlink(out, filepath.Join(job, "chk-3")))                                                       // leaves the root
	must(os.Symlink(filepath.Join(root, "other", flinkgentest.JobID, "chk-2"), filepath.Join(job, "chk-4"))) // stays under it
	must(os.MkdirAll(filepath.Join(job, "chk-5"), 0o755))
	must(os.Symlink(filepath.Join(out, store.MetadataName), filepath.Join(job, "chk-5", store.MetadataName)))
	f := &Follower{Store: store.Options{Confined: true, Roots: store.Roots{{Scheme: "file", Path: root}}}}
	ctx := context.Background()
	p := projector.Policy{Retention: events.Retention{Watch: []string{base, root + "/../outside"}, Every: time.Minute}}
	for round := 1; round <= 2; round++ {
		got := f.Round(ctx, p)
		if len(got) != 2 || got[0].Err != "" || got[0].Outside || len(got[0].Points) != 5 {
			t.Fatalf("round %d: %+v", round, got)
		}
		for _, pt := range got[0].Points {
			name := filepath.Base(pt.Path)
			refused := name == "chk-3" || name == "chk-5"
			if refused != (pt.Err != "") || refused != (len(pt.Markers) == 0) {
				t.Errorf("round %d, %s: err %q, %d markers", round, name, pt.Err, len(pt.Markers))
			}
			if refused && !strings.Contains(pt.Err, "outside the allowed checkpoint roots") {
				t.Errorf("round %d, %s: %q does not say it is outside the roots", round, name, pt.Err)
			}
		}
		if !got[1].Outside || len(got[1].Points) != 0 {
			t.Errorf("round %d: a location with .. leaving the root: %+v", round, got[1])
		}
	}
	must(os.Symlink(filepath.Join(outside, flinkgentest.JobID), filepath.Join(base, "0123456789abcdef0123456789abcdef")))
	if got := f.Round(ctx, p); !got[0].Outside || len(got[0].Points) != 0 {
		t.Errorf("a job directory linking out of the root: %+v", got[0])
	}
}
