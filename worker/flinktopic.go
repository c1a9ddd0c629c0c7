package worker

import (
	"context"
	"strconv"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/projector/flinkagents"
)

// FlinkTopic is a control topic in Flink Agents' format, folded the way a
// Flink Agents job folds it when it recovers (projector/flinkagents).
type FlinkTopic struct {
	Topic string
	Fold  *flinkagents.Fold
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
func (c *Cluster) ReadFlinkTopic(ctx context.Context, topic string) (*FlinkTopic, error) {
	info, err := c.TopicMetadata(ctx, topic)
	if err != nil {
		return nil, err
	}
	cfg, err := c.TopicConfigs(ctx, topic)
	if err != nil {
		return nil, err
	}
	ft := &FlinkTopic{Topic: topic, Fold: flinkagents.New(), Partitions: info.Partitions, CleanupPolicy: cfg["cleanup.policy"]}
	ft.MaxMessageBytes, _ = strconv.Atoi(cfg["max.message.bytes"])
	if ft.End, err = c.stableEnd(ctx, "Flink Agents control topic", topic); err != nil {
		return nil, err
	}
	opts := append(c.ConnOpts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	reader, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, errors.Wrap(err, "create Flink Agents control-topic reader")
	}
	defer reader.Close()
	// A log start at the end (every record deleted) sends no record to
	// move next along: nothing is left to fold.
	starts, err := c.StartOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	next := max(int64(0), starts[0])
	ft.Visible = map[int64]time.Time{}
	open := map[int64][]int64{} // producer ID → its transactional records awaiting their marker
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
		if next < ft.End && fs.NumRecords() == 0 {
			// A log start above next (deleted or compacted prefix) is
			// reached by the next fetch; nothing to do here.
			continue
		}
	}
	return ft, nil
}

// commitMarker: a control record's key is its version (int16) and type
// (int16: 0 abort, 1 commit).
func commitMarker(key []byte) bool {
	return len(key) >= 4 && key[2] == 0 && key[3] == 1
}
