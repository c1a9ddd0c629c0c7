package worker

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Severity says whether a finding blocks cleanup.
type Severity string

// Severities, from harmless to blocking.
const (
	OK    Severity = "ok"
	Warn  Severity = "warn"
	Block Severity = "block"
)

// Finding is one result of a health check: what was checked, what was seen,
// and the exact command that fixes it.
type Finding struct {
	Severity Severity `json:"severity"`
	Subject  string   `json:"subject"`
	Message  string   `json:"message"`
	Hint     string   `json:"hint,omitempty"`
}

// Blocking returns the findings that block cleanup.
func Blocking(fs []Finding) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Severity == Block {
			out = append(out, f)
		}
	}
	return out
}

// policies splits a cleanup.policy value into its sorted parts.
func policies(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// CheckDataTopic checks the configs DESIGN §2 requires of a data topic: Kafka
// itself must never retire a record, and DeleteRecords must be allowed.
func CheckDataTopic(info TopicInfo, bootstrap string) []Finding {
	subject := "data topic " + info.Name
	alter := func(setting string) string {
		return fmt.Sprintf("kafka-configs --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config %s",
			bootstrap, info.Name, setting)
	}
	var out []Finding
	pol := info.Configs["cleanup.policy"]
	if !slices.Equal(policies(pol), []string{"compact", "delete"}) {
		sev := Block
		msg := fmt.Sprintf("cleanup.policy is %q; kcleanup needs compact,delete so that DeleteRecords is allowed", pol)
		if slices.Equal(policies(pol), []string{"delete"}) {
			msg = fmt.Sprintf("cleanup.policy is %q; action state needs compact,delete (compaction keeps the latest state, delete allows DeleteRecords)", pol)
		}
		// The hint sets retention together with the policy, in one atomic config change:
		// adding delete to a topic whose retention.ms is still the broker's default (7 days)
		// would let Kafka retire every older record at once.
		out = append(out, Finding{sev, subject, msg, alter("'retention.ms=-1,retention.bytes=-1,cleanup.policy=[compact,delete]'")})
	}
	for _, key := range []string{"retention.ms", "retention.bytes"} {
		if v := info.Configs[key]; v != "-1" {
			out = append(out, Finding{Block, subject,
				fmt.Sprintf("%s is %q; it must be -1, or Kafka retires records a recovery point may still need", key, v),
				alter(key + "=-1")})
		}
	}
	if len(out) == 0 {
		out = append(out, Finding{OK, subject, fmt.Sprintf("cleanup.policy=%s, retention.ms=-1, retention.bytes=-1", pol), ""})
	}
	return out
}

// MaxControlRecordBytes bounds one control record: enough for a plan of
// about 450,000 partitions.
const MaxControlRecordBytes = 16 << 20

// ControlTopicConfigs are the configs kcleanup creates a control topic with.
// min.insync.replicas is added when the replication factor allows it.
func ControlTopicConfigs(replicationFactor int16) map[string]*string {
	s := func(v string) *string { return &v }
	cfg := map[string]*string{
		"cleanup.policy":                 s("compact"),
		"unclean.leader.election.enable": s("false"),
		// Keep superseded values long enough for an auditor to read them.
		"min.compaction.lag.ms": s("604800000"),
		// A COMMITTED or APPLIED record carries the whole plan and a map of
		// every partition: past some tens of thousands of partitions it outgrows Kafka's 1 MB
		// default. Must match the producer's ProducerBatchMaxBytes (Connect).
		"max.message.bytes": s(strconv.Itoa(MaxControlRecordBytes)),
	}
	if replicationFactor >= 3 {
		cfg["min.insync.replicas"] = s("2")
	}
	return cfg
}

// CheckControlTopic checks a control topic against DESIGN §4.
func CheckControlTopic(info TopicInfo, dataTopic string, replicas int, bootstrap string) []Finding {
	subject := "control topic " + info.Name
	var out []Finding
	if info.Name == dataTopic {
		out = append(out, Finding{Block, subject, "the control topic must not be the data topic",
			"choose another --control-topic; the default is " + ControlTopicFor(dataTopic)})
	}
	if n := len(info.Partitions); n != 1 {
		out = append(out, Finding{Block, subject,
			fmt.Sprintf("has %d partitions; a control topic needs exactly one (one total order of decisions)", n),
			fmt.Sprintf("create a new one-partition control topic: kcleanup init --topic %s --control-topic <new name>", dataTopic)})
	}
	if pol := info.Configs["cleanup.policy"]; !slices.Equal(policies(pol), []string{"compact"}) {
		out = append(out, Finding{Block, subject,
			fmt.Sprintf("cleanup.policy is %q; a control topic needs exactly compact (delete would retire decisions)", pol),
			fmt.Sprintf("kafka-configs --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config cleanup.policy=compact", bootstrap, info.Name)})
	}
	if info.Configs["unclean.leader.election.enable"] == "true" {
		out = append(out, Finding{Warn, subject, "unclean leader election is enabled: a committed decision could be lost",
			fmt.Sprintf("kafka-configs --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config unclean.leader.election.enable=false", bootstrap, info.Name)})
	}
	if replicas < 3 {
		out = append(out, Finding{Warn, subject,
			fmt.Sprintf("replication factor is %d; production needs at least 3 with min.insync.replicas=2", replicas), ""})
	}
	if len(Blocking(out)) == 0 {
		out = append(out, Finding{OK, subject, "one partition, cleanup.policy=compact", ""})
	}
	return out
}

// ControlTopicFor is the default control topic of a data topic.
func ControlTopicFor(dataTopic string) string { return dataTopic + ".kcleanup" }
