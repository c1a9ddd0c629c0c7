package kafkatest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// EnvCluster names the environment variable that points cluster tests at the three-node
// development cluster: its directory (cmd/kafkadev/kafka.sh up --brokers 3 makes
// .kafka/cluster/, with the file bootstrap listing all three nodes and the file kafka.sh naming
// the script that stops, kills, starts and wipes them).
const EnvCluster = "KCLEANUP_TEST_CLUSTER"

// noClusterHint is the advice when no cluster was given.
const noClusterHint = "this test needs the three-broker development cluster: run `make test`, or\n" +
	"  make kafka-up BROKERS=3 && KCLEANUP_TEST_CLUSTER=$PWD/.kafka/cluster go test ./internal/clustertest/\n" +
	"  (make kafka-down BROKERS=3 stops it)"

// Cluster is the three-node development cluster of a test.
type Cluster struct {
	// Bootstrap lists every node's address, comma-separated (kgo.SeedBrokers takes each).
	Bootstrap string
	dir       string
	script    string
}

// Nodes are the cluster's node ids (each node is a controller and a broker).
var Nodes = []int32{1, 2, 3}

// NewCluster returns the three-node cluster named by KCLEANUP_TEST_CLUSTER. Without one it
// skips the test with the command that starts one, except under CI=true, where it fails: CI
// must never pass without running the cluster tests. Under -short it skips. When the test
// ends every node is started again (a test that stops one leaves the next a whole cluster).
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("cluster test: needs the three-node cluster (skipped by -short)")
	}
	dir := os.Getenv(EnvCluster)
	if dir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(EnvCluster + " is not set under CI=true: " + noClusterHint)
		}
		t.Skip(EnvCluster + " is not set: " + noClusterHint)
	}
	b, err := os.ReadFile(filepath.Join(dir, "bootstrap"))
	if err != nil {
		t.Fatalf("%s=%s: no cluster there (%v)\n%s", EnvCluster, dir, err, noClusterHint)
	}
	s, err := os.ReadFile(filepath.Join(dir, "kafka.sh"))
	if err != nil {
		t.Fatalf("%s=%s: %v", EnvCluster, dir, err)
	}
	c := &Cluster{Bootstrap: strings.TrimSpace(string(b)), dir: dir, script: strings.TrimSpace(string(s))}
	if err := ping(strings.Split(c.Bootstrap, ",")[0], 30*time.Second); err != nil {
		t.Fatalf("%s=%s does not answer at %s: %v", EnvCluster, dir, c.Bootstrap, err)
	}
	for _, id := range Nodes { // a whole cluster, whatever an earlier test left
		c.Start(t, id)
	}
	t.Cleanup(func() {
		for _, id := range Nodes { // every one, even when one fails to start
			if out, err := c.node("start", id); err != nil {
				t.Errorf("kafka.sh node start %d: %v\n%s", id, err, out)
			}
		}
	})
	return c
}

// Dir is the cluster's directory (KCLEANUP_TEST_CLUSTER): bootstrap, kafka.sh, links.
func (c *Cluster) Dir() string { return c.dir }

// Seeds are kgo options naming every node.
func (c *Cluster) Seeds() kgo.Opt { return kgo.SeedBrokers(strings.Split(c.Bootstrap, ",")...) }

// Stop shuts node id down cleanly (SIGTERM) and returns once its process is gone.
func (c *Cluster) Stop(t testing.TB, id int32) { t.Helper(); c.run(t, "stop", id) }

// Kill SIGKILLs node id (a crash) and returns once its process is gone.
func (c *Cluster) Kill(t testing.TB, id int32) { t.Helper(); c.run(t, "kill", id) }

// Start starts node id (if it is not running) and returns once it serves and the cluster
// lists all three brokers.
func (c *Cluster) Start(t testing.TB, id int32) { t.Helper(); c.run(t, "start", id) }

// Wipe deletes a stopped node's data: its next Start formats it anew.
func (c *Cluster) Wipe(t testing.TB, id int32) { t.Helper(); c.run(t, "wipe", id) }

func (c *Cluster) run(t testing.TB, op string, id int32) {
	t.Helper()
	if out, err := c.node(op, id); err != nil {
		t.Fatalf("kafka.sh node %s %d: %v\n%s", op, id, err, out)
	}
}

func (c *Cluster) node(op string, id int32) ([]byte, error) {
	return exec.Command(c.script, "node", op, strconv.Itoa(int(id))).CombinedOutput()
}

// Replicas is what uncached metadata says of one partition.
type Replicas struct {
	Leader   int32
	Replicas []int32
	ISR      []int32
}

// Partition returns the leader, replicas and in-sync replicas of topic's partition p, from
// uncached metadata (a leader that moved a moment ago shows).
func Partition(ctx context.Context, cl *kgo.Client, topic string, p int32) (Replicas, error) {
	mt, err := uncachedTopic(ctx, cl, topic)
	if err != nil {
		return Replicas{}, err
	}
	for _, mp := range mt.Partitions {
		if mp.Partition == p {
			return Replicas{Leader: mp.Leader, Replicas: mp.Replicas, ISR: mp.ISR}, nil
		}
	}
	return Replicas{}, errors.Newf("topic %s has no partition %d", topic, p)
}

// LogStartOn asks node id itself (not the leader) for the log-start offset of topic's
// partition p: ListOffsets with the replica id of a debugging consumer (-2) is answered by a
// follower too, from its own log.
func (c *Cluster) LogStartOn(ctx context.Context, id int32, topic string, p int32) (int64, error) {
	cl, err := kgo.NewClient(c.Seeds())
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil { // learns each node's address
		return 0, err
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -2
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = p
	rp.Timestamp = -2 // earliest
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kr, err := cl.Broker(int(id)).Request(ctx, req)
	if err != nil {
		return 0, err
	}
	resp := kr.(*kmsg.ListOffsetsResponse)
	for _, tp := range resp.Topics {
		for _, pp := range tp.Partitions {
			if pp.Partition == p {
				if err := kerr.ErrorForCode(pp.ErrorCode); err != nil {
					return 0, err
				}
				return pp.Offset, nil
			}
		}
	}
	return 0, errors.Newf("node %d does not answer for %s/%d", id, topic, p)
}
