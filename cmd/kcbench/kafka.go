package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/worker"
)

// maxPartitionsPerRequest is how many partitions kcbench creates with one
// request. A KRaft controller refuses to write more than 10,000 records for
// one request ("Unable to perform excessively large batch operation"), and a
// new partition is one record, so bigger topics grow in steps.
const maxPartitionsPerRequest = 5000

// dataTopicConfigs are the settings docs/design.md §2 requires of a data topic; on three
// brokers also min.insync.replicas=2, as a production cluster has (docs/deploy.md).
func (b *bencher) dataTopicConfigs() map[string]*string {
	s := func(v string) *string { return &v }
	cfg := map[string]*string{
		"cleanup.policy":  s("compact,delete"),
		"retention.ms":    s("-1"),
		"retention.bytes": s("-1"),
	}
	if b.replication() >= 3 {
		cfg["min.insync.replicas"] = s("2")
	}
	return cfg
}

// replication is the replication factor of the topics kcbench creates: the broker's default
// (createTopic asks for -1), which is 3 on the three-broker cluster (more than one address in
// -bootstrap), 1 on the single development broker.
func (b *bencher) replication() int16 {
	if b.cfg.brokers() >= 3 {
		return 3
	}
	return 1
}

// seeds are kgo options naming every address of a comma-separated bootstrap list.
func seeds(bootstrap string) kgo.Opt { return kgo.SeedBrokers(strings.Split(bootstrap, ",")...) }

// createTopic creates a topic with the given partitions (in steps, see
// maxPartitionsPerRequest) and waits until every partition has a leader.
// It returns the topic ID in Kafka's text form.
func createTopic(ctx context.Context, cl *kgo.Client, name string, partitions int, configs map[string]*string) (string, error) {
	adm := kadm.NewClient(cl)
	first := min(partitions, maxPartitionsPerRequest)
	resp, err := adm.CreateTopic(ctx, int32(first), -1, configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return "", errors.Wrapf(err, "create topic %s with %d partitions", name, first)
	}
	for have := first; have < partitions; {
		next := min(partitions, have+maxPartitionsPerRequest)
		rs, err := adm.UpdatePartitions(ctx, next, name)
		if err == nil {
			var r kadm.CreatePartitionsResponse
			if r, err = rs.On(name, nil); err == nil {
				err = r.Err
			}
		}
		if err != nil {
			return "", errors.Wrapf(err, "grow topic %s from %d to %d partitions", name, have, next)
		}
		have = next
	}
	return waitForLeaders(ctx, cl, name, partitions)
}

// waitForLeaders polls uncached metadata until the topic has the given
// number of partitions and each has a leader; it returns the topic ID.
func waitForLeaders(ctx context.Context, cl *kgo.Client, topic string, partitions int) (string, error) {
	for {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0 {
			t := resp.Topics[0]
			led := 0
			for _, p := range t.Partitions {
				if p.Leader >= 0 && p.ErrorCode == 0 {
					led++
				}
			}
			if led == partitions {
				return worker.TopicIDString(t.TopicID), nil
			}
		}
		select {
		case <-ctx.Done():
			return "", errors.Wrapf(ctx.Err(), "topic %s: waiting for %d partitions to have a leader", topic, partitions)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// deleteTopics deletes topics, ignoring ones already gone.
func deleteTopics(ctx context.Context, cl *kgo.Client, topics ...string) error {
	if len(topics) == 0 {
		return nil
	}
	rs, err := kadm.NewClient(cl).DeleteTopics(ctx, topics...)
	if err != nil {
		return errors.Wrap(err, "delete topics")
	}
	for _, r := range rs {
		if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			return errors.Wrapf(r.Err, "delete topic %s", r.Topic)
		}
	}
	return nil
}

// fastProducer is a producer tuned for throughput, for generating input:
// big batches, a short linger, lz4. kcleanup's own writer is not this; it
// writes one record at a time with acks=all.
func fastProducer(bootstrap string) (*kgo.Client, error) {
	return kgo.NewClient(
		seeds(bootstrap),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1_000_000),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.Lz4Compression()),
		kgo.MaxBufferedRecords(200_000),
	)
}

// produceControlLog writes the first n records of g to partition 0 of
// topic, in order, and returns how long it took.
func produceControlLog(ctx context.Context, bootstrap, topic string, g *controlLog, n int) (time.Duration, error) {
	cl, err := fastProducer(bootstrap)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	began := time.Now()
	var mu sync.Mutex
	var first error
	failed := func() error { mu.Lock(); defer mu.Unlock(); return first }
	for i := 0; i < n && failed() == nil; i++ {
		k, v := g.Next()
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: 0, Key: k, Value: v}, func(_ *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, errors.Wrapf(err, "produce to %s", topic)
	}
	if err := failed(); err != nil {
		return 0, errors.Wrapf(err, "produce to %s", topic)
	}
	return time.Since(began), nil
}

// produceData writes perPartition small records with distinct keys to every
// partition of a data topic.
func produceData(ctx context.Context, bootstrap, topic string, partitions, perPartition int) error {
	cl, err := fastProducer(bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for p := range partitions {
		for i := range perPartition {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p),
				Key: fmt.Appendf(nil, "k-%d-%d", p, i), Value: fmt.Appendf(nil, "action-state-%d", i)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return errors.Wrapf(err, "produce to %s", topic)
	}
	return nil
}
