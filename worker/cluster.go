package worker

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/topicconfig"
)

// ErrTopicNotFound is returned when a topic does not exist on the cluster.
var ErrTopicNotFound = errors.New("topic does not exist")

// Cluster is kcleanup's view of one Kafka cluster: the few admin calls the
// protocol needs, each answered per partition and never from a cache, and the
// control-topic reads and writes.
type Cluster struct {
	opts []kgo.Opt // connection options, reused for each control-topic reader
	cl   *kgo.Client
	adm  *kadm.Client

	principal string // the Kafka principal of cl, for messages; "" when unknown

	// scanned is the last first-plan tombstone scan, by topic and ID: a
	// run after its own preflight (apply creating the control topic) reads
	// only what is new (protocol.Continue).
	scanMu  sync.Mutex
	scanned map[string]*protocol.TombstoneScan

	// bound caches the bindings GovernorsOf read, by the control topic's
	// topic ID: a binding (the first accepted PLANNED) never changes for one
	// incarnation of a control topic, so only new and unbound candidates are
	// read again (a worker's POST /v1/validate asks on every request).
	boundMu sync.Mutex
	bound   map[[16]byte]string
}

// Connect creates a Cluster from franz-go connection options (seed brokers,
// TLS, SASL). Records it writes go to an explicit partition with acks=all and
// the idempotent producer. Close releases it. Its Metadata requests never ask
// the broker to create a topic (franz-go's default, without
// kgo.AllowAutoTopicCreation): a write to a missing control topic fails, even
// on a broker with auto.create.topics.enable=true, and only kcleanup init
// (or adopt) creates one.
func Connect(opts ...kgo.Opt) (*Cluster, error) {
	own := append(slices.Clone(opts),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchMaxBytes(topicconfig.MaxControlRecordBytes),
	)
	cl, err := kgo.NewClient(own...)
	if err != nil {
		return nil, errors.Wrap(err, "create Kafka client")
	}
	return &Cluster{opts: opts, cl: cl, adm: kadm.NewClient(cl)}, nil
}

// Close releases the cluster's connections.
func (c *Cluster) Close() { c.cl.Close() }

// Client returns the underlying franz-go client.
func (c *Cluster) Client() *kgo.Client { return c.cl }

// ConnOpts returns a copy of the connection options the cluster was created
// with (seed brokers, TLS, SASL), for callers that need a client of their own:
// the worker's consumer-group member, a test's raw reader.
func (c *Cluster) ConnOpts() []kgo.Opt { return slices.Clone(c.opts) }

// TopicIDString renders a topic ID the way Kafka's tools print it. kadm's
// TopicID.String uses padded standard base64, which is not Kafka's text form.
func TopicIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// ListTopics names every topic of the cluster the principal may describe,
// but Kafka's internal ones, sorted, from one Metadata request (a fleet that
// serves control topics by a regular expression looks for new ones with it).
func (c *Cluster) ListTopics(ctx context.Context) ([]string, error) {
	td, err := c.adm.ListTopics(ctx)
	if err != nil {
		return nil, errors.Wrap(err, "list topics")
	}
	var names []string
	for name, t := range td {
		if t.Err == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// HighWatermarks lists the high watermark of partition 0 of every topic
// given, in one ListOffsets request per broker: a replica serving many
// control topics learns with it which ones have new records. A topic
// missing from the answer (or with an error) is missing from the map.
func (c *Cluster) HighWatermarks(ctx context.Context, topics ...string) (map[string]int64, error) {
	if len(topics) == 0 {
		return map[string]int64{}, nil // kadm would list every topic
	}
	lo, err := c.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, errors.Wrap(err, "list the ends of the control topics")
	}
	out := make(map[string]int64, len(topics))
	for _, t := range topics {
		if o, ok := lo.Lookup(t, 0); ok && o.Err == nil {
			out[t] = o.Offset
		}
	}
	return out, nil
}

// TopicMetadata returns a topic's ID and partitions from an uncached Metadata
// request: kadm.Metadata may answer from a cache for seconds, long enough to
// miss a deleted and recreated topic.
func (c *Cluster) TopicMetadata(ctx context.Context, topic string) (protocol.Topic, error) {
	t, err := c.metadataAgain(ctx, topic)
	if err != nil {
		return protocol.Topic{Name: topic}, err
	}
	return topicOf(t), nil
}

// metadataAgain is metadataTopic asked again on a transient answer, within ctx.
func (c *Cluster) metadataAgain(ctx context.Context, topic string) (t kmsg.MetadataResponseTopic, err error) {
	err = askAgain(ctx, func(ctx context.Context) (err error) {
		t, err = c.metadataTopic(ctx, topic)
		return err
	})
	return t, err
}

// topicOf is a topic's ID and partitions from its Metadata answer.
func topicOf(t kmsg.MetadataResponseTopic) protocol.Topic {
	info := protocol.Topic{Name: *t.Topic, ID: TopicIDString(t.TopicID)}
	for _, p := range t.Partitions {
		info.Partitions = append(info.Partitions, p.Partition)
		if p.Partition == 0 {
			info.Replicas = len(p.Replicas)
		}
	}
	slices.Sort(info.Partitions)
	return info
}

// metadataTopic is a topic's answer to one uncached Metadata request
// (TopicMetadata), with its leaders. A topic-level error such as
// LEADER_NOT_AVAILABLE (a topic being created, a leader moving) stays in
// the chain, so that TopicMetadata asks again.
func (c *Cluster) metadataTopic(ctx context.Context, topic string) (kmsg.MetadataResponseTopic, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, c.cl)
	if err != nil {
		return kmsg.MetadataResponseTopic{}, errors.Wrapf(err, "metadata request for topic %q", topic)
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				return t, errors.Mark(errors.Newf("topic %q does not exist", topic), ErrTopicNotFound)
			}
			return t, c.denied(errors.Wrapf(err, "metadata for topic %q", topic),
				protocol.Permission{Operation: "Describe", ResourceType: "topic", Resource: topic, For: "read the topic's metadata"})
		}
		return t, nil
	}
	return kmsg.MetadataResponseTopic{}, errors.Mark(errors.Newf("topic %q does not exist", topic), ErrTopicNotFound)
}

