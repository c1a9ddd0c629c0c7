package protocol

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/errors"
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

// ControlRead: reading the control topic. The permissions of the protocol are listed for
// operators in docs/deploy.md, "Kafka ACLs".
func ControlRead(control string) Permission {
	return Permission{"Read", "topic", control, "read the control topic"}
}

// ControlWrite: appending control records and repairs.
func ControlWrite(control string) Permission {
	return Permission{"Write", "topic", control, "append to the control topic"}
}

// ControlDescribeConfigs: the control topic's settings, checked before every deletion.
func ControlDescribeConfigs(control string) Permission {
	return Permission{"DescribeConfigs", "topic", control, "check the control topic's settings before deleting"}
}

// DataDescribe: the data topic's metadata and offsets.
func DataDescribe(data string) Permission {
	return Permission{"Describe", "topic", data, "read the data topic's metadata and offsets"}
}

// DataDescribeConfigs: the data topic's cleanup.policy, re-checked before deleting.
func DataDescribeConfigs(data string) Permission {
	return Permission{"DescribeConfigs", "topic", data, "re-check the data topic's cleanup.policy before deleting"}
}

// DataDelete: DeleteRecords on the data topic.
func DataDelete(data string) Permission {
	return Permission{"Delete", "topic", data, "DeleteRecords on the data topic"}
}

// DataRead: reading the data topic's records for tombstones (a control topic's first plan,
// and the workers' watch above the boundary: protocol.TombstoneScan); not needed where a
// no-tombstones declaration covers the scan (TombstoneNeeds).
func DataRead(data string) Permission {
	return Permission{"Read", "topic", data, "read the data topic for tombstones (or declare that the job writes none: kcleanup tombstones declare-none)"}
}

// GroupRead: joining the workers' consumer group.
func GroupRead(group string) Permission {
	return Permission{"Read", "group", group, "join the workers' consumer group"}
}

// FinishNeeds are what finishing a COMMITTED operation needs (apply without --no-wait, and
// the owning worker): the whole rest of the protocol after the point of no return.
func FinishNeeds(controlTopic, dataTopic string) []Permission {
	return []Permission{
		ControlRead(controlTopic), ControlWrite(controlTopic), ControlDescribeConfigs(controlTopic),
		DataDescribe(dataTopic), DataDescribeConfigs(dataTopic), DataDelete(dataTopic),
		DataRead(dataTopic), // the tombstone rule reads the data topic above the boundary before deleting
	}
}

// ApplyNeeds are what an Apply run needs before it writes COMMITTED: with NoWait only what
// reaching COMMITTED takes (a worker finishes), otherwise FinishNeeds, so that a principal
// that cannot finish writes nothing.
func ApplyNeeds(controlTopic, dataTopic string, noWait bool) []Permission {
	if noWait {
		return []Permission{ControlRead(controlTopic), ControlWrite(controlTopic), DataDescribe(dataTopic)}
	}
	return FinishNeeds(controlTopic, dataTopic)
}

// Unauthorized is the error for the permissions a Permissions step found missing (nil for
// none): one line per ACL, and the kafka-acls commands that grant them as the hint. It is
// ErrUnauthorized and ErrBlocked.
func Unauthorized(missing []Permission, principal, bootstrap string) error {
	if len(missing) == 0 {
		return nil
	}
	var lines, cmds []string
	for _, p := range missing {
		lines = append(lines, fmt.Sprintf("not authorized to %s: %s", p.For, p.Grant(principal)))
		cmds = append(cmds, p.Command(principal, bootstrap))
	}
	err := errors.Mark(errors.Mark(errors.Newf("%s", strings.Join(lines, "\n")), ErrUnauthorized), ErrBlocked)
	return errors.WithHintf(err, "an administrator grants them (docs/deploy.md, \"Kafka ACLs\"):\n  %s", strings.Join(cmds, "\n  "))
}

// The Kafka error codes the protocol tells apart (the numbers of Kafka's protocol, as a
// broker answers them; the executor reports them, Report.Code and Deleted.Code).
const (
	CodeOffsetOutOfRange                   int16 = 1
	CodeTopicAuthorizationFailed           int16 = 29
	CodeGroupAuthorizationFailed           int16 = 30
	CodeClusterAuthorizationFailed         int16 = 31
	CodePolicyViolation                    int16 = 44
	CodeTransactionalIDAuthorizationFailed int16 = 53
	CodeSaslAuthenticationFailed           int16 = 58
)

// Denied reports whether a Kafka error code says an ACL is missing: retrying cannot help
// until an operator grants it.
func Denied(code int16) bool {
	switch code {
	case CodeTopicAuthorizationFailed, CodeGroupAuthorizationFailed, CodeClusterAuthorizationFailed,
		CodeTransactionalIDAuthorizationFailed:
		return true
	}
	return false
}

// PermanentRequest reports whether a request that failed as a whole with this code fails
// again however often it is retried: access denied, or credentials the brokers refuse.
// Anything else (a timeout, a lost connection, a leader moving) may pass on a retry.
func PermanentRequest(code int16) bool {
	return Denied(code) || code == CodeSaslAuthenticationFailed
}

// PermanentDelete reports whether a DeleteRecords answer for one partition cannot change on
// a retry: a policy forbids deleting (cleanup.policy without delete), the offset is beyond the
// partition's high watermark, or access is denied.
func PermanentDelete(code int16) bool {
	return code == CodePolicyViolation || code == CodeOffsetOutOfRange || Denied(code)
}

// Permanent reports whether retrying soon cannot help a run's failure, so that a worker
// retries it on its long blocked schedule, not with backoff: the run ended Blocked (topic
// recreated, policy changed, access denied) or the control topic holds records from a newer
// kcleanup (ErrDegraded), or the failure carries a Kafka error code PermanentRequest names
// (code: the one found in err's chain, 0 when none).
func Permanent(err error, code int16) bool {
	return errors.Is(err, ErrBlocked) || errors.Is(err, ErrDegraded) || PermanentRequest(code)
}

// DeniedError names the missing ACL in a request's authorization failure: err (whose Kafka
// error code is code) wrapped with what to grant, marked ErrUnauthorized and ErrBlocked. Any
// other error, or one that already names its ACL, is returned as is.
func DeniedError(err error, code int16, p Permission, principal string) error {
	if err == nil || errors.Is(err, ErrUnauthorized) || !Denied(code) {
		return err
	}
	err = errors.Wrapf(err, "not authorized to %s: %s", p.For, p.Grant(principal))
	err = errors.WithHintf(err, "an administrator grants it (docs/deploy.md, \"Kafka ACLs\"): %s", p.Command(principal, ""))
	return errors.Mark(errors.Mark(err, ErrUnauthorized), ErrBlocked)
}
