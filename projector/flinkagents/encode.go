package flinkagents

import (
	"encoding/json"
	"strconv"

	"github.com/kcleanup/kcleanup/events"
)

// FromKcleanup is a kcleanup plan as the job holds it: the same fields
// and the same ID (kcleanup's plans are a subset of the job's).
func FromKcleanup(p events.Plan) Plan {
	return Plan{PlanID: p.PlanID, SourceRecoveryPoint: p.SourceRecoveryPoint, Topic: p.Topic, TopicID: p.TopicID, Offsets: p.Offsets.Clone()}
}

// EncodeValue is the value of a control record in the job's format, as
// Flink Agents' tool writes it: compact JSON with exactly the three
// fields, {"schemaVersion":1,"status":…,"plan":{…the plan file's six
// fields, partitions ascending…}}. The key is the plan ID. kcleanup
// writes it to a mirror only (docs/flink-agents.md, "The mirror");
// ParseValue reads it back to the same status and plan
// (TestEncodeValueRoundTrip).
func EncodeValue(status Status, p events.Plan) []byte {
	b := make([]byte, 0, 256+24*len(p.Offsets))
	b = append(b, `{"schemaVersion":1,"status":`...)
	b = appendJSONString(b, string(status))
	b = append(b, `,"plan":{"schemaVersion":1,"planId":`...)
	b = appendJSONString(b, p.PlanID)
	b = append(b, `,"sourceRecoveryPoint":`...)
	b = appendJSONString(b, p.SourceRecoveryPoint)
	b = append(b, `,"topic":`...)
	b = appendJSONString(b, p.Topic)
	b = append(b, `,"topicId":`...)
	b = appendJSONString(b, p.TopicID)
	b = append(b, `,"offsets":{`...)
	for i, part := range p.Offsets.Partitions() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(part), 10)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, p.Offsets[part], 10)
	}
	return append(b, "}}}"...)
}

// appendJSONString appends s as a JSON string (encoding/json's escaping,
// which Jackson reads back to the same string).
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}
