package protocol

import (
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
)

// Two control topics bound to one topic incarnation block each other; another incarnation,
// another topic, or an unbound control topic does not.
func TestSharedGovernance(t *testing.T) {
	known := []Governor{
		{ControlTopic: "t.kcleanup", Topic: "t", TopicID: "A"},
		{ControlTopic: "t.old.kcleanup", Topic: "t", TopicID: "OLD"}, // the earlier incarnation's
		{ControlTopic: "u.kcleanup", Topic: "u", TopicID: "A"},
		{ControlTopic: "fresh.kcleanup"}, // unbound
	}
	if err := SharedGovernance("t.kcleanup", "t", "A", known, "b:9092"); err != nil {
		t.Fatalf("alone: %v", err)
	}
	known = append(known, Governor{ControlTopic: "ops.t.ctl", Topic: "t", TopicID: "A"})
	for _, self := range []string{"t.kcleanup", "ops.t.ctl", "fresh.kcleanup"} {
		err := SharedGovernance(self, "t", "A", known, "b:9092")
		if !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "both govern topic t (topic ID A)") ||
			!strings.Contains(strings.Join(errors.GetAllHints(err), "\n"), "keep one control topic per data topic") {
			t.Errorf("%s: %v %q", self, err, errors.GetAllHints(err))
		}
	}
}
