package flinkagents

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kcleanup/kcleanup/events"
)

// Status is a plan's state on a Flink Agents control topic.
type Status string

// The two statuses Flink Agents writes (its enum names).
const (
	Committed Status = "COMMITTED"
	Applied   Status = "APPLIED"
)

// zeroTopicID is Kafka's Uuid.ZERO_UUID, which the job refuses as a topic ID.
const zeroTopicID = "AAAAAAAAAAAAAAAAAAAAAA"

// Plan is a cleanup plan as the job holds it. The text fields are WTF-8
// (text.go): they may hold a lone surrogate, which the job keeps, and
// anything else the job accepts (control characters, a topic ID of any
// length). PlanID is verified as the job computes it.
type Plan struct {
	PlanID              string
	SourceRecoveryPoint string
	Topic               string
	TopicID             string
	Offsets             events.Offsets
}

// Equal is the job's plan equality.
func (p Plan) Equal(q Plan) bool {
	return p.PlanID == q.PlanID && p.SourceRecoveryPoint == q.SourceRecoveryPoint &&
		p.Topic == q.Topic && p.TopicID == q.TopicID && p.Offsets.Equal(q.Offsets)
}

// ComputePlanID is the job's plan ID: the same text as events.ComputePlanID,
// hashed over the bytes Java's String.getBytes(UTF_8) gives, where a lone
// surrogate becomes '?'.
func ComputePlanID(recoveryPoint, topic, topicID string, offsets events.Offsets) string {
	return events.ComputePlanID(javaUTF8(recoveryPoint), javaUTF8(topic), javaUTF8(topicID), offsets)
}

// Kcleanup returns the plan as a kcleanup plan, with the same ID, or the
// precise reason kcleanup's stricter plan rules refuse it (a topic ID that
// is not a Kafka topic ID, control characters or a lone surrogate in the
// recovery point, an illegal topic name).
func (p Plan) Kcleanup() (events.Plan, error) {
	for _, f := range []struct{ name, v string }{{"sourceRecoveryPoint", p.SourceRecoveryPoint}, {"topic", p.Topic}, {"topicId", p.TopicID}} {
		if HasLoneSurrogate(f.v) {
			return events.Plan{}, &Error{Reason: ReasonUnsupported, Offset: -1, PlanID: p.PlanID,
				Detail: "plan " + p.PlanID + ": " + f.name + " " + quote(f.v) + " holds a lone UTF-16 surrogate, which Flink Agents hashes as '?' and kcleanup plans cannot hold"}
		}
	}
	kp := events.Plan{PlanID: p.PlanID, SourceRecoveryPoint: p.SourceRecoveryPoint, Topic: p.Topic, TopicID: p.TopicID, Offsets: p.Offsets.Clone()}
	if err := kp.Validate(); err != nil {
		return events.Plan{}, &Error{Reason: ReasonUnsupported, Offset: -1, PlanID: p.PlanID,
			Detail: "plan " + p.PlanID + " is valid for Flink Agents but not for kcleanup: " + err.Error()}
	}
	return kp, nil
}

// Operation is one plan and its latest status.
type Operation struct {
	Plan   Plan
	Status Status
	// First is the offset of the plan's first record, Last of its latest.
	First, Last int64
}

var recordFields = []string{"schemaVersion", "status", "plan"}
var planFields = []string{"schemaVersion", "planId", "sourceRecoveryPoint", "topic", "topicId", "offsets"}

// ParseValue reads a control record's value as the job's
// Operation.fromJson does. The error's Offset is -1; Step sets it.
func ParseValue(value []byte) (Status, Plan, *Error) {
	fail := func(format string, args ...any) (Status, Plan, *Error) {
		return "", Plan{}, recordError(-1, ReasonMalformed, "", format, args...)
	}
	if !utf8.Valid(value) {
		return "", Plan{}, recordError(-1, ReasonUnsupported, "",
			"the value is not valid UTF-8: the job's deserializer replaces such bytes with U+FFFD, and kcleanup does not guess what that makes of the record")
	}
	root, err := parseJSON(value)
	if err != nil {
		return fail("Cleanup control record must be JSON: %v", err)
	}
	if root.kind != kindObject {
		return fail("Cleanup control record must be JSON: it is %s, not an object", root.kind)
	}
	if msg := exactFields(root, recordFields); msg != "" {
		return fail("Cleanup control record fields must be exactly [%s]: %s", strings.Join(recordFields, ", "), msg)
	}
	if v := root.get("schemaVersion"); !v.integral() || v.text != "1" {
		return fail("Unsupported cleanup control record schema %s: expected 1", render(v))
	}
	st := root.get("status")
	if st.kind != kindString {
		return fail("Cleanup control record status must be a string, not %s", st.kind)
	}
	status := Status(st.text)
	if status != Committed && status != Applied {
		return fail("Cleanup control record status is %s: expected COMMITTED or APPLIED", quote(st.text))
	}
	p, perr := planFromNode(root.get("plan"))
	if perr != nil {
		return "", Plan{}, perr
	}
	return status, p, nil
}

