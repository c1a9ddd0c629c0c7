package kafkatest_test

// The Kafka behaviours kcleanup depends on (docs/design.md §9), each checked on a real Apache Kafka
// broker and on kfake side by side. Every table row has a want for each: where they differ,
// a fast kfake test must not be trusted to show what Kafka does. docs/testing.md has the
// resulting table; keep the two in step.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/internal/kafkatest"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

// backend is a kind of cluster a fact is checked on.
type backend struct {
	name      string // "real" or "kfake"; the key of every want map
	bootstrap func(t *testing.T) string
}

var backends = []backend{
	{"real", func(t *testing.T) string { return kafkatest.Bootstrap(t) }},
	{"kfake", fakeCluster},
}

// fakeCluster starts a one-broker kfake cluster for one test. Its compaction runs every
// log.cleaner.backoff.ms (default one hour), so that is lowered as on the dev broker.
func fakeCluster(t *testing.T) string {
	c, err := kfake.NewCluster(kfake.NumBrokers(1),
		kfake.BrokerConfigs(map[string]string{"log.cleaner.backoff.ms": "100"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// deleteResult is what one DeleteRecords call did to one partition.
type deleteResult struct {
	err      error // the partition's error (a kerr.Error), nil on success
	logStart int64 // the log start offset listed afterwards
}

func (r deleteResult) String() string {
	return fmt.Sprintf("{err: %v, logStart: %d}", r.err, r.logStart)
}

func (r deleteResult) equal(o deleteResult) bool {
	return errors.Is(r.err, o.err) && errors.Is(o.err, r.err) && r.logStart == o.logStart
}

// deleteRecords sends DeleteRecords for partition 0 of topic and reports the outcome.
func deleteRecords(t *testing.T, adm *kadm.Client, topic string, offset int64) deleteResult {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: offset})
	resps, err := adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatalf("DeleteRecords(%s, %d): %v", topic, offset, err)
	}
	r, ok := resps.Lookup(topic, 0)
	if !ok {
		t.Fatalf("DeleteRecords(%s, %d): no answer for partition 0", topic, offset)
	}
	res := deleteResult{err: r.Err, logStart: logStart(t, adm, topic)}
	if r.Err == nil && r.LowWatermark != res.logStart {
		t.Errorf("DeleteRecords answered low watermark %d, ListStartOffsets says %d", r.LowWatermark, res.logStart)
	}
	return res
}

func logStart(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	offs, err := adm.ListStartOffsets(ctxFor(t, 30*time.Second), topic)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		t.Fatalf("ListStartOffsets(%s): %v", topic, err)
	}
	o, _ := offs.Lookup(topic, 0)
	return o.Offset
}

// TestFactDeleteRecordsNeedsDeletePolicy: Kafka refuses DeleteRecords unless the topic's
// cleanup.policy includes delete. kfake does not check.
func TestFactDeleteRecordsNeedsDeletePolicy(t *testing.T) {
	for _, tc := range []struct {
		policy string
		want   map[string]deleteResult
	}{
		{"compact", map[string]deleteResult{
			"real":  {err: kerr.PolicyViolation, logStart: 0},
			"kfake": {err: nil, logStart: 5},
		}},
		{"compact,delete", map[string]deleteResult{
			"real":  {logStart: 5},
			"kfake": {logStart: 5},
		}},
		{"delete,compact", map[string]deleteResult{
			"real":  {logStart: 5},
			"kfake": {logStart: 5},
		}},
		{"delete", map[string]deleteResult{
			"real":  {logStart: 5},
			"kfake": {logStart: 5},
		}},
	} {
		for _, b := range backends {
			t.Run(tc.policy+"/"+b.name, func(t *testing.T) {
				cl := kafkatest.Client(t, b.bootstrap(t))
				adm := kafkatest.Admin(t, cl)
				topic := kafkatest.NewTopic(t, cl, "policy", 1, map[string]string{"cleanup.policy": tc.policy})
				kafkatest.Produce(t, cl, topic, 0, 10)
				if got, want := deleteRecords(t, adm, topic, 5), tc.want[b.name]; !got.equal(want) {
					t.Errorf("DeleteRecords to 5 on cleanup.policy=%s: got %v, want %v", tc.policy, got, want)
				}
			})
		}
	}
}

