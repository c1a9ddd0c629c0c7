package worker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/protocol"
)

// TestScanTombstonesReadsAsAJobRecovers: on the real broker, the scan sees a null value as a
// tombstone and an empty one not; skips a tombstone in an aborted transaction (read_committed,
// as a Flink job's recovery reads) but sees one in a committed transaction; reads on from an
// earlier scan (protocol.Continue) without reading it again; and a limit leaves it cannot tell.
func TestScanTombstonesReadsAsAJobRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Kafka broker")
	}
	addr := kafkatest.Bootstrap(t)
	c := workertest.Connect(t, addr)
	cl := kafkatest.Client(t, addr)
	topic, _ := workertest.RealDataTopic(t, cl, "tombstone-scan") // 200 records in each of 2 partitions
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produce := func(cl *kgo.Client, p int32, value []byte) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Key: []byte("k"), Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(cl, 0, []byte{}) // 200: empty, not a tombstone
	produce(cl, 1, nil)      // 200: a tombstone
	txn := func(commit bool) {
		t.Helper()
		tx := kafkatest.Client(t, addr, kgo.TransactionalID(fmt.Sprintf("%s-%v", topic, commit)))
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		produce(tx, 0, nil)
		if err := tx.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	txn(false) // partition 0: an aborted tombstone (201) and its marker (202)
	from := events.Offsets{0: 100, 1: 100}
	var scan protocol.TombstoneScan
	kafkatest.Eventually(t, 20*time.Second, "the scan reads to the last stable offset", func() bool {
		var err error
		scan, err = c.ScanTombstones(ctx, topic, from, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		return scan.Partitions[0].To == 203
	})
	want := map[int32]protocol.PartitionScan{0: {From: 100, To: 203, Read: 203, Latest: -1}, 1: {From: 100, To: 201, Read: 201, Latest: 200}}
	for p, w := range want {
		if scan.Partitions[p] != w {
			t.Errorf("partition %d: %+v, want %+v", p, scan.Partitions[p], w)
		}
	}

	txn(true) // partition 0: a committed tombstone (203) and its marker (204)
	var next protocol.TombstoneScan
	kafkatest.Eventually(t, 20*time.Second, "the commit marker is written (the last stable offset moves on)", func() bool {
		var err error
		if next, err = c.ScanTombstones(ctx, topic, from, &scan, 3); err != nil {
			t.Fatal(err)
		}
		return next.Partitions[0].To == 205
	})
	if got := next.Partitions[0]; got.Latest != 203 || got.Read != 205 || !got.Complete() {
		t.Errorf("read on from the earlier scan: %+v, want the committed tombstone at 203, read to 205 (2 records of the limit of 3)", got)
	}
	if got := next.Partitions[1]; got != want[1] {
		t.Errorf("partition 1 read again: %+v", got)
	}

	limited, err := c.ScanTombstones(ctx, topic, events.Offsets{0: 0, 1: 0}, nil, 50)
	if err != nil {
		t.Fatal(err)
	}
	read := int64(0)
	for _, ps := range limited.Partitions {
		read += ps.Read - ps.From
	}
	if read != 50 || limited.Partitions[0].Complete() && limited.Partitions[1].Complete() {
		t.Errorf("a scan limited to 50 records read %d: %+v", read, limited.Partitions)
	}
	fs, _ := protocol.FirstPlanTombstones(events.Plan{Topic: topic, Offsets: events.Offsets{0: 0, 1: 0}}, &limited, false)
	if len(protocol.Blocking(fs)) == 0 {
		t.Errorf("a limited scan was taken for no tombstones: %+v", fs)
	}
}

// BenchmarkScanTombstones measures the scan on the real broker (docs/benchmarks.md,
// "Tombstone scan"): a topic of 4 partitions, 1,000,000 records of 100-byte values or 250,000 of
// 1,000-byte values, read from the start.
//
//	go test ./worker -run '^$' -bench ScanTombstones -benchtime 3x
func BenchmarkScanTombstones(b *testing.B) {
	addr := kafkatest.Bootstrap(b)
	c := workertest.Connect(b, addr)
	for _, tc := range []struct{ size, records int }{{100, 1_000_000}, {1000, 250_000}} {
		size, perPartition := tc.size, tc.records/4
		b.Run(fmt.Sprintf("value=%dB", size), func(b *testing.B) {
			cl := kafkatest.Client(b, addr, kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchMaxBytes(1<<20))
			topic := kafkatest.NewTopic(b, cl, "tombstone-bench", 4, map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1"})
			value := make([]byte, size)
			ctx := context.Background()
			var bytes int64
			for p := int32(0); p < 4; p++ {
				for i := 0; i < perPartition; i += 10_000 {
					recs := make([]*kgo.Record, min(10_000, perPartition-i))
					for j := range recs {
						recs[j] = &kgo.Record{Topic: topic, Partition: p, Key: fmt.Appendf(nil, "key-%d", i+j), Value: value}
						bytes += int64(len(recs[j].Key) + size)
					}
					if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
						b.Fatal(err)
					}
				}
			}
			from := events.Offsets{0: 0, 1: 0, 2: 0, 3: 0}
			b.SetBytes(bytes)
			b.ResetTimer()
			for range b.N {
				scan, err := c.ScanTombstones(ctx, topic, from, nil, 0)
				if err != nil {
					b.Fatal(err)
				}
				n := int64(0)
				for _, ps := range scan.Partitions {
					n += ps.Read - ps.From
				}
				b.ReportMetric(float64(n), "records/op")
			}
		})
	}
}
