package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/worker"
)

// The demo's data: the seed's example (docs/design.md §1) with two partitions and two subtasks per
// checkpoint, so that the plan's per-partition minimum over markers matters.
const (
	demoPartitions = 2
	demoRecords    = 200 // per partition
	demoTopic      = "action-state"
)

// demoCheckpoint is one recovery point: the marker of each subtask.
type demoCheckpoint struct {
	name     string
	subtasks []events.Offsets
}

// demoCheckpoints: C0 needs partition 0 from 100 and partition 1 from 90; C1 from 150 and 120.
var demoCheckpoints = []demoCheckpoint{
	{"C0", []events.Offsets{{0: 100, 1: 95}, {0: 110, 1: 90}}},
	{"C1", []events.Offsets{{0: 150, 1: 130}, {0: 160, 1: 120}}},
}

// demoTopicConfigs are the data-topic settings docs/design.md §2 requires.
var demoTopicConfigs = map[string]string{
	"cleanup.policy":  "compact,delete",
	"retention.ms":    "-1",
	"retention.bytes": "-1",
}

// uniqueDemoTopic names the data topic of a demo on a real cluster, where "action-state" may
// exist: kcleanup-demo-<UTC time>-<random>.
func uniqueDemoTopic(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return "kcleanup-demo-" + now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// createDataTopic creates the demo's data topic with the settings docs/design.md §2 requires.
func createDataTopic(ctx context.Context, c *worker.Cluster, topic string) error {
	cfgs := map[string]*string{}
	for k, v := range demoTopicConfigs {
		cfgs[k] = kadm.StringPtr(v)
	}
	resp, err := kadm.NewClient(c.Client()).CreateTopic(ctx, demoPartitions, -1, cfgs, topic)
	if err == nil {
		err = resp.Err
	}
	return errors.Wrapf(err, "create data topic %s", topic)
}

// waitForTopic waits, within ctx, until the broker's (uncached) metadata shows every partition
// of the new topic, and returns its topic ID.
func waitForTopic(ctx context.Context, c *worker.Cluster, topic string) (string, error) {
	for {
		info, err := c.TopicMetadata(ctx, topic)
		if err == nil && len(info.Partitions) == demoPartitions {
			return info.ID, nil
		}
		select {
		case <-ctx.Done():
			return "", errors.Wrapf(ctx.Err(), "wait for topic %s to appear in metadata (last: %v)", topic, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// writeActionState writes demoRecords records of completed actions to each partition.
func writeActionState(ctx context.Context, c *worker.Cluster, topic string) error {
	actions := []string{"charge-card", "send-email", "call-llm", "update-crm"}
	var rs []*kgo.Record
	for p := int32(0); p < demoPartitions; p++ {
		for i := 0; i < demoRecords; i++ {
			rs = append(rs, &kgo.Record{
				Topic:     topic,
				Partition: p,
				Key:       fmt.Appendf(nil, "order-%d-%d/%s", p, i, actions[i%len(actions)]),
				Value:     fmt.Appendf(nil, `{"action":%q,"status":"completed","result":"ok-%d-%d"}`, actions[i%len(actions)], p, i),
			})
		}
	}
	return errors.Wrapf(c.Client().ProduceSync(ctx, rs...).FirstErr(), "write action state to %s", topic)
}

// deleteDemoTopics removes the topics a demo on a real cluster created. A topic that does not
// exist (the walk stopped before apply created the control topic) is not an error.
func deleteDemoTopics(ctx context.Context, c *worker.Cluster, topics ...string) error {
	resps, err := kadm.NewClient(c.Client()).DeleteTopics(ctx, topics...)
	if err != nil {
		return errors.Wrapf(err, "delete topics %v", topics)
	}
	for _, r := range resps.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			return errors.Wrapf(r.Err, "delete topic %s", r.Topic)
		}
	}
	return nil
}

// prefixWriter starts every line written through it with a prefix: the demo indents the output
// of the commands it runs under their command line.
type prefixWriter struct {
	w       io.Writer
	prefix  string
	midLine bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	var out bytes.Buffer
	for _, c := range b {
		if !p.midLine {
			out.WriteString(p.prefix)
		}
		out.WriteByte(c)
		p.midLine = c != '\n'
	}
	if _, err := p.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(b), nil
}
