package gate

import (
	"encoding/json"
	"regexp"
)

// FlinkAgents names the control format of Flink Agents' own cleanup tool
// (KafkaActionStateCleanupTool): key = the bare 64-hex plan ID, value a JSON
// object with exactly schemaVersion, status and plan.
const FlinkAgents = "Flink Agents' control format"

// ForeignRecord is a control record in another tool's format, as the reader
// saw it: the fold rejects it (bad key), and the gate must not read that as
// "nothing here".
type ForeignRecord struct {
	Offset int64  `json:"offset"`
	Key    string `json:"key"`
	// Format names the format (FlinkAgents).
	Format string `json:"format"`
	// Status is the record's own status field ("COMMITTED", ...), when it
	// is a string.
	Status string `json:"status,omitempty"`
}

var planIDKey = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Foreign reports whether a record the fold rejected looks like another
// tool's control record. This is the one place such formats are recognised:
// teach the gate to fold one by replacing its branch here.
func Foreign(offset int64, key, value []byte) (ForeignRecord, bool) {
	if !planIDKey.Match(key) || value == nil {
		return ForeignRecord{}, false
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(value, &fields); err != nil || len(fields) != 3 {
		return ForeignRecord{}, false
	}
	for _, f := range []string{"schemaVersion", "status", "plan"} {
		if _, ok := fields[f]; !ok {
			return ForeignRecord{}, false
		}
	}
	r := ForeignRecord{Offset: offset, Key: string(key), Format: FlinkAgents}
	_ = json.Unmarshal(fields["status"], &r.Status) // best effort: for the message only
	return r, true
}
