package worker

import (
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/topicconfig"
)

// ControlTopicConfigs are the configs kcleanup creates a control topic with
// (topicconfig.CreateConfigs), in the form kadm's CreateTopic takes.
func ControlTopicConfigs(replicationFactor int16) map[string]*string {
	cfg := map[string]*string{}
	for k, v := range topicconfig.CreateConfigs(replicationFactor) {
		cfg[k] = &v
	}
	return cfg
}

// finding builds a Finding.
func finding(sev protocol.Severity, subject, message, hint string) protocol.Finding {
	return protocol.Finding{Severity: sev, Subject: subject, Message: message, Hint: hint}
}
