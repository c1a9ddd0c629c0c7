package gate

import (
	"fmt"
	"github.com/kcleanup/kcleanup/topicconfig"
	"strings"
)

// Shape is what says whether a topic is a control topic at all, as opposed
// to a control topic with unsafe settings (topicconfig.ControlTopic): exactly one partition,
// cleanup.policy exactly compact, and, once read, records in kcleanup's or
// Flink Agents' control format. A topic of another shape is never read as a
// control topic by any command: reading a data topic as one finds no
// decision in it and would say "no boundary" about a topic whose boundary is
// recorded elsewhere.
type Shape struct {
	Topic      string
	Partitions int
	// Policy is cleanup.policy as the broker reports it ("" when it reports
	// none: Kafka's default, delete).
	Policy string
	// The records a read found, by the format of their key; all zero before
	// a read, or for an empty topic.
	Kcleanup, FlinkAgents, Other int64
}

// ShapeOf is the shape of a topic from its partition count and configs,
// before any record is read.
func ShapeOf(topic string, partitions int, configs map[string]string) Shape {
	return Shape{Topic: topic, Partitions: partitions, Policy: configs["cleanup.policy"]}
}

// Misfit says what makes the topic no control topic ("nc-as has 3
// partitions and cleanup.policy=compact,delete"), "" when it is shaped like
// one.
func (s Shape) Misfit() string {
	var why []string
	if s.Partitions != 1 {
		why = append(why, fmt.Sprintf("%d partitions", s.Partitions))
	}
	if !topicconfig.IsCompactOnly(s.Policy) {
		pol := s.Policy
		if pol == "" {
			pol = "delete (Kafka's default)"
		}
		why = append(why, "cleanup.policy="+pol)
	}
	if s.Other > 0 && s.Kcleanup == 0 && s.FlinkAgents == 0 {
		why = append(why, fmt.Sprintf("%d record(s), none in kcleanup's or Flink Agents' control format", s.Other))
	}
	if len(why) == 0 {
		return ""
	}
	return s.Topic + " has " + strings.Join(why, " and ")
}

// NotControlTopic is the sentence every command says about a topic that is
// not shaped like a control topic (Misfit), or "" for one that is: what it
// looks like, and the control topics that govern it when the caller found
// some (bound: their bindings name this topic).
func (s Shape) NotControlTopic(bound []string) string {
	m := s.Misfit()
	if m == "" {
		return ""
	}
	out := m + ": it is not a control topic (one partition, cleanup.policy=compact), it looks like a data topic"
	switch len(bound) {
	case 0:
	case 1:
		out += "; its control topic is " + bound[0]
	default:
		out += "; control topics " + strings.Join(bound, ", ") + " govern it"
	}
	return out
}
