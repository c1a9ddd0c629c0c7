package worker

import (
	"context"
	"os"
	"path/filepath"
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
// cached, every _metadata skipped by path, size and modification time (one stat each); and the
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