// TestFactDeleteRecordsOffsets: where the requested offset lies against the log start and
// the high watermark. The partition holds offsets 0..9 (high watermark 10); `before` moves
// the log start first when non-zero.
func TestFactDeleteRecordsOffsets(t *testing.T) {
	const policy = "compact,delete" // what a data topic has (docs/design.md §2)
	for _, tc := range []struct {
		name   string
		before int64 // DeleteRecords to this offset first (0: no)
		offset int64
		want   map[string]deleteResult
	}{
		{"above the high watermark", 0, 11, map[string]deleteResult{
			"real":  {err: kerr.OffsetOutOfRange, logStart: 0},
			"kfake": {err: kerr.OffsetOutOfRange, logStart: 0},
		}},
		{"at the high watermark", 0, 10, map[string]deleteResult{
			"real":  {logStart: 10},
			"kfake": {logStart: 10},
		}},
		{"-1 means the high watermark", 0, -1, map[string]deleteResult{
			"real":  {logStart: 10},
			"kfake": {logStart: 10},
		}},
		{"at the log start of a new topic", 0, 0, map[string]deleteResult{
			"real":  {logStart: 0},
			"kfake": {logStart: 0},
		}},
		{"at the log start", 5, 5, map[string]deleteResult{
			"real":  {logStart: 5},
			"kfake": {logStart: 5},
		}},
		{"below the log start", 5, 3, map[string]deleteResult{
			"real":  {logStart: 5},                             // succeeds, changes nothing
			"kfake": {err: kerr.OffsetOutOfRange, logStart: 5}, // kfake refuses
		}},
	} {
		for _, b := range backends {
			t.Run(tc.name+"/"+b.name, func(t *testing.T) {
				cl := kafkatest.Client(t, b.bootstrap(t))
				adm := kafkatest.Admin(t, cl)
				topic := kafkatest.NewTopic(t, cl, "offsets", 1, map[string]string{"cleanup.policy": policy})
				kafkatest.Produce(t, cl, topic, 0, 10)
				if tc.before > 0 {
					if got := deleteRecords(t, adm, topic, tc.before); got.err != nil || got.logStart != tc.before {
						t.Fatalf("setup: DeleteRecords to %d: %v", tc.before, got)
					}
				}
				if got, want := deleteRecords(t, adm, topic, tc.offset), tc.want[b.name]; !got.equal(want) {
					t.Errorf("DeleteRecords to %d: got %v, want %v", tc.offset, got, want)
				}
			})
		}
	}
}

// TestFactRecreatedTopicGetsNewID: a deleted and recreated topic keeps its name and gets a
// new topic ID, which an uncached Metadata request shows at once. What kadm's cached
// Metadata says right after is logged, not asserted (it depends on the cache's age).
func TestFactRecreatedTopicGetsNewID(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			addr := b.bootstrap(t)
			cl := kafkatest.Client(t, addr)
			adm := kafkatest.Admin(t, cl)
			cached := kafkatest.Admin(t, kafkatest.Client(t, addr)) // its own cache, default MetadataMinAge
			ctx := ctxFor(t, 2*time.Minute)

			topic := kafkatest.NewTopic(t, cl, "recreate", 1, nil)
			first, err := kafkatest.TopicIDUncached(ctx, cl, topic)
			if err != nil {
				t.Fatal(err)
			}
			if len(first) != 22 || strings.ContainsAny(first, "+/=") {
				t.Errorf("topic ID %q is not in Kafka's text form (22 chars of URL-safe base64)", first)
			}
			if got := cachedID(t, cached, topic); got != first {
				t.Fatalf("kadm.Metadata on a fresh client: %s, uncached: %s", got, first)
			}
			if b.name == "real" { // the same ID as Kafka's own tool prints
				out := kafkatest.RunTool(t, "kafka-topics", "--describe", "--topic", topic)
				if !strings.Contains(out, "TopicId: "+first+"\t") {
					t.Errorf("kafka-topics --describe does not show TopicId %s:\n%s", first, out)
				}
			}

			if _, err := adm.DeleteTopic(ctx, topic); err != nil {
				t.Fatal(err)
			}
			poll(t, ctx, "topic gone", func() error {
				_, err := kafkatest.TopicIDUncached(ctx, cl, topic)
				if errors.Is(err, kerr.UnknownTopicOrPartition) {
					return nil
				}
				return errors.Newf("metadata still answers: %v", err)
			})
			poll(t, ctx, "topic recreated", func() error {
				resp, err := adm.CreateTopic(ctx, 1, -1, nil, topic)
				if err == nil {
					err = resp.Err
				}
				return err
			})
			var second string
			poll(t, ctx, "new topic ID", func() (err error) {
				second, err = kafkatest.TopicIDUncached(ctx, cl, topic)
				return err
			})
			if second == first {
				t.Errorf("recreated topic kept its ID %s", first)
			}

			// Observation only: a client that looked the topic up before the delete.
			switch got := cachedID(t, cached, topic); got {
			case first:
				t.Logf("%s: kadm.Metadata right after the recreate returned the OLD topic ID (cached)", b.name)
			case second:
				t.Logf("%s: kadm.Metadata right after the recreate returned the new topic ID", b.name)
			default:
				t.Logf("%s: kadm.Metadata right after the recreate returned %q", b.name, got)
			}
		})
	}
}

func cachedID(t *testing.T, adm *kadm.Client, topic string) string {
	t.Helper()
	md, err := adm.Metadata(ctxFor(t, 30*time.Second), topic)
	if err != nil {
		t.Fatalf("kadm.Metadata(%s): %v", topic, err)
	}
	return kafkatest.TopicIDText(md.Topics[topic].ID)
}

