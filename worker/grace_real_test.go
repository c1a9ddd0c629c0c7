package worker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/protocol"
)

// TestMirrorRecordTimes: what the restore grace reads as the time the
// brokers made a mirror record readable (protocol.MirrorView.Visible), on
// the real broker. kcleanup's own write is transactional: a
// read_committed reader that keeps control records gets its commit
// marker, stamped by the partition leader, no earlier than the record's
// own timestamp. A record produced outside a transaction has its own
// timestamp; one produced with none (-1: the broker keeps it on a
// CreateTime topic) has no known time, and the grace then waits from
// when the reader first saw it.
func TestMirrorRecordTimes(t *testing.T) {
	f := newFlinkFixture(t)
	ctx := ctxT(t, 60*time.Second)
	info, err := f.c.TopicMetadata(ctx, f.ctl)
	if err != nil {
		t.Fatal(err)
	}
	p1 := f.plan(t, "cp-1", events.Offsets{0: 10, 1: 10})
	if _, err := f.c.WriteMirror(ctx, protocol.MirrorRecord{Topic: f.ctl, TopicID: info.ID, Status: flinkagents.Committed, Plan: p1}); err != nil {
		t.Fatal(err)
	}
	own := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	r2 := flinkRec("COMMITTED", f.plan(t, "cp-2", events.Offsets{0: 20, 1: 20}))
	r2.Timestamp = own
	r3 := flinkRec("COMMITTED", f.plan(t, "cp-3", events.Offsets{0: 30, 1: 30}))
	r3.Timestamp = time.UnixMilli(-1)
	f.write(t, r2)
	f.write(t, r3)

	v, err := f.c.ReadMirror(ctx, f.ctl)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Fold.Err(); err != nil {
		t.Fatal(err)
	}
	ops := v.Fold.Operations()
	if len(ops) != 3 {
		t.Fatalf("the mirror holds %d plans, want 3", len(ops))
	}
	// The transactional record's own timestamp, as a plain reader sees it.
	raw := f.readAt(t, ops[0].First)
	marker, ok := v.Visible[ops[0].First]
	if !ok {
		t.Fatalf("no time for kcleanup's transactional record at %d: its commit marker was not read (%v)", ops[0].First, v.Visible)
	}
	if marker.Before(raw.Timestamp) {
		t.Fatalf("commit marker at %s, before its record's own timestamp %s", marker, raw.Timestamp)
	}
	if got := v.Visible[ops[1].First]; !got.Equal(own) {
		t.Fatalf("a record outside a transaction: time %s, want its own timestamp %s", got, own)
	}
	if got, ok := v.Visible[ops[2].First]; ok {
		t.Fatalf("a record produced without a timestamp has the time %s, want none", got)
	}
	if f.readAt(t, ops[2].First).Timestamp.UnixMilli() != -1 {
		t.Fatal("the broker did not keep the record's missing timestamp (-1): the unknown case is not what this test makes")
	}
}

// readAt reads the control topic's record at off, read_uncommitted.
func (f *flinkFixture) readAt(t *testing.T, off int64) *kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(append(f.c.ConnOpts(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{f.ctl: {0: kgo.NewOffset().At(off)}}))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := ctxT(t, 30*time.Second)
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read offset %d: %v", off, err)
		}
		var got *kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset == off && got == nil {
				got = r
			}
		})
		if got != nil {
			return got
		}
	}
}
