package worker

import (
	"cmp"
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
)

// FlinkTopic is a control topic in Flink Agents' format, folded the way a
// Flink Agents job folds it when it recovers (projector/flinkagents).
type FlinkTopic struct {
	Topic string
	// TopicID is the topic's live ID, from the uncached Metadata request
	// made with the read.
	TopicID string
	Fold    *flinkagents.Fold
	// End is the high watermark captured before reading, once the last
	// stable offset reached it (every record below End is decided).
	End int64
	// Partitions and CleanupPolicy are the topic's, for CheckTopic.
	Partitions    []int32
	CleanupPolicy string
	// MaxMessageBytes is the topic's max.message.bytes (0 when unreadable):
	// a writer's record above it is refused by the broker.
	MaxMessageBytes int
	// Visible holds, by offset, when the brokers made each folded record
	// readable to a read_committed reader (protocol.MirrorView.Visible): a
	// transactional record's time is its commit marker's timestamp, which
	// the partition leader stamps when it writes the marker; any other
	// record's is its own timestamp (a negative one, "none", is left out).
	// A record whose marker lies at or beyond End has no entry.
	Visible map[int64]time.Time
}

// Check is the job's own check of the topic and its fold: nil when the job
// would accept the control topic (it may still refuse a recovery point).
func (f *FlinkTopic) Check() error {
	if err := flinkagents.CheckTopic(f.Topic, f.Partitions, f.CleanupPolicy); err != nil {
		return err
	}
	return f.Fold.Err()
}

// ReadFlinkTopic reads a Flink Agents control topic as the job's recovery
// does: its partition 0 from the beginning, read_committed, up to the end
// offset captured first, every record folded in offset order. It fails
// with ErrTopicNotFound when the topic does not exist, and with
// ErrNotCaughtUp when ctx ends before the end is reached.
//
// The topic's metadata, configs, stable end and log start are independent
// answers, asked at once; the read is a boundedFetcher's, on the cluster's
// own client. An error is reported in that order, the first one found (a
// missing topic as missing, not as what the other questions said about it).
func (c *Cluster) ReadFlinkTopic(ctx context.Context, topic string) (*FlinkTopic, error) {
	return c.readFlinkTopic(ctx, topic, -1)
}

// readFlinkTopic is ReadFlinkTopic to end, when a caller already captured
// it as stable (the last stable offset at or above it); -1 asks for it.
func (c *Cluster) readFlinkTopic(ctx context.Context, topic string, end int64) (*FlinkTopic, error) {
	var (
		wg     sync.WaitGroup
		meta   kmsg.MetadataResponseTopic
		cfg    map[string]string
		starts events.Offsets
		errs   [4]error
	)
	wg.Go(func() { meta, errs[0] = c.metadataAgain(ctx, topic) })
	wg.Go(func() { cfg, errs[1] = c.TopicConfigs(ctx, topic) })
	if end < 0 {
		wg.Go(func() { end, errs[2] = c.stableEnd(ctx, "Flink Agents control topic", topic) })
	}
	// A log start at the end (every record deleted) sends no record to
	// move next along: nothing is left to fold.
	wg.Go(func() { starts, errs[3] = c.StartOffsets(ctx, topic) })
	wg.Wait()
	if err := cmp.Or(errs[0], errs[1], errs[2], errs[3]); err != nil {
		return nil, err
	}
	info := topicOf(meta)
	ft := &FlinkTopic{Topic: topic, TopicID: info.ID, Fold: flinkagents.New(), Partitions: info.Partitions, CleanupPolicy: cfg["cleanup.policy"], End: end}
	ft.MaxMessageBytes, _ = strconv.Atoi(cfg["max.message.bytes"])
	next := max(int64(0), starts[0])
	ft.Visible = map[int64]time.Time{}
	open := map[int64][]int64{} // producer ID → its transactional records awaiting their marker
	reader := c.newBoundedFetcher(topic)
	reader.next = next
	_ = reader.useMetadata(meta) // a partition without a leader now: the first fetch asks again
	for next < ft.End {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, errors.Mark(errors.Wrapf(ctx.Err(),
				"Flink Agents control topic %q: read to offset %d of %d", topic, next, ft.End), ErrNotCaughtUp)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if ferr == nil {
				ferr = err
			}
		})
		if ferr != nil && !kerr.IsRetriable(ferr) {
			return nil, errors.Wrapf(ferr, "read Flink Agents control topic %q", topic)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < next || r.Offset >= ft.End {
				return
			}
			next = r.Offset + 1
			if r.Attrs.IsControl() {
				if commitMarker(r.Key) {
					for _, off := range open[r.ProducerID] {
						ft.Visible[off] = r.Timestamp
					}
				}
				delete(open, r.ProducerID)
				return
			}
			switch {
			case r.Attrs.IsTransactional():
				open[r.ProducerID] = append(open[r.ProducerID], r.Offset)
			case r.Timestamp.UnixMilli() >= 0:
				ft.Visible[r.Offset] = r.Timestamp
			}
			ft.Fold.Step(flinkagents.Record{Offset: r.Offset, Key: r.Key, Value: r.Value})
		})
		// The fetcher's position counts what read_committed dropped: an aborted
		// transaction's records return nothing, and its marker may lie at or past
		// End (an end captured between the two, as settledEnd may when the high
		// watermark answers before the marker lands and the last stable offset
		// after). Without this the read waited for a record below End that never
		// comes: issue 35, item 3 ("read to offset 60 of 61").
		next = max(next, min(reader.next, ft.End))
	}
	return ft, nil
}

// commitMarker: a control record's key is its version (int16) and type
// (int16: 0 abort, 1 commit).
func commitMarker(key []byte) bool {
	return len(key) >= 4 && key[2] == 0 && key[3] == 1
}
