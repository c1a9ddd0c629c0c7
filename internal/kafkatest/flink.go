package kafkatest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kcleanup/kcleanup/events"
)

// FlinkRecord is the value Flink Agents' own cleanup tool writes for a plan
// on its control topic: Jackson's compact output of
// {"schemaVersion":1,"status":…,"plan":{…}}, the plan's fields in the order
// its toJson puts them, partitions ascending. Tests use it to build control
// topics in Flink Agents' format without a JVM.
func FlinkRecord(status string, p events.Plan) []byte {
	str := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"schemaVersion":1,"status":%s,"plan":{"schemaVersion":1,"planId":%s,"sourceRecoveryPoint":%s,"topic":%s,"topicId":%s,"offsets":{`,
		str(status), str(p.PlanID), str(p.SourceRecoveryPoint), str(p.Topic), str(p.TopicID))
	for i, part := range p.Offsets.Partitions() {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%d":%d`, part, p.Offsets[part])
	}
	b.WriteString("}}}")
	return []byte(b.String())
}
