package worker

import (
	"github.com/kcleanup/kcleanup/gate"
	"github.com/kcleanup/kcleanup/protocol"
)

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

// finding builds a Finding.
func finding(sev protocol.Severity, subject, message, hint string) protocol.Finding {
	return protocol.Finding{Severity: sev, Subject: subject, Message: message, Hint: hint}
}
