package worker

import (
	"context"
	"fmt"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/protocol"
)

// The Kafka APIs kcleanup cannot work without.
const (
	// minMetadataWithTopicIDs is the first Metadata version whose answer
	// carries topic IDs (KIP-516, Kafka 2.8): without them a deleted and
	// recreated topic cannot be told from the one a plan was made for.
	minMetadataWithTopicIDs = 10
)

// CheckBrokers asks every broker for its API versions and reports, one
// finding per broker, whether it supports DeleteRecords (API key 21) and
// topic IDs in Metadata (v10 or newer). An error means the cluster did not
// answer at all.
func (c *Cluster) CheckBrokers(ctx context.Context) ([]protocol.Finding, error) {
	vs, err := c.adm.ApiVersions(ctx)
	if err != nil {
		return nil, errors.Wrap(err, "ask the brokers for their API versions")
	}
	var out []protocol.Finding
	deleteKey, metadataKey := kmsg.DeleteRecords.Int16(), kmsg.Metadata.Int16()
	for _, v := range vs.Sorted() {
		subject := fmt.Sprintf("broker %d", v.NodeID)
		if v.Err != nil {
			out = append(out, finding(protocol.Warn, subject, fmt.Sprintf("did not answer ApiVersions: %v", v.Err),
				"check that the broker is up; kcleanup needs every broker that leads a partition of the data topic"))
			continue
		}
		var problems []protocol.Finding
		_, delMax, hasDelete := v.KeyVersions(deleteKey)
		if !hasDelete {
			problems = append(problems, finding(protocol.Block, subject,
				fmt.Sprintf("does not support DeleteRecords (API key %d): kcleanup cannot delete anything", deleteKey),
				"upgrade the broker to Apache Kafka 2.8 or newer"))
		}
		metaMax, _ := v.KeyMaxVersion(metadataKey)
		if metaMax < minMetadataWithTopicIDs {
			problems = append(problems, finding(protocol.Block, subject,
				fmt.Sprintf("answers Metadata only up to v%d, without topic IDs (v%d+): a recreated topic could not be told apart",
					metaMax, minMetadataWithTopicIDs),
				"upgrade the broker to Apache Kafka 2.8 or newer"))
		}
		if len(problems) == 0 {
			problems = append(problems, finding(protocol.OK, subject,
				fmt.Sprintf("supports DeleteRecords (up to v%d) and topic IDs (Metadata up to v%d)", delMax, metaMax), ""))
		}
		out = append(out, problems...)
	}
	if len(out) == 0 {
		return nil, errors.New("the cluster's metadata lists no broker")
	}
	return out, nil
}

// Reachable asks the cluster for its brokers, once: a refused connection (nothing listening
// at a bootstrap address) comes back at once as an error, where a topic's metadata request
// would be retried until the caller's deadline. Every command checks it before anything else
// (doctor's first check, CheckBrokers, asks the same question).
func (c *Cluster) Reachable(ctx context.Context) error {
	if _, err := c.adm.BrokerMetadata(ctx); err != nil {
		return errors.Wrap(err, "ask the cluster for its brokers")
	}
	return nil
}
