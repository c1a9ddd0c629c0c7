package worker

import (
	"context"
	"fmt"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrUnauthorized marks an error caused by a missing ACL. It is also ErrBlocked: retrying
// cannot help until an operator grants the permission the message names.
var ErrUnauthorized = errors.New("not authorized")

// Permission is one ACL a step of the protocol needs, spelled as kafka-acls spells it.
type Permission struct {
	Operation    string // Read, Write, Describe, DescribeConfigs, Delete
	ResourceType string // topic, group
	Resource     string // its name
	For          string // what kcleanup does with it, for messages
}

// Grant is the ACL to add, as a sentence: "grant Delete on topic action-state to User:w".
// An unknown principal (TLS, PLAINTEXT) is named as this client's.
func (p Permission) Grant(principal string) string {
	if principal == "" {
		principal = "this client's principal"
	}
	return fmt.Sprintf("grant %s on %s %s to %s", p.Operation, p.ResourceType, p.Resource, principal)
}

// Command is the kafka-acls command that grants it.
func (p Permission) Command(principal, bootstrap string) string {
	if principal == "" {
		principal = "User:<this client's principal>"
	}
	if bootstrap == "" {
		bootstrap = "<broker>"
	}
	return fmt.Sprintf("kafka-acls --bootstrap-server %s --command-config admin.properties --add --allow-principal %s --operation %s --%s %s",
		bootstrap, principal, p.Operation, p.ResourceType, p.Resource)
}

// Permissions of the protocol (docs/deploy.md, "Kafka ACLs").
func permControlRead(control string) Permission {
	return Permission{"Read", "topic", control, "read the control topic"}
}

func permControlWrite(control string) Permission {
	return Permission{"Write", "topic", control, "append to the control topic"}
}

func permControlDescribeConfigs(control string) Permission {
	return Permission{"DescribeConfigs", "topic", control, "check the control topic's settings before deleting"}
}

func permDataDescribe(data string) Permission {
	return Permission{"Describe", "topic", data, "read the data topic's metadata and offsets"}
}

func permDataDescribeConfigs(data string) Permission {
	return Permission{"DescribeConfigs", "topic", data, "re-check the data topic's cleanup.policy before deleting"}
}

func permDataDelete(data string) Permission {
	return Permission{"Delete", "topic", data, "DeleteRecords on the data topic"}
}

func permGroupRead(group string) Permission {
	return Permission{"Read", "group", group, "join the workers' consumer group"}
}

// FinishPermissions are what finishing a COMMITTED operation needs (apply without --no-wait,
// and the owning worker): the whole rest of the protocol after the point of no return.
func FinishPermissions(controlTopic, dataTopic string) []Permission {
	return []Permission{
		permControlRead(controlTopic), permControlWrite(controlTopic), permControlDescribeConfigs(controlTopic),
		permDataDescribe(dataTopic), permDataDescribeConfigs(dataTopic), permDataDelete(dataTopic),
	}
}

// ApplyPermissions are what apply needs before it writes COMMITTED: with --no-wait only the
// control topic (a worker finishes), otherwise FinishPermissions.
func ApplyPermissions(controlTopic, dataTopic string, noWait bool) []Permission {
	if noWait {
		return []Permission{permControlRead(controlTopic), permControlWrite(controlTopic), permDataDescribe(dataTopic)}
	}
	return FinishPermissions(controlTopic, dataTopic)
}

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

// CheckPermissions asks the brokers, in one uncached Metadata request with
// IncludeTopicAuthorizedOperations, which operations this client's principal holds on the
// topics of need, and refuses (ErrUnauthorized, ErrBlocked) with every missing ACL, one line
// each, and the kafka-acls commands that grant them. Group permissions are not reported by
// Metadata and are not checked here.
func (c *Cluster) CheckPermissions(ctx context.Context, need []Permission, bootstrap string) error {
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
		return errors.Wrap(err, "metadata request for the authorized operations")
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
			return errors.Wrapf(err, "metadata for topic %q", *t.Topic)
		}
	}
	var missing []Permission
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
	return c.unauthorized(missing, bootstrap)
}

// unauthorized is the error for missing permissions: nil for none.
func (c *Cluster) unauthorized(missing []Permission, bootstrap string) error {
	if len(missing) == 0 {
		return nil
	}
	var lines, cmds []string
	for _, p := range missing {
		lines = append(lines, fmt.Sprintf("not authorized to %s: %s", p.For, p.Grant(c.principal)))
		cmds = append(cmds, p.Command(c.principal, bootstrap))
	}
	err := errors.Mark(errors.Mark(errors.Newf("%s", strings.Join(lines, "\n")), ErrUnauthorized), ErrBlocked)
	return errors.WithHintf(err, "an administrator grants them (docs/deploy.md, \"Kafka ACLs\"):\n  %s", strings.Join(cmds, "\n  "))
}

// denied turns a Kafka authorization error into one that names the permission, keeping err
// in the chain (errors.Is still finds the Kafka error); any other error is returned as is.
func (c *Cluster) denied(err error, p Permission) error {
	if err == nil || !IsAuthorizationError(err) || errors.Is(err, ErrUnauthorized) {
		return err
	}
	err = errors.Wrapf(err, "not authorized to %s: %s", p.For, p.Grant(c.principal))
	err = errors.WithHintf(err, "an administrator grants it (docs/deploy.md, \"Kafka ACLs\"): %s", p.Command(c.principal, ""))
	return errors.Mark(errors.Mark(err, ErrUnauthorized), ErrBlocked)
}

// GroupDenied is denied for a consumer group's authorization error: it names the Read ACL on
// the group that the worker fleet needs.
func (c *Cluster) GroupDenied(err error, group string) error {
	return c.denied(err, permGroupRead(group))
}

// IsAuthorizationError reports whether err is a Kafka authorization failure.
func IsAuthorizationError(err error) bool {
	return errors.Is(err, ErrUnauthorized) || errors.Is(err, kerr.TopicAuthorizationFailed) ||
		errors.Is(err, kerr.GroupAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed)
}
