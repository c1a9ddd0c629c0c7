package protocol

import (
	"strings"
	"testing"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/topicconfig"
)

// TestControlTopicBlocked is the decision the owner and status apply to a control topic's
// settings: blocking problems block with their words and fixes, warnings alone do not.
func TestControlTopicBlocked(t *testing.T) {
	with := func(set map[string]string) map[string]string {
		c := topicconfig.CreateSettings()
		for k, v := range set {
			c[k] = v
		}
		return c
	}
	alter := "kafka-configs --bootstrap-server b:9092 --alter --entity-type topics --entity-name c.kcleanup --add-config "
	for _, tc := range []struct {
		name       string
		partitions int
		configs    map[string]string
		message    string   // the whole error text; "" when nothing blocks
		hints      []string // each a prefix of one hint, in order
	}{
		{"as init creates it", 1, with(nil), "", nil},
		{"warnings only", 1, with(map[string]string{"max.message.bytes": "1048576", "message.timestamp.type": "CreateTime", "unclean.leader.election.enable": "true"}), "", nil},
		{"compaction lag 0", 1, with(map[string]string{"min.compaction.lag.ms": "0"}),
			"control topic c.kcleanup is unsafe, so no deletion starts: min.compaction.lag.ms is 0; it must be at least 86400000 (24h0m0s), or the log cleaner may erase an accepted decision that a broken writer overwrote before a worker repairs it",
			[]string{alter + "min.compaction.lag.ms=604800000"}},
		{"two partitions and delete policy", 2, with(map[string]string{"cleanup.policy": "compact,delete"}),
			`control topic c.kcleanup is unsafe, so no deletion starts: has 2 partitions; a control topic needs exactly one (one total order of decisions); cleanup.policy is "compact,delete"; a control topic needs exactly compact (delete would retire decisions)`,
			[]string{"create a new one-partition control topic: kcleanup init", alter + "cleanup.policy=compact"}},
		{"nothing reported", 1, map[string]string{}, "control topic c.kcleanup is unsafe, so no deletion starts: " +
			`cleanup.policy is ""; a control topic needs exactly compact (delete would retire decisions); min.compaction.lag.ms is 0;`,
			[]string{alter + "cleanup.policy=compact", alter + "min.compaction.lag.ms="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ControlTopicBlocked("c.kcleanup", tc.partitions, tc.configs, "b:9092")
			if tc.message == "" {
				if err != nil {
					t.Fatalf("blocked: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrBlocked) {
				t.Fatalf("not ErrBlocked: %v", err)
			}
			if !strings.HasPrefix(err.Error(), tc.message) {
				t.Errorf("message\n got %s\nwant %s", err, tc.message)
			}
			hints := errors.GetAllHints(err)
			if len(hints) < len(tc.hints) {
				t.Fatalf("hints %q, want at least %d", hints, len(tc.hints))
			}
			for i, h := range tc.hints {
				if !strings.HasPrefix(hints[i], h) {
					t.Errorf("hint %d is %q, want it to start %q", i, hints[i], h)
				}
			}
		})
	}
}