// DescribeTopic gathers a topic's ID, partitions, configs and offsets: the
// ID first (uncached Metadata), then the configs, log starts and high
// watermarks, asked at once (they address the topic by name, so they are
// asked only after its ID, never before it). An error is reported in that
// order.
func (c *Cluster) DescribeTopic(ctx context.Context, topic string) (protocol.Topic, error) {
	info, err := c.TopicMetadata(ctx, topic)
	if err != nil {
		return info, err
	}
	var errs [3]error
	var wg sync.WaitGroup
	wg.Go(func() { info.Configs, errs[0] = c.TopicConfigs(ctx, topic) })
	wg.Go(func() { info.Start, errs[1] = c.StartOffsets(ctx, topic) })
	info.End, errs[2] = c.EndOffsets(ctx, topic)
	wg.Wait()
	return info, cmp.Or(errs[0], errs[1], errs[2])
}

// TopicConfigs returns the effective value of every config of a topic.
func (c *Cluster) TopicConfigs(ctx context.Context, topic string) (map[string]string, error) {
	perm := protocol.Permission{Operation: "DescribeConfigs", ResourceType: "topic", Resource: topic, For: "read the topic's configs"}
	var rc kadm.ResourceConfig
	err := askAgain(ctx, func(ctx context.Context) error {
		rcs, err := c.adm.DescribeTopicConfigs(ctx, topic)
		if err == nil {
			rc, err = rcs.On(topic, nil)
		}
		if err == nil {
			err = rc.Err
		}
		return err
	})
	if err != nil {
		return nil, c.denied(errors.Wrapf(err, "describe configs of topic %q", topic), perm)
	}
	out := make(map[string]string, len(rc.Configs))
	for _, cfg := range rc.Configs {
		out[cfg.Key] = cfg.MaybeValue()
	}
	return out, nil
}

// StartOffsets lists the log-start offset of every partition of a topic.
func (c *Cluster) StartOffsets(ctx context.Context, topic string) (events.Offsets, error) {
	var out events.Offsets
	err := askAgain(ctx, func(ctx context.Context) error {
		lo, err := c.adm.ListStartOffsets(ctx, topic)
		out, err = listed(lo, err, topic, "log-start")
		return err
	})
	return out, c.denied(err, protocol.Permission{Operation: "Describe", ResourceType: "topic", Resource: topic, For: "list the topic's offsets"})
}

