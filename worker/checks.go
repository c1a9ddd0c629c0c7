package worker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kcleanup/kcleanup/worker/gate"
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

// MaxControlRecordBytes bounds one control record (gate.MaxControlRecordBytes).
const MaxControlRecordBytes = gate.MaxControlRecordBytes

// ControlTopicConfigs are the configs kcleanup creates a control topic with
// (gate.CreateSettings). min.insync.replicas is added when the replication
// factor allows it.
func ControlTopicConfigs(replicationFactor int16) map[string]*string {
	cfg := map[string]*string{}
	for k, v := range gate.CreateSettings() {
		cfg[k] = &v
	}
	if replicationFactor >= 3 {
		two := "2"
		cfg["min.insync.replicas"] = &two
	}
	return cfg
}

// CheckControlTopic checks a control topic against DESIGN §4 with the
// settings rules of package gate, the ones the recovery gate applies too: a
// problem that lets the log cleaner outrun repairs blocks cleanup here and
// fails the gate closed there.
func CheckControlTopic(info TopicInfo, dataTopic string, replicas int, bootstrap string) []Finding {
	subject := "control topic " + info.Name
	var out []Finding
	if info.Name == dataTopic {
		out = append(out, Finding{Block, subject, "the control topic must not be the data topic",
			"choose another --control-topic; the default is " + ControlTopicFor(dataTopic)})
	}
	for _, p := range gate.Settings(info.Name, len(info.Partitions), info.Configs, bootstrap) {
		sev := Warn
		if p.Blocks {
			sev = Block
		}
		hint := p.Fix
		if p.Setting == "partitions" {
			hint = fmt.Sprintf("create a new one-partition control topic: kcleanup init --topic %s --control-topic <new name>", dataTopic)
		}
		out = append(out, Finding{sev, subject, p.Message, hint})
	}
	if replicas < 3 {
		out = append(out, Finding{Warn, subject,
			fmt.Sprintf("replication factor is %d; production needs at least 3 with min.insync.replicas=2", replicas), ""})
	}
	if len(Blocking(out)) == 0 {
		out = append(out, Finding{OK, subject, fmt.Sprintf("one partition, cleanup.policy=compact, min.compaction.lag.ms=%s, delete.retention.ms=%s",
			configOrDefault(info.Configs["min.compaction.lag.ms"]), configOrDefault(info.Configs["delete.retention.ms"])), ""})
	}
	return out
}

func configOrDefault(v string) string {
	if v == "" {
		return "(broker default)"
	}
	return v
}

// ControlTopicFor is the default control topic of a data topic.
func ControlTopicFor(dataTopic string) string { return dataTopic + ".kcleanup" }
