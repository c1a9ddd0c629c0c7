package worker

import (
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

// ControlTopicFor is the default control topic of a data topic (protocol.ControlTopicFor).
func ControlTopicFor(dataTopic string) string { return protocol.ControlTopicFor(dataTopic) }

// finding builds a Finding.
func finding(sev Severity, subject, message, hint string) Finding {
	return Finding{Severity: sev, Subject: subject, Message: message, Hint: hint}
}
