package kafkatest

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/testcontainers/testcontainers-go"
	tckafka "github.com/testcontainers/testcontainers-go/modules/kafka"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// EnvBootstrap names the environment variable that points integration tests at a broker.
const EnvBootstrap = "KCLEANUP_TEST_BOOTSTRAP"

// EnvImage overrides the Docker image used when no broker address is given.
const EnvImage = "KCLEANUP_TEST_KAFKA_IMAGE"

// defaultImage is what testcontainers' Kafka module is written for (its start script is
// Confluent's). Confluent Platform 7.9 ships Apache Kafka 3.9.
const defaultImage = "confluentinc/confluent-local:7.9.0"

// noBrokerHint is the advice when there is no broker at all.
const noBrokerHint = "integration tests need an Apache Kafka broker and none was found:\n" +
	"  run `make test` (starts one from Maven Central; needs Java 17 and Maven), or\n" +
	"  run `make kafka-up` and then KCLEANUP_TEST_BOOTSTRAP=$(cat .kafka/bootstrap) go test ./..., or\n" +
	"  point " + EnvBootstrap + " at a broker you have, or start a Docker engine.\n" +
	"  `make test-unit` (go test -short) runs only the tests that need no broker."

// Bootstrap returns the address of a real Apache Kafka broker for an integration test, or
// skips the test under -short. See the package comment for where the broker comes from.
func Bootstrap(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs a real Kafka broker (skipped by -short)")
	}
	if addr := os.Getenv(EnvBootstrap); addr != "" {
		if err := answers(addr); err != nil {
			t.Fatalf("%s=%s does not answer: %v\n(is the broker still running? `make kafka-up` starts one)", EnvBootstrap, addr, err)
		}
		return addr
	}
	addr, err := dockerBroker()
	switch {
	case err == nil:
		return addr
	case errors.Is(err, errNoDocker):
		t.Fatal(noBrokerHint)
	default:
		t.Fatalf("a Docker engine answers, but the Kafka container did not start: %v\n%s", err, noBrokerHint)
	}
	return ""
}

// Main runs a package's tests and then Cleanup. Use it as the package's TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// Cleanup terminates the Docker broker if this test binary started one. Safe to call always.
func Cleanup() {
	docker.mu.Lock()
	defer docker.mu.Unlock()
	if docker.ctr != nil {
		_ = testcontainers.TerminateContainer(docker.ctr)
		docker.ctr = nil
	}
}

// checked remembers, per address, that the broker answered once: a broker that answers the
// first test is not pinged again by every later one.
var checked sync.Map // addr -> error

func answers(addr string) error {
	if err, ok := checked.Load(addr); ok {
		return err.(errorOrNil).err
	}
	err := ping(addr, 15*time.Second)
	checked.Store(addr, errorOrNil{err})
	return err
}

type errorOrNil struct{ err error }

// ping sends one Metadata request and wants at least one broker in the answer.
func ping(addr string, timeout time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Brokers) == 0 {
		return errors.New("metadata lists no broker")
	}
	return nil
}

var errNoDocker = errors.New("no Docker engine answers")

// docker holds the one container of this test binary.
var docker struct {
	once sync.Once
	mu   sync.Mutex
	ctr  *tckafka.KafkaContainer
	addr string
	err  error
}

// dockerBroker starts the container on first use and returns its address ever after.
func dockerBroker() (string, error) {
	docker.once.Do(func() {
		if !dockerAnswers() {
			docker.err = errNoDocker
			return
		}
		docker.addr, docker.err = startContainer()
	})
	return docker.addr, docker.err
}

// dockerAnswers asks the engine for its info; testcontainers may panic when there is none.
func dockerAnswers() (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.Health(ctx) == nil // Health closes the provider
}

func startContainer() (string, error) {
	image := os.Getenv(EnvImage)
	if image == "" {
		image = defaultImage
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The same test-friendly settings as cmd/kafkadev/server.properties.in; the image turns
	// KAFKA_FOO_BAR into foo.bar.
	ctr, err := tckafka.Run(ctx, image, testcontainers.WithEnv(map[string]string{
		"KAFKA_AUTO_CREATE_TOPICS_ENABLE":         "false",
		"KAFKA_NUM_PARTITIONS":                    "1",
		"KAFKA_MIN_INSYNC_REPLICAS":               "1",
		"KAFKA_LOG_CLEANER_BACKOFF_MS":            "100",
		"KAFKA_LOG_CLEANER_MIN_COMPACTION_LAG_MS": "0",
		"KAFKA_LOG_RETENTION_CHECK_INTERVAL_MS":   "1000",
	}))
	if ctr != nil {
		docker.mu.Lock()
		docker.ctr = ctr
		docker.mu.Unlock()
	}
	if err != nil {
		return "", errors.Wrapf(err, "start %s", image)
	}
	brokers, err := ctr.Brokers(ctx)
	if err != nil || len(brokers) == 0 {
		return "", errors.Newf("container %s has no broker address: %v", image, err)
	}
	return brokers[0], nil
}
