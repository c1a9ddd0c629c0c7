package worker

import (
	"context"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/protocol"
)

// The permissions the executor names when a request is denied (protocol's).
var (
	permControlRead            = protocol.ControlRead
	permControlWrite           = protocol.ControlWrite
	permControlDescribeConfigs = protocol.ControlDescribeConfigs
	permDataDelete             = protocol.DataDelete
	permGroupRead              = protocol.GroupRead
)

// SetPrincipal tells the cluster which Kafka principal its client authenticates as
// ("User:kcleanup-worker"), for messages; "" when unknown.
func (c *Cluster) SetPrincipal(principal string) { c.principal = principal }

// Principal is what SetPrincipal set.
func (c *Cluster) Principal() string { return c.principal }

// aclOperation maps kafka-acls' names to the bits of Metadata's authorized operations.
var aclOperation = map[string]kmsg.ACLOperation{
	"Read": kmsg.ACLOperationRead, "Write": kmsg.ACLOperationWrite, "Delete": kmsg.ACLOperationDelete,
	"Describe": kmsg.ACLOperationDescribe, "DescribeConfigs": kmsg.ACLOperationDescribeConfigs,
}

// MissingPermissions asks the brokers, in one uncached Metadata request with
// IncludeTopicAuthorizedOperations, which operations this client's principal holds on the
// topics of need, and returns those of need it does not hold: a fact the protocol judges
// (protocol.Unauthorized words it, with the kafka-acls commands that grant them). Group
// permissions are not reported by Metadata and are not checked here. An error means the
// brokers did not say.
func (c *Cluster) MissingPermissions(ctx context.Context, need []protocol.Permission) ([]protocol.Permission, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.IncludeTopicAuthorizedOperations = true
	seen := map[string]bool{}
	for _, p := range need {
		if p.ResourceType == "topic" && !seen[p.Resource] {
			seen[p.Resource] = true
			t := kmsg.NewMetadataRequestTopic()
			t.Topic = kmsg.StringPtr(p.Resource)
			req.Topics = append(req.Topics, t)
		}
	}
	resp, err := req.RequestWith(ctx, c.cl)
	if err != nil {
		return nil, errors.Wrap(err, "metadata request for the authorized operations")
	}
	ops := map[string]int32{} // topic → authorized operations bit set; absent: denied Describe
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		switch err := kerr.ErrorForCode(t.ErrorCode); {
		case err == nil:
			ops[*t.Topic] = t.AuthorizedOperations
		case errors.Is(err, kerr.TopicAuthorizationFailed):
			// Not even Describe: every operation is missing.
		default:
			return nil, errors.Wrapf(err, "metadata for topic %q", *t.Topic)
		}
	}
	var missing []protocol.Permission
	for _, p := range need {
		if p.ResourceType != "topic" {
			continue
		}
		bits, ok := ops[p.Resource]
		if ok && bits == int32(-2147483648) {
			// INT32_MIN: the broker did not compute them (an old broker); do not guess.
			continue
		}
		if !ok || bits&(1<<uint(aclOperation[p.Operation])) == 0 {
			missing = append(missing, p)
		}
	}
	return missing, nil
}

// denied turns a Kafka authorization error into one that names the permission, keeping err
// in the chain (errors.Is still finds the Kafka error); any other error is returned as is
// (protocol.DeniedError decides which are).
func (c *Cluster) denied(err error, p protocol.Permission) error {
	return protocol.DeniedError(err, KafkaCode(err), p, c.principal)
}

// GroupDenied is denied for a consumer group's authorization error: it names the Read ACL on
// the group that the worker fleet needs.
func (c *Cluster) GroupDenied(err error, group string) error {
	return c.denied(err, permGroupRead(group))
}

// IsAuthorizationError reports whether err is a Kafka authorization failure (a missing ACL:
// protocol.Denied).
func IsAuthorizationError(err error) bool {
	return errors.Is(err, protocol.ErrUnauthorized) || protocol.Denied(KafkaCode(err))
}

// KafkaCode is the Kafka error code a broker answered somewhere in err's chain, 0 when none:
// the raw fact the protocol classifies (protocol.PermanentRequest, protocol.PermanentDelete).
func KafkaCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return 0
}

// Permanent reports whether retrying soon cannot help a failure of Finish or of a read
// (protocol.Permanent): a worker then retries on its long blocked schedule.
func Permanent(err error) bool { return protocol.Permanent(err, KafkaCode(err)) }