// TestFactCompactionDropsSupersededKeys: with aggressive per-topic settings the log cleaner
// removes superseded records within seconds. Kafka leaves the log start offset alone;
// kfake moves it to its first surviving batch.
func TestFactCompactionDropsSupersededKeys(t *testing.T) {
	logStartMoves := map[string]bool{"real": false, "kfake": true}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			addr := b.bootstrap(t)
			cl := kafkatest.Client(t, addr)
			adm := kafkatest.Admin(t, cl)
			topic := kafkatest.NewTopic(t, cl, "compaction", 1, map[string]string{
				"cleanup.policy":            "compact",
				"segment.ms":                "100", // roll the active segment on the next append
				"min.cleanable.dirty.ratio": "0.01",
				"min.compaction.lag.ms":     "0",
				"delete.retention.ms":       "0",
			})
			const keys = 10
			produceValues(t, cl, topic, keys, "old")
			produceValues(t, cl, topic, keys, "new")

			// Only closed segments are cleaned: keep appending a record, which rolls the
			// segment once segment.ms has passed, until no "old" value is left.
			ctx := ctxFor(t, 60*time.Second)
			var latest map[string][]string
			for tick := 0; ; tick++ {
				produce(t, cl, &kgo.Record{Topic: topic, Key: []byte("tick"), Value: fmt.Appendf(nil, "%d", tick)})
				latest = readAll(t, addr, topic)
				if countValue(latest, "old") == 0 {
					break
				}
				select {
				case <-ctx.Done():
					delete(latest, "tick")
					t.Fatalf("%d superseded records still there after 60s: %v", countValue(latest, "old"), latest)
				case <-time.After(200 * time.Millisecond):
				}
			}
			for i := range keys {
				k := fmt.Sprintf("k%d", i)
				if got := latest[k]; len(got) != 1 || got[0] != "new" {
					t.Errorf("key %s: values %v, want [new]", k, got)
				}
			}
			if moved := logStart(t, adm, topic) > 0; moved != logStartMoves[b.name] {
				t.Errorf("compaction moved the log start: %v, want %v", moved, logStartMoves[b.name])
			}
		})
	}
}

// poll calls f until it returns nil, and fails the test with f's last error when ctx ends.
func poll(t *testing.T, ctx context.Context, what string, f func() error) {
	t.Helper()
	for {
		err := f()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// produceValues writes keys k0..k(n-1), all with value v, in one batch to partition 0.
func produceValues(t *testing.T, cl *kgo.Client, topic string, n int, v string) {
	t.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i), Value: []byte(v)}
	}
	produce(t, cl, recs...)
}

func produce(t *testing.T, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(ctxFor(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// readAll reads partition 0 of topic from its log start to the high watermark captured
// first, and returns the values of each key in offset order.
func readAll(t *testing.T, addr, topic string) map[string][]string {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	cl := kafkatest.Client(t, addr,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("ListEndOffsets(%s): %v", topic, err)
	}
	end, _ := ends.Lookup(topic, 0)
	values := map[string][]string{}
	// The record just below the high watermark is in the active segment, which is never
	// compacted, so reading until it arrives reads everything.
	for last := int64(-1); last < end.Offset-1; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("fetch %s: %v", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			values[string(r.Key)] = append(values[string(r.Key)], string(r.Value))
			last = r.Offset
		})
	}
	return values
}

func countValue(values map[string][]string, v string) int {
	n := 0
	for _, vs := range values {
		for _, x := range vs {
			if x == v {
				n++
			}
		}
	}
	return n
}

// TestFactTopicConfigValidation: Kafka refuses a topic config it does not know, or a value
// it cannot use, when the topic is created. kcleanup's config checks must not rely on
// kfake for this.
func TestFactTopicConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		configs map[string]string
		want    map[string]error // CreateTopics' error for the topic
	}{
		{"unknown config", map[string]string{"retention.msec": "-1"}, map[string]error{
			"real":  kerr.InvalidConfig,
			"kfake": nil,
		}},
		{"unknown cleanup.policy", map[string]string{"cleanup.policy": "compact,archive"}, map[string]error{
			"real":  kerr.InvalidConfig,
			"kfake": nil,
		}},
		{"known config and value", map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "-1"}, map[string]error{
			"real":  nil,
			"kfake": nil,
		}},
	} {
		for _, b := range backends {
			t.Run(tc.name+"/"+b.name, func(t *testing.T) {
				cl := kafkatest.Client(t, b.bootstrap(t))
				adm := kafkatest.Admin(t, cl)
				ctx := ctxFor(t, 30*time.Second)
				cfgs := map[string]*string{}
				for k, v := range tc.configs {
					cfgs[k] = kadm.StringPtr(v)
				}
				topic := fmt.Sprintf("configs-%d", time.Now().UnixNano())
				resp, err := adm.CreateTopic(ctx, 1, -1, cfgs, topic) // err is the topic's error too
				if err == nil {
					err = resp.Err
				}
				if err == nil {
					t.Cleanup(func() { _, _ = adm.DeleteTopic(context.Background(), topic) })
				}
				if want := tc.want[b.name]; !errors.Is(err, want) || (want == nil) != (err == nil) {
					t.Errorf("CreateTopics with %v: got %v, want %v", tc.configs, err, want)
				}
			})
		}
	}
}
