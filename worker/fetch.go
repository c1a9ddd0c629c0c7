package worker

import (
	"context"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Bounded reads (a mirror read as the Flink Agents job reads it, the gate's
// fresh read of a control topic) read partition 0 of a topic from its start
// to an end captured first, then stop. A consumer client for each costs a
// connection, a metadata load, a listing of the start offset and its
// goroutines (an apply with a mirror attached made seven), and a consumer
// kept between reads still waits for a metadata update whenever a partition
// is added. A boundedFetcher sends Fetch requests of its own on the
// cluster's client instead: read_committed, sessionless, to the partition's
// leader from an uncached Metadata request, decoded by franz-go's own
// kgo.ProcessFetchPartition (aborted transactions dropped, control records
// kept: transaction markers occupy offsets, and without them a read could
// never prove it reached the end). Issue 23, items 4 and 6.

// boundedFetchBytes bounds one fetch of a bounded read (the broker returns a
// first batch larger than this whole, KIP-74).
const boundedFetchBytes = 16 << 20

// boundedFetchWait is a bounded fetch's max wait: a read stops at an end
// whose records are already there, so the broker waits only at the end of
// a partition whose every record below the end was deleted.
const boundedFetchWait = 10 * time.Millisecond

// boundedRetryPause is the pause before a fetch that failed retriably
// (a leader that moved) is sent again, to the leader asked afresh.
const boundedRetryPause = 50 * time.Millisecond

// boundedFetcher polls partition 0 of one topic, from its log start on.
type boundedFetcher struct {
	c     *Cluster
	topic string
	next  int64 // the offset the next fetch asks for

	located bool
	leader  int32
	id      [16]byte

	ahead *kgo.FetchPartition // a fetch made ahead (prefetch), for the next poll
}

func (c *Cluster) newBoundedFetcher(topic string) *boundedFetcher {
	return &boundedFetcher{c: c, topic: topic}
}

// locate asks an uncached Metadata request for the partition's leader and
// the topic's ID.
func (f *boundedFetcher) locate(ctx context.Context) error {
	t, err := f.c.metadataTopic(ctx, f.topic)
	if err != nil {
		return err
	}
	return f.useMetadata(t)
}

// useMetadata takes the leader and the ID from a Metadata answer the
// caller asked anyway.
func (f *boundedFetcher) useMetadata(t kmsg.MetadataResponseTopic) error {
	for _, p := range t.Partitions {
		if p.Partition == 0 {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return errors.Wrapf(err, "topic %q partition 0", f.topic)
			}
			f.leader, f.id, f.located = p.Leader, t.TopicID, true
			return nil
		}
	}
	return errors.Mark(errors.Newf("topic %q has no partition 0", f.topic), ErrTopicNotFound)
}

// prefetch makes the first fetch while the caller asks the end it reads to
// (a read_committed fetch returns nothing that is not decided; what it
// returns beyond the end is what a consumer's fetch ahead returns too).
// A failure is left for PollFetches to meet again.
func (f *boundedFetcher) prefetch(ctx context.Context) {
	if fp, err := f.fetch(ctx); err == nil {
		f.ahead = &fp
	}
}

// PollFetches sends one Fetch and returns what it read, as a kgo consumer
// would: records at or above the offset asked, or the partition's error
// when retrying will not help (a denied read). What a consumer retries by
// itself is retried here too, bounded by ctx like every read: a failed
// request or a retriable error (a leader that moved, an offset not yet
// available) returns no records after boundedRetryPause, the leader to be
// asked again; an offset below the log start moves to the log start.
func (f *boundedFetcher) PollFetches(ctx context.Context) kgo.Fetches {
	if f.ahead != nil {
		fp := *f.ahead
		f.ahead = nil
		return kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: f.topic, Partitions: []kgo.FetchPartition{fp}}}}}
	}
	fp, err := f.fetch(ctx)
	var ke *kerr.Error
	switch {
	case err == nil:
	case !errors.As(err, &ke) || ke.Retriable:
		f.located = false
		sleepCtx(ctx, boundedRetryPause)
		fp = kgo.FetchPartition{Partition: 0}
	default:
		fp = kgo.FetchPartition{Partition: 0, Err: err}
	}
	return kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: f.topic, Partitions: []kgo.FetchPartition{fp}}}}}
}

func (f *boundedFetcher) fetch(ctx context.Context) (kgo.FetchPartition, error) {
	if !f.located {
		if err := f.locate(ctx); err != nil {
			return kgo.FetchPartition{}, err
		}
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(boundedFetchWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = boundedFetchBytes
	req.IsolationLevel = 1 // read_committed
	req.SessionEpoch = -1  // no fetch session: every fetch stands alone
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = f.topic, f.id // the name up to v12, the ID from v13
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, f.next, boundedFetchBytes
	rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := f.c.cl.Broker(int(f.leader)).Request(ctx, req)
	if err != nil {
		return kgo.FetchPartition{}, errors.Wrapf(err, "fetch topic %q", f.topic)
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return kgo.FetchPartition{}, errors.Wrapf(err, "fetch topic %q", f.topic)
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			p := &resp.Topics[i].Partitions[j]
			if p.Partition != 0 {
				continue
			}
			err := kerr.ErrorForCode(p.ErrorCode)
			if errors.Is(err, kerr.OffsetOutOfRange) {
				// A deleted prefix: read on from the log start.
				starts, err := f.c.StartOffsets(ctx, f.topic)
				if err != nil {
					return kgo.FetchPartition{}, err
				}
				if s, ok := starts[0]; ok && s > f.next {
					f.next = s
					return kgo.FetchPartition{Partition: 0}, nil
				}
			}
			if err != nil {
				return kgo.FetchPartition{}, errors.Wrapf(err, "fetch topic %q", f.topic)
			}
			fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
				KeepControlRecords: true, Offset: f.next, IsolationLevel: kgo.ReadCommitted(), Topic: f.topic, Partition: 0,
			}, p, kgo.DefaultDecompressor(), nil)
			if fp.Err != nil {
				return kgo.FetchPartition{}, errors.Wrapf(fp.Err, "fetch topic %q", f.topic)
			}
			f.next = max(f.next, next)
			return fp, nil
		}
	}
	return kgo.FetchPartition{}, errors.Wrapf(kerr.UnknownTopicOrPartition, "fetch topic %q: no answer for partition 0", f.topic)
}