// planFromNode is the job's KafkaActionStateCleanupPlan.fromJson, applied
// to the plan member (the job re-serialises and re-parses it; the round
// trip changes nothing it checks).
func planFromNode(n *node) (Plan, *Error) {
	fail := func(format string, args ...any) (Plan, *Error) {
		return Plan{}, recordError(-1, ReasonMalformed, "", "plan: "+format, args...)
	}
	if n.kind != kindObject {
		return fail("Cleanup plan must be JSON: it is %s, not an object", n.kind)
	}
	if msg := exactFields(n, planFields); msg != "" {
		return fail("Cleanup plan fields must be exactly [%s]: %s", strings.Join(planFields, ", "), msg)
	}
	on := n.get("offsets")
	if on.kind != kindObject {
		return fail("Cleanup plan offsets must be an object, not %s", on.kind)
	}
	offsets := events.Offsets{}
	for _, m := range on.members {
		v := m.value
		off, ok := int64(0), v.integral()
		if ok {
			var err error
			off, err = strconv.ParseInt(v.text, 10, 64)
			ok = err == nil
		}
		if !ok {
			return fail("Cleanup offset for partition %s must be an integer, not %s", quote(m.name), render(v))
		}
		part, ok := javaCanonicalInt(m.name)
		if !ok {
			return fail("Cleanup plan partition %s must use canonical decimal form", quote(m.name))
		}
		if part < 0 {
			return fail("Kafka partition must be non-negative: %d", part)
		}
		if off < 0 {
			return fail("Kafka cleanup offset must be non-negative: partition %d has %d", part, off)
		}
		offsets[part] = off // names are unique, so partitions are
	}
	if v := n.get("schemaVersion"); !v.integral() || v.text != "1" {
		return fail("Unsupported Kafka action-state cleanup plan schema %s: expected 1", render(v))
	}
	var p Plan
	for _, f := range []struct {
		name string
		dst  *string
	}{{"planId", &p.PlanID}, {"sourceRecoveryPoint", &p.SourceRecoveryPoint}, {"topic", &p.Topic}, {"topicId", &p.TopicID}} {
		v := n.get(f.name)
		if v.kind == kindNull {
			return fail("Cleanup plan is missing %s", f.name)
		}
		if v.kind != kindString {
			return fail("Cleanup plan %s must be a string, not %s", f.name, v.kind)
		}
		*f.dst = v.text
	}
	for _, f := range []struct{ name, v string }{{"sourceRecoveryPoint", p.SourceRecoveryPoint}, {"topic", p.Topic}, {"topicId", p.TopicID}} {
		if javaBlank(f.v) {
			return fail("%s must not be blank", f.name)
		}
	}
	if p.TopicID == zeroTopicID {
		return fail("topicId is the zero topic ID: checkpoint-aligned cleanup requires a broker-provided Kafka topic ID")
	}
	if len(offsets) == 0 {
		return fail("Cleanup offsets must not be empty")
	}
	p.Offsets = offsets
	if want := ComputePlanID(p.SourceRecoveryPoint, p.Topic, p.TopicID, offsets); p.PlanID != want {
		return Plan{}, recordError(-1, ReasonMalformed, p.PlanID,
			"plan: Kafka action-state cleanup plan ID does not match its contents: planId %s, content hashes to %s", quote(p.PlanID), want)
	}
	return p, nil
}

// javaCanonicalInt is Integer.parseInt(s) followed by the job's check that
// s equals Integer.toString of the result: an optional '-' and decimal
// digits without a leading zero, within int32.
func javaCanonicalInt(s string) (int32, bool) {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || strconv.FormatInt(v, 10) != s {
		return 0, false
	}
	return int32(v), true
}

// exactFields returns "" when n's names are exactly want, else what differs.
func exactFields(n *node, want []string) string {
	var have []string
	for _, m := range n.members {
		have = append(have, m.name)
	}
	for _, h := range have {
		if !slices.Contains(want, h) {
			return "unknown field " + quote(h)
		}
	}
	for _, w := range want {
		if !slices.Contains(have, w) {
			return "missing field " + quote(w)
		}
	}
	return ""
}

// render shows a value briefly in an error.
func render(n *node) string {
	switch n.kind {
	case kindString:
		return quote(n.text)
	case kindNumber, kindBool, kindNull:
		if len(n.text) > 40 {
			return n.text[:40] + "…"
		}
		return n.text
	}
	return n.kind.String()
}

// IsPlanIDKey reports whether a record key is a bare plan ID (64 lowercase
// hex digits): the key of every record Flink Agents' tool writes, and of no
// record kcleanup writes (its keys are "<planId>/<EVENT>"). A control topic
// holding such a key is in Flink Agents' format.
func IsPlanIDKey(key []byte) bool {
	if len(key) != 64 {
		return false
	}
	for _, c := range key {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
