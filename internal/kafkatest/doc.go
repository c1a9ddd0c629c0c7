// Package kafkatest gives integration tests a real Apache Kafka broker and the few helpers
// every such test needs. Fast tests use kfake (franz-go's in-process fake); every claim about
// how Kafka itself behaves is proven here against a real broker, and facts_test.go pins down
// where the two differ (docs/testing.md has the table).
//
// Where the broker comes from, in order (Bootstrap):
//
//  1. KCLEANUP_TEST_BOOTSTRAP=host:port, set by `make test` (cmd/kafkadev/kafka.sh test),
//     or by hand: `make kafka-up` then KCLEANUP_TEST_BOOTSTRAP=$(cat .kafka/bootstrap).
//  2. A Docker engine that answers: one testcontainers-go Kafka container per test binary.
//  3. Neither: the test fails and says how to get a broker. It never skips for want of a
//     broker, so CI (CI=true) cannot pass without running the integration tests.
//
// Under `go test -short` (make test-unit) Bootstrap skips the test instead.
//
// A package whose tests call Bootstrap should end the Docker broker (if one was started)
// when its tests are done:
//
//	func TestMain(m *testing.M) { kafkatest.Main(m) }
//
// Without it, testcontainers' reaper removes the container when the test binary exits.
//
// Helpers (each one registers its own cleanup with t.Cleanup):
//
//	cl := kafkatest.Client(t, kafkatest.Bootstrap(t))   // kgo client, manual partitioner
//	topic := kafkatest.NewTopic(t, cl, "data", 2, map[string]string{"cleanup.policy": "compact,delete"})
//	kafkatest.Produce(t, cl, topic, 0, 100)               // 100 keyed records to partition 0
//	id, err := kafkatest.TopicIDUncached(ctx, cl, topic)  // Kafka's text form, fresh from the broker
//	out := kafkatest.RunTool(t, "kafka-topics", "--describe", "--topic", topic)
//
// The helpers take any *kgo.Client, so the same test body runs against kfake too.
package kafkatest
