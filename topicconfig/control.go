package topicconfig

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The control-topic settings the safety argument relies on (docs/design.md §4, I5).
// init creates a control topic with CreateSettings; the rules below check any
// control topic, however it was created.
const (
	// MinCompactionLag is the least min.compaction.lag.ms that is safe. A
	// record that overwrites an accepted one (a broken writer's tombstone,
	// say) is repaired by the next worker read; until the repair lands, only
	// this lag keeps the log cleaner from erasing the accepted record. A day
	// covers an outage of every worker that an operator is paged for.
	MinCompactionLag = 24 * time.Hour
	// MinDeleteRetention is the least delete.retention.ms that is safe. A
	// tombstone over an accepted record is the evidence that history may be
	// missing (projector.State.AtRisk); once the cleaner drops it, nothing
	// shows that anything was ever erased. Kafka's default is a day.
	MinDeleteRetention = 24 * time.Hour
	// CreatedCompactionLag and CreatedDeleteRetention are what init sets:
	// a week, for auditors as much as for repairs.
	CreatedCompactionLag   = 7 * 24 * time.Hour
	CreatedDeleteRetention = 7 * 24 * time.Hour
	// MaxControlRecordBytes bounds one control record: enough for a plan of
	// about 450,000 partitions. The control topic's max.message.bytes and the
	// producer's batch size must both allow it.
	MaxControlRecordBytes = 16 << 20
)

// Problem is one way a control topic breaks the safety argument, with the
// exact command that fixes it.
type Problem struct {
	// Setting is the topic config at fault ("cleanup.policy"), or
	// "partitions".
	Setting string
	// Value is what the broker reports ("" when it reports nothing).
	Value string
	// Message says what is wrong and why it matters, for an operator.
	Message string
	// Fix is the command that fixes it.
	Fix string
	// Blocks is true when the setting lets the log cleaner erase decisions
	// or outrun repairs: cleanup is blocked and the gate fails closed
	// (CannotTell). False: a warning.
	Blocks bool
}

// CreateSettings are the topic configs kcleanup creates a control topic
// with (min.insync.replicas is the caller's, from the replication factor).
func CreateSettings() map[string]string {
	return map[string]string{
		"cleanup.policy":                 "compact",
		"unclean.leader.election.enable": "false",
		"min.compaction.lag.ms":          strconv.FormatInt(CreatedCompactionLag.Milliseconds(), 10),
		"delete.retention.ms":            strconv.FormatInt(CreatedDeleteRetention.Milliseconds(), 10),
		"max.message.bytes":              strconv.Itoa(MaxControlRecordBytes),
		// min.compaction.lag.ms is measured on record timestamps; with the
		// broker's clock, a writer's skewed clock cannot make its overwrite
		// cleanable early.
		"message.timestamp.type": "LogAppendTime",
	}
}