// EndOffsets lists the high watermark of every partition of a topic.
func (c *Cluster) EndOffsets(ctx context.Context, topic string) (events.Offsets, error) {
	var out events.Offsets
	err := askAgain(ctx, func(ctx context.Context) error {
		lo, err := c.adm.ListEndOffsets(ctx, topic)
		out, err = listed(lo, err, topic, "end")
		return err
	})
	return out, c.denied(err, protocol.Permission{Operation: "Describe", ResourceType: "topic", Resource: topic, For: "list the topic's offsets"})
}

// CommittedOffsets lists the last stable offset of every partition of a topic: the end a
// read_committed reader reaches.
func (c *Cluster) CommittedOffsets(ctx context.Context, topic string) (events.Offsets, error) {
	var out events.Offsets
	err := askAgain(ctx, func(ctx context.Context) error {
		lo, err := c.adm.ListCommittedOffsets(ctx, topic)
		out, err = listed(lo, err, topic, "last stable")
		return err
	})
	return out, c.denied(err, protocol.Permission{Operation: "Describe", ResourceType: "topic", Resource: topic, For: "list the topic's offsets"})
}

func listed(lo kadm.ListedOffsets, err error, topic, what string) (events.Offsets, error) {
	if err != nil {
		return nil, errors.Wrapf(err, "list %s offsets of topic %q", what, topic)
	}
	out := events.Offsets{}
	var errs []string
	denied := false
	var retriable error // one partition's error when every failed partition's is transient
	allTransient := true
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			errs = append(errs, fmt.Sprintf("%s-%d: %v", o.Topic, o.Partition, o.Err))
			denied = denied || errors.Is(o.Err, kerr.TopicAuthorizationFailed)
			allTransient = allTransient && transient(o.Err)
			retriable = o.Err
			return
		}
		out[o.Partition] = o.Offset
	})
	if len(errs) > 0 {
		slices.Sort(errs)
		msg := fmt.Sprintf("list %s offsets of topic %q failed for %d partition(s): %s",
			what, topic, len(errs), strings.Join(errs, "; "))
		if allTransient {
			// Kept in the chain: the caller asks again (askAgain).
			return nil, errors.Wrap(retriable, msg)
		}
		err := errors.Newf("%s", msg)
		if denied {
			// Retrying cannot help until an operator grants Describe (the caller names it).
			err = errors.Mark(errors.Mark(err, protocol.ErrBlocked), kerr.TopicAuthorizationFailed)
		}
		return nil, err
	}
	return out, nil
}

// DeleteResult is the broker's answer for one partition of a DeleteRecords.
type DeleteResult struct {
	Partition int32
	// LowWatermark is the log-start offset after the deletion.
	LowWatermark int64
	Err          error
}

// DeleteRecords asks the broker to delete every record below the given
// offsets. Results are reported per partition, sorted; err is set only when
// the request as a whole could not be issued. A timeout does not mean that
// nothing happened: callers verify with StartOffsets.
//
// A request that failed, or whose failed partitions all failed transiently (a leader that
// moved or just died), is sent again within ctx with the same offsets: deleting below an
// offset twice deletes nothing more, so the repeat is safe.
func (c *Cluster) DeleteRecords(ctx context.Context, topic string, to events.Offsets) ([]DeleteResult, error) {
	if len(to) == 0 {
		return nil, nil
	}
	os := kadm.Offsets{}
	for p, o := range to {
		os.AddOffset(topic, p, o, -1)
	}
	var resp kadm.DeleteRecordsResponses
	var err error // the request's, not a partition's
	_ = askAgain(ctx, func(ctx context.Context) error {
		if resp, err = c.adm.DeleteRecords(ctx, os); err != nil {
			return err
		}
		var failed error
		for p := range to {
			r, ok := resp.Lookup(topic, p)
			switch {
			case ok && r.Err != nil && !transient(r.Err):
				return nil // a lasting answer for one partition: reported as is
			case ok && r.Err != nil:
				failed = r.Err
			}
		}
		return failed
	})
	if err != nil {
		return nil, errors.Wrapf(err, "delete records of topic %q", topic)
	}
	var out []DeleteResult
	for p := range to {
		r, ok := resp.Lookup(topic, p)
		if !ok {
			out = append(out, DeleteResult{Partition: p, Err: errors.Newf("no answer for %s-%d", topic, p)})
			continue
		}
		out = append(out, DeleteResult{Partition: p, LowWatermark: r.LowWatermark, Err: c.denied(r.Err, permDataDelete(topic))})
	}
	slices.SortFunc(out, func(a, b DeleteResult) int { return int(a.Partition) - int(b.Partition) })
	return out, nil
}
