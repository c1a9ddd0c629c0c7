package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// timeout bounds every helper's round trip: a broker that does not answer fails the test
// instead of hanging it.
const timeout = 30 * time.Second

// Client returns a kgo client for bootstrap, closed when the test ends. Records are produced
// to the partition set on them (manual partitioner); later opts override earlier ones.
func Client(t testing.TB, bootstrap string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(bootstrap),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatalf("kafkatest: new client for %s: %v", bootstrap, err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Admin returns a kadm client over cl (closing cl, at cleanup, is enough).
func Admin(t testing.TB, cl *kgo.Client) *kadm.Client {
	t.Helper()
	return kadm.NewClient(cl)
}

// NewTopic creates a topic named prefix-<random> with the given partitions and topic configs
// (replication factor: the broker's default), waits until its every partition has a leader,
// and deletes it when the test ends. It returns the name.
func NewTopic(t testing.TB, cl *kgo.Client, prefix string, partitions int32, configs map[string]string) string {
	t.Helper()
	name := UniqueName(prefix)
	CreateTopic(t, cl, name, partitions, configs)
	return name
}

// UniqueName is prefix-<12 random hex digits>: a topic or group no other test uses.
func UniqueName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// CreateTopic is NewTopic with an exact name (for tests that delete and recreate a topic).
// The cleanup tolerates a topic that the test already deleted.
func CreateTopic(t testing.TB, cl *kgo.Client, name string, partitions int32, configs map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cfgs := make(map[string]*string, len(configs))
	for k, v := range configs {
		cfgs[k] = kadm.StringPtr(v)
	}
	adm := kadm.NewClient(cl)
	for attempt := 0; ; attempt++ {
		resp, err := adm.CreateTopic(ctx, partitions, -1, cfgs, name)
		if err == nil {
			err = resp.Err
		}
		if err == nil || attempt > 0 && errors.Is(err, kerr.TopicAlreadyExists) {
			break // a retried request may find what the first one made
		}
		// A broker that missed its heartbeats to the controller on a loaded machine is
		// fenced for a moment: no broker is available to place the replicas on.
		if (kerr.IsRetriable(err) || errors.Is(err, kerr.InvalidReplicationFactor)) && ctx.Err() == nil {
			time.Sleep(500 * time.Millisecond)
			continue
		}
		t.Fatalf("kafkatest: create topic %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		resp, err := adm.DeleteTopic(ctx, name)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Errorf("kafkatest: delete topic %s at cleanup: %v", name, err)
		}
	})
	waitForLeaders(t, cl, name, partitions)
}

// waitForLeaders polls uncached metadata until every partition of topic has a leader: a
// broker may answer CreateTopics before its own metadata shows the topic.
func waitForLeaders(t testing.TB, cl *kgo.Client, topic string, partitions int32) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		mt, err := uncachedTopic(context.Background(), cl, topic)
		if err == nil && int32(len(mt.Partitions)) == partitions && allLed(mt.Partitions) {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("kafkatest: topic %s: partitions without a leader after %s", topic, timeout)
}

func allLed(ps []kmsg.MetadataResponseTopicPartition) bool {
	for _, p := range ps {
		if p.Leader < 0 || p.ErrorCode != 0 {
			return false
		}
	}
	return true
}

// Produce writes n records to one partition in one go and fails the test on any error.
// Keys are unique (a random tag and the index), so compaction keeps them all.
func Produce(t testing.TB, cl *kgo.Client, topic string, partition int32, n int) {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	tag := hex.EncodeToString(b[:])
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{
			Topic:     topic,
			Partition: partition,
			Key:       fmt.Appendf(nil, "%s-%d", tag, i),
			Value:     fmt.Appendf(nil, "value-%d", i),
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, r := range cl.ProduceSync(ctx, recs...) {
		if r.Err != nil {
			t.Fatalf("kafkatest: produce to %s/%d: %v", topic, partition, r.Err)
		}
		if r.Record.Partition != partition {
			t.Fatalf("kafkatest: produced to %s/%d, wanted partition %d: use kafkatest.Client or kgo.ManualPartitioner",
				topic, r.Record.Partition, partition)
		}
	}
}

// TopicIDUncached asks the broker, with a Metadata request of its own, for the ID of topic,
// and returns it in Kafka's text form (TopicIDText). Use it, not kadm's Metadata, whenever
// the answer decides something: kadm answers from a cache for a few seconds (MetadataMinAge,
// default 5s), so right after a delete and recreate it can return the old incarnation's ID.
func TopicIDUncached(ctx context.Context, cl *kgo.Client, topic string) (string, error) {
	mt, err := uncachedTopic(ctx, cl, topic)
	if err != nil {
		return "", err
	}
	if mt.TopicID == [16]byte{} {
		return "", errors.Newf("topic %s: the broker returned no topic ID (Kafka older than 2.8?)", topic)
	}
	return TopicIDText(mt.TopicID), nil
}

// uncachedTopic sends one Metadata request for topic. kgo's Client.Request always goes to
// a broker for a MetadataRequest (it refreshes its cache from the answer, never the reverse).
func uncachedTopic(ctx context.Context, cl *kgo.Client, topic string) (kmsg.MetadataResponseTopic, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = false
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.MetadataResponseTopic{}, errors.Wrapf(err, "metadata for topic %s", topic)
	}
	if len(resp.Topics) != 1 {
		return kmsg.MetadataResponseTopic{}, errors.Newf("metadata for topic %s: %d topics in the answer", topic, len(resp.Topics))
	}
	mt := resp.Topics[0]
	if err := kerr.ErrorForCode(mt.ErrorCode); err != nil {
		return mt, errors.Wrapf(err, "metadata for topic %s", topic)
	}
	return mt, nil
}

// TopicIDText formats a topic ID as Kafka does (Uuid.toString, what `kafka-topics --describe`
// prints): URL-safe base64 without padding, 22 characters. Note that kadm.TopicID.String
// uses standard base64 with padding (24 characters, may contain + and /): not this form.
func TopicIDText(id [16]byte) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// Eventually polls cond until it holds, failing the test with what it waited
// for once within has passed. It is the one way tests wait for a state.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// DeleteRecordsAfterConfigChange runs DeleteRecords until the broker accepts it, within 30 s:
// a broker applies an altered topic config a moment after AlterConfigs answers, and until then
// DeleteRecords meets the old cleanup.policy (POLICY_VIOLATION).
func DeleteRecordsAfterConfigChange(t testing.TB, ctx context.Context, adm *kadm.Client, offs kadm.Offsets) {
	t.Helper()
	var last error
	Eventually(t, 30*time.Second, "DeleteRecords under the new cleanup.policy", func() bool {
		resp, err := adm.DeleteRecords(ctx, offs)
		if err == nil {
			err = resp.Error()
		}
		last = err
		return err == nil
	})
	if last != nil {
		t.Fatalf("DeleteRecords: %v", last)
	}
}