// ControlTopic checks a control topic's partition count and configs (the
// effective values, as DescribeConfigs reports them). A config the broker
// does not report is judged at Kafka's default. min.cleanable.dirty.ratio
// and max.compaction.lag.ms are not checked: they decide how often the
// cleaner runs, never that it may clean a record younger than
// min.compaction.lag.ms.
func ControlTopic(topic string, partitions int, configs map[string]string, bootstrap string) []Problem {
	alter := func(setting string) string { return alter(bootstrap, topic, setting) }
	var out []Problem
	if partitions != 1 {
		out = append(out, Problem{Setting: "partitions", Value: strconv.Itoa(partitions), Blocks: true,
			Message: fmt.Sprintf("has %d partitions; a control topic needs exactly one (one total order of decisions)", partitions),
			Fix:     "create a new one-partition control topic: kcleanup init --topic <data topic> --control-topic <new name>"})
	}
	if pol := configs["cleanup.policy"]; !IsCompactOnly(pol) {
		out = append(out, Problem{Setting: "cleanup.policy", Value: pol, Blocks: true,
			Message: fmt.Sprintf("cleanup.policy is %q; a control topic needs exactly compact (delete would retire decisions)", pol),
			Fix:     alter("cleanup.policy=compact")})
	}
	if p, ok := durationBelow(configs, "min.compaction.lag.ms", "0", MinCompactionLag); ok {
		p.Message = fmt.Sprintf("min.compaction.lag.ms is %s; it must be at least %s (%s), or the log cleaner may erase an accepted decision that a broken writer overwrote before a worker repairs it",
			p.Value, ms(MinCompactionLag), MinCompactionLag)
		p.Fix = alter("min.compaction.lag.ms=" + ms(CreatedCompactionLag))
		out = append(out, p)
	}
	if p, ok := durationBelow(configs, "delete.retention.ms", "86400000", MinDeleteRetention); ok {
		p.Message = fmt.Sprintf("delete.retention.ms is %s; it must be at least %s (%s), or the cleaner drops the tombstone that shows an accepted decision was overwritten, and with it the evidence that history is missing",
			p.Value, ms(MinDeleteRetention), MinDeleteRetention)
		p.Fix = alter("delete.retention.ms=" + ms(CreatedDeleteRetention))
		out = append(out, p)
	}
	if v := configs["max.message.bytes"]; v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < MaxControlRecordBytes {
			out = append(out, Problem{Setting: "max.message.bytes", Value: v,
				Message: fmt.Sprintf("max.message.bytes is %s; plans over tens of thousands of partitions need %d: their records, and the repairs that re-append them, would be refused",
					v, MaxControlRecordBytes),
				Fix: alter("max.message.bytes=" + strconv.Itoa(MaxControlRecordBytes))})
		}
	}
	if v := configs["message.timestamp.type"]; v == "CreateTime" {
		out = append(out, Problem{Setting: "message.timestamp.type", Value: v,
			Message: "message.timestamp.type is CreateTime: min.compaction.lag.ms is measured on the writers' clocks, so a writer whose clock is days behind can make its overwrite cleanable at once",
			Fix:     alter("message.timestamp.type=LogAppendTime")})
	}
	if configs["unclean.leader.election.enable"] == "true" {
		out = append(out, Problem{Setting: "unclean.leader.election.enable", Value: "true",
			Message: "unclean leader election is enabled: a committed decision could be lost",
			Fix:     alter("unclean.leader.election.enable=false")})
	}
	return out
}

// CreateConfigs are the configs init creates a control topic (or a mirror)
// with: CreateSettings, and min.insync.replicas=2 when the replication
// factor allows it.
func CreateConfigs(replicationFactor int16) map[string]string {
	out := CreateSettings()
	if replicationFactor >= 3 {
		out["min.insync.replicas"] = "2"
	}
	return out
}

// Blocking returns the problems that block cleanup and fail the gate closed.
func Blocking(ps []Problem) []Problem {
	var out []Problem
	for _, p := range ps {
		if p.Blocks {
			out = append(out, p)
		}
	}
	return out
}

// durationBelow reports a blocking problem when a millisecond config is below
// min; def is Kafka's default, used when the broker reports no value. A value
// that is not a number is a problem too.
func durationBelow(configs map[string]string, key, def string, min time.Duration) (Problem, bool) {
	v, ok := configs[key]
	if !ok || v == "" {
		v = def
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err == nil && n >= min.Milliseconds() {
		return Problem{}, false
	}
	return Problem{Setting: key, Value: v, Blocks: true}, true
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// PolicyParts splits a cleanup.policy value into its sorted parts: the broker
// reports "delete,compact" and "compact, delete" for one policy.
func PolicyParts(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// IsCompactOnly says whether a cleanup.policy is exactly compact: the
// policy of a control topic and of a Flink Agents mirror.
func IsCompactOnly(policy string) bool {
	return slices.Equal(PolicyParts(policy), []string{"compact"})
}
