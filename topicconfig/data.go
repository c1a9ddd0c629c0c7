package topicconfig

import (
	"fmt"
	"slices"
)

// DataTopic checks the configs a data topic needs (docs/design.md,
// "Words"): Kafka itself must never retire a record, and DeleteRecords must
// be allowed. Every problem blocks.
func DataTopic(topic string, configs map[string]string, bootstrap string) []Problem {
	var out []Problem
	pol := configs["cleanup.policy"]
	if parts := PolicyParts(pol); !slices.Equal(parts, []string{"compact", "delete"}) {
		msg := fmt.Sprintf("cleanup.policy is %q; kcleanup needs compact,delete so that DeleteRecords is allowed", pol)
		if slices.Equal(parts, []string{"delete"}) {
			msg = fmt.Sprintf("cleanup.policy is %q; action state needs compact,delete (compaction keeps the latest state, delete allows DeleteRecords)", pol)
		}
		// The fix sets retention together with the policy, in one atomic config change:
		// adding delete to a topic whose retention.ms is still the broker's default (7 days)
		// would let Kafka retire every older record at once.
		out = append(out, Problem{Setting: "cleanup.policy", Value: pol, Blocks: true, Message: msg,
			Fix: alter(bootstrap, topic, "'retention.ms=-1,retention.bytes=-1,cleanup.policy=[compact,delete]'")})
	}
	for _, key := range []string{"retention.ms", "retention.bytes"} {
		if v := configs[key]; v != "-1" {
			out = append(out, Problem{Setting: key, Value: v, Blocks: true,
				Message: fmt.Sprintf("%s is %q; it must be -1, or Kafka retires records a recovery point may still need", key, v),
				Fix:     alter(bootstrap, topic, key+"=-1")})
		}
	}
	return out
}

// MirrorTopic is the durability settings a Flink Agents mirror should have:
// the control topic's rules without the job's own two (one partition,
// cleanup.policy=compact), which the mirror's attach rules judge. The job
// does not need them, the boundary the mirror carries does: each is a
// warning (Blocks false).
func MirrorTopic(topic string, configs map[string]string, bootstrap string) []Problem {
	var out []Problem
	for _, p := range ControlTopic(topic, 1, configs, bootstrap) {
		if p.Setting == "partitions" || p.Setting == "cleanup.policy" {
			continue
		}
		p.Blocks = false
		out = append(out, p)
	}
	return out
}

// alter is the kafka-configs command that sets one topic config.
func alter(bootstrap, topic, setting string) string {
	return fmt.Sprintf("kafka-configs --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config %s",
		bootstrap, topic, setting)
}
