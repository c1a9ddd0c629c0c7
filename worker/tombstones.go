package worker

import (
	"context"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
)

// DefaultTombstoneScanLimit is how many records a tombstone scan reads at
// most, over all partitions, unless told otherwise: about 11–14 s of
// 100-byte records on the development broker, 33–63 s of 1 KB ones
// (docs/benchmarks.md, "Tombstone scan").
const DefaultTombstoneScanLimit = 10_000_000

// ScanTombstones reads topic's partitions from the given offsets (each
// raised to the log start) up to the last stable offset listed first,
// read_committed, as a Flink job's recovery reads them, and reports per
// partition the latest tombstone (a record with a null value) it saw. A
// partition of prior that covers the start is continued where it stopped
// (protocol.Continue), so that a repeated scan reads only new records. It
// reads at most limit records over all partitions (0: no limit); a
// partition it could not read to its end is reported with Read below To,
// which the rules read as cannot tell, never as "no tombstones".
//
// Kafka sends whole record batches, values included: a fetch cannot ask
// for keys and null flags only. The scan keeps nothing of a record but its
// offset and whether its value is null, so its memory is the fetch buffers.
func (c *Cluster) ScanTombstones(ctx context.Context, topic string, from events.Offsets, prior *protocol.TombstoneScan, limit int64) (protocol.TombstoneScan, error) {
	scan := protocol.TombstoneScan{Partitions: map[int32]protocol.PartitionScan{}, Limit: limit}
	starts, err := c.StartOffsets(ctx, topic)
	if err != nil {
		return scan, err
	}
	ends, err := c.CommittedOffsets(ctx, topic)
	if err != nil {
		return scan, err
	}
	raised := events.Offsets{}
	for p, off := range from {
		if _, ok := ends[p]; ok {
			raised[p] = max(off, starts[p])
		} else {
			// Not a partition of the topic: it holds no tombstone (the preflight refuses a
			// plan that names it; a boundary may carry it from another writer's field).
			scan.Partitions[p] = protocol.PartitionScan{From: off, To: off, Read: off, Latest: -1}
		}
	}
	consume := map[int32]kgo.Offset{}
	for p, ps := range protocol.Continue(raised, prior) {
		ps.To = ends[p]
		ps.Read = min(max(ps.Read, starts[p]), ps.To) // a prefix deleted since holds nothing to read
		if !ps.Complete() {
			consume[p] = kgo.NewOffset().At(ps.Read)
		}
		scan.Partitions[p] = ps
	}
	if len(consume) == 0 {
		return scan, nil
	}
	reader, err := kgo.NewClient(append(c.ConnOpts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: consume}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), // transaction markers move Read along too
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.FetchMaxBytes(64<<20),
		kgo.FetchMaxPartitionBytes(16<<20),
	)...)
	if err != nil {
		return scan, errors.Wrap(err, "create the tombstone scan's reader")
	}
	defer reader.Close()
	read := int64(0)
	for len(consume) > 0 && (limit <= 0 || read < limit) {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			// What was read stands; the rest is reported unread (cannot tell).
			return scan, errors.Wrapf(ctx.Err(), "scan topic %q for tombstones", topic)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if ferr == nil {
				ferr = err
			}
		})
		if ferr != nil && !kerr.IsRetriable(ferr) {
			return scan, c.denied(errors.Wrapf(ferr, "scan topic %q for tombstones", topic), protocol.DataRead(topic))
		}
		fs.EachRecord(func(r *kgo.Record) {
			ps, ok := scan.Partitions[r.Partition]
			if !ok || r.Offset < ps.Read || r.Offset >= ps.To || (limit > 0 && read >= limit) {
				return
			}
			read++
			ps.Read = r.Offset + 1
			if r.Value == nil && !r.Attrs.IsControl() {
				ps.Latest = r.Offset
			}
			scan.Partitions[r.Partition] = ps
		})
		for p := range consume {
			if scan.Partitions[p].Complete() {
				delete(consume, p)
				reader.PauseFetchPartitions(map[string][]int32{topic: {p}})
			}
		}
	}
	return scan, nil
}

// scanFirstPlan is the scan a Describe step asks for, continued from the
// last one of the same topic incarnation.
func (c *Cluster) scanFirstPlan(ctx context.Context, info protocol.Topic, from events.Offsets, limit int64) (protocol.TombstoneScan, error) {
	key := info.Name + "/" + info.ID
	c.scanMu.Lock()
	prior := c.scanned[key]
	c.scanMu.Unlock()
	scan, err := c.ScanTombstones(ctx, info.Name, from, prior, limit)
	if err == nil {
		c.scanMu.Lock()
		if c.scanned == nil {
			c.scanned = map[string]*protocol.TombstoneScan{}
		}
		c.scanned[key] = &scan
		c.scanMu.Unlock()
	}
	return scan, err
}

// ScanTombstonesUnder is ScanTombstones under the no-tombstones declaration st holds for
// topic (name and ID): it reads only what the declaration leaves of from
// (protocol.TombstoneScanFrom; nothing at all when it covers every partition, so no Read on
// the data topic is needed) and counts the covered partitions read with none
// (protocol.Declared). For doctor and status, which judge as the workers do.
func (c *Cluster) ScanTombstonesUnder(ctx context.Context, st *projector.State, topic, topicID string, from events.Offsets, limit int64) (protocol.TombstoneScan, error) {
	read := protocol.TombstoneScanFrom(st, topic, topicID, from)
	var scan *protocol.TombstoneScan
	if len(read) > 0 {
		s, err := c.ScanTombstones(ctx, topic, read, nil, limit)
		if err != nil {
			return s, err
		}
		scan = &s
	}
	return protocol.Declared(st, topic, topicID, from, scan), nil
}
