package projector

import "github.com/kcleanup/kcleanup/projector/flinkagents"

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

// Foreign reports whether a record the fold rejected is another tool's
// control record. This is the one place such formats are recognised: a key
// that is a bare plan ID (flinkagents.IsPlanIDKey) is Flink Agents', whatever
// the value (a tombstone under it is one too: it fails the job's fold).
func Foreign(offset int64, key, value []byte) (ForeignRecord, bool) {
	if !flinkagents.IsPlanIDKey(key) {
		return ForeignRecord{}, false
	}
	r := ForeignRecord{Offset: offset, Key: string(key), Format: FlinkAgents}
	if value == nil {
		r.Status = "tombstone"
	} else if st, _, err := flinkagents.ParseValue(value); err == nil {
		r.Status = string(st)
	}
	return r, true
}
