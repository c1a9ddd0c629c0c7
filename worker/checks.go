package worker

import (
	"fmt"

	"github.com/kcleanup/kcleanup/worker/gate"
	"github.com/kcleanup/kcleanup/worker/protocol"
)

// The findings of health checks are the protocol's (package protocol): the
// names below keep worker's callers unchanged.
type (
	// Severity says whether a finding blocks cleanup.
	Severity = protocol.Severity
	// Finding is one result of a health check: what was checked, what was
	// seen, and the exact command that fixes it.
	Finding = protocol.Finding
)

// Severities, from harmless to blocking.
const (
	OK    = protocol.OK
	Warn  = protocol.Warn
	Block = protocol.Block
)

// Blocking returns the findings that block cleanup.
func Blocking(fs []Finding) []Finding { return protocol.Blocking(fs) }

// CheckDataTopic checks the configs a data topic needs (protocol.CheckDataTopic).
func CheckDataTopic(info TopicInfo, bootstrap string) []Finding {
	return protocol.CheckDataTopic(info, bootstrap)
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

// CheckControlTopic checks a control topic against docs/design.md §4 with the
// settings rules of package gate, the ones the recovery gate applies too: a
// problem that lets the log cleaner outrun repairs blocks cleanup here and
// fails the gate closed there.
func CheckControlTopic(info TopicInfo, dataTopic string, replicas int, bootstrap string) []Finding {
	subject := "control topic " + info.Name
	var out []Finding
	if info.Name == dataTopic {
		out = append(out, finding(Block, subject, "the control topic must not be the data topic",
			"choose another --control-topic; the default is "+ControlTopicFor(dataTopic)))
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
		out = append(out, finding(sev, subject, p.Message, hint))
	}
	if replicas < 3 {
		out = append(out, finding(Warn, subject,
			fmt.Sprintf("replication factor is %d; production needs at least 3 with min.insync.replicas=2", replicas), ""))
	}
	if len(Blocking(out)) == 0 {
		out = append(out, finding(OK, subject, fmt.Sprintf("one partition, cleanup.policy=compact, min.compaction.lag.ms=%s, delete.retention.ms=%s",
			configOrDefault(info.Configs["min.compaction.lag.ms"]), configOrDefault(info.Configs["delete.retention.ms"])), ""))
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

// finding builds a Finding.
func finding(sev Severity, subject, message, hint string) Finding {
	return Finding{Severity: sev, Subject: subject, Message: message, Hint: hint}
}
