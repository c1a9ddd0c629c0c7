package worker_test

import (
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// The protocol classifies failures by Kafka error code (protocol/access.go): its numbers are
// franz-go's, which are Kafka's.
func TestProtocolCodesAreKafkas(t *testing.T) {
	for _, tc := range []struct {
		code int16
		err  *kerr.Error
	}{
		{protocol.CodeOffsetOutOfRange, kerr.OffsetOutOfRange},
		{protocol.CodeTopicAuthorizationFailed, kerr.TopicAuthorizationFailed},
		{protocol.CodeGroupAuthorizationFailed, kerr.GroupAuthorizationFailed},
		{protocol.CodeClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed},
		{protocol.CodePolicyViolation, kerr.PolicyViolation},
		{protocol.CodeTransactionalIDAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed},
		{protocol.CodeSaslAuthenticationFailed, kerr.SaslAuthenticationFailed},
	} {
		if tc.code != tc.err.Code {
			t.Errorf("protocol's code for %s is %d, Kafka's is %d", tc.err.Message, tc.code, tc.err.Code)
		}
	}
}

// KafkaCode finds the broker's code however the executor wrapped the error, and Permanent
// (the workers' retry schedule) follows the protocol's rules on it.
func TestKafkaCodeAndPermanent(t *testing.T) {
	for _, tc := range []struct {
		err       error
		code      int16
		permanent bool
	}{
		{errors.Mark(errors.New("topic recreated"), protocol.ErrBlocked), 0, true},
		{errors.Wrap(errors.Mark(errors.New("newer record"), protocol.ErrDegraded), "finish"), 0, true},
		{errors.Wrap(kerr.TopicAuthorizationFailed, "delete records"), 29, true},
		{errors.Wrapf(errors.WithHint(kerr.GroupAuthorizationFailed, "grant it"), "join %q", "g"), 30, true},
		{errors.Wrap(kerr.SaslAuthenticationFailed, "connect"), 58, true},
		{errors.Wrap(kerr.NotLeaderForPartition, "list offsets"), 6, false},
		{errors.New("connection refused"), 0, false},
		{errors.Mark(errors.New("not caught up"), worker.ErrNotCaughtUp), 0, false},
	} {
		if got := worker.KafkaCode(tc.err); got != tc.code {
			t.Errorf("KafkaCode(%v) = %d, want %d", tc.err, got, tc.code)
		}
		if got := worker.Permanent(tc.err); got != tc.permanent {
			t.Errorf("Permanent(%v) = %v, want %v", tc.err, got, tc.permanent)
		}
	}
	if !worker.IsAuthorizationError(errors.Wrap(kerr.ClusterAuthorizationFailed, "x")) || worker.IsAuthorizationError(kerr.SaslAuthenticationFailed) {
		t.Error("IsAuthorizationError: a missing ACL is one, refused credentials are not")
	}
}
