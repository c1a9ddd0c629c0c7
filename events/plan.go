package events

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cockroachdb/errors"
)

// ComputePlanID returns the plan ID Flink Agents' KafkaActionStateCleanupTool
// computes: the lowercase hex SHA-256 of the UTF-8 text
//
//	"1\n" + recoveryPoint + "\n" + topic + "\n" + topicID + "\n"
//
// followed, for each partition in ascending numeric order, by
// partition + "=" + offset + "\n". The ID covers content, not JSON bytes, so
// whitespace and field order in the file do not change it.
func ComputePlanID(recoveryPoint, topic, topicID string, offsets Offsets) string {
	b := make([]byte, 0, 64+len(recoveryPoint)+len(topic)+len(topicID)+len(offsets)*16)
	b = strconv.AppendInt(b, SchemaVersion, 10)
	b = append(b, '\n')
	b = append(b, recoveryPoint...)
	b = append(b, '\n')
	b = append(b, topic...)
	b = append(b, '\n')
	b = append(b, topicID...)
	b = append(b, '\n')
	for _, p := range offsets.Partitions() {
		b = strconv.AppendInt(b, int64(p), 10)
		b = append(b, '=')
		b = strconv.AppendInt(b, offsets[p], 10)
		b = append(b, '\n')
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// planFields are the fields of a plan, in the order Encode writes them.
var planFields = []string{"schemaVersion", "planId", "sourceRecoveryPoint", "topic", "topicId", "offsets"}

// ParsePlan reads a plan file strictly (DESIGN §3) and verifies its ID. Every
// error names the field at fault and what was expected.
func ParsePlan(data []byte) (Plan, error) {
	n, ferr := parseJSON(data)
	if ferr == nil {
		var p Plan
		p, ferr = planFromNode(n)
		if ferr == nil {
			return p, nil
		}
	}
	return Plan{}, planError(ferr)
}

func planError(ferr *fieldError) error {
	err := errors.Newf("invalid plan: %s", ferr.Error())
	if ferr.detail == ErrPlanEdited {
		err = errors.Mark(err, ErrPlanEdited)
		err = errors.WithHint(err, "make a new plan from the recovery point instead of editing one: kcleanup plan")
	}
	return err
}

// planFromNode checks a parsed plan object: exactly the six fields, each
// valid, and a planId that matches the content.
func planFromNode(n node) (Plan, *fieldError) {
	if n.kind != kindObject {
		return Plan{}, wrongKind("", n, "a JSON object")
	}
	var p Plan
	var seen [6]bool
	for _, m := range n.members {
		i := indexOf(planFields, m.name)
		if i < 0 {
			return Plan{}, unknownField(m.name, planFields)
		}
		seen[i] = true
		var ferr *fieldError
		switch m.name {
		case "schemaVersion":
			ferr = schemaVersionFromNode(m.name, m.value)
		case "planId":
			p.PlanID, ferr = stringFromNode(m.name, m.value)
			if ferr == nil && !isPlanID(p.PlanID) {
				ferr = fieldErrorf(m.name, "is %q: expected 64 lowercase hex digits (a SHA-256)", p.PlanID)
			}
		case "sourceRecoveryPoint":
			p.SourceRecoveryPoint, ferr = stringFromNode(m.name, m.value)
			if ferr == nil {
				ferr = checkRecoveryPoint(m.name, p.SourceRecoveryPoint)
			}
		case "topic":
			p.Topic, ferr = stringFromNode(m.name, m.value)
			if ferr == nil {
				ferr = checkTopic(m.name, p.Topic)
			}
		case "topicId":
			p.TopicID, ferr = stringFromNode(m.name, m.value)
			if ferr == nil {
				ferr = checkTopicID(m.name, p.TopicID)
			}
		case "offsets":
			p.Offsets, ferr = offsetsFromNode(m.name, m.value)
		}
		if ferr != nil {
			return Plan{}, ferr
		}
	}
	for i, ok := range seen {
		if !ok {
			return Plan{}, missingField(planFields[i])
		}
	}
	if id := ComputePlanID(p.SourceRecoveryPoint, p.Topic, p.TopicID, p.Offsets); id != p.PlanID {
		return Plan{}, idMismatch(p.PlanID, id)
	}
	return p, nil
}

const editedReason = "does not match the plan's content"

func idMismatch(got, want string) *fieldError {
	f := fieldErrorf("planId", "%s: the plan was edited after it was made (planId %s, content hashes to %s)", editedReason, got, want)
	f.detail = ErrPlanEdited
	return f
}

// Validate checks a plan built in code as strictly as ParsePlan checks a file,
// including its ID.
func (p Plan) Validate() error {
	if ferr := p.check(); ferr != nil {
		return planError(ferr)
	}
	return nil
}

func (p Plan) check() *fieldError {
	if !isPlanID(p.PlanID) {
		return fieldErrorf("planId", "is %q: expected 64 lowercase hex digits (a SHA-256)", p.PlanID)
	}
	if ferr := checkRecoveryPoint("sourceRecoveryPoint", p.SourceRecoveryPoint); ferr != nil {
		return ferr
	}
	if ferr := checkTopic("topic", p.Topic); ferr != nil {
		return ferr
	}
	if ferr := checkTopicID("topicId", p.TopicID); ferr != nil {
		return ferr
	}
	if ferr := validateOffsets("offsets", p.Offsets); ferr != nil {
		return ferr
	}
	if id := ComputePlanID(p.SourceRecoveryPoint, p.Topic, p.TopicID, p.Offsets); id != p.PlanID {
		return idMismatch(p.PlanID, id)
	}
	return nil
}

// Encode writes the plan file: the six fields in a fixed order, two-space
// indentation, one partition per line in ascending order, and a trailing
// newline. Equal plans always encode to equal bytes.
func (p Plan) Encode() []byte {
	return append(p.appendJSON(nil, true), '\n')
}

// appendJSON writes the plan object, indented for a file when pretty, else
// compact (inside an envelope).
func (p Plan) appendJSON(b []byte, pretty bool) []byte {
	field := func(name string) {
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		if pretty {
			b = append(b, "\n  "...)
		}
		b = appendString(b, name)
		b = append(b, ':')
		if pretty {
			b = append(b, ' ')
		}
	}
	b = append(b, '{')
	field("schemaVersion")
	b = strconv.AppendInt(b, SchemaVersion, 10)
	field("planId")
	b = appendString(b, p.PlanID)
	field("sourceRecoveryPoint")
	b = appendString(b, p.SourceRecoveryPoint)
	field("topic")
	b = appendString(b, p.Topic)
	field("topicId")
	b = appendString(b, p.TopicID)
	field("offsets")
	if pretty {
		b = appendOffsets(b, p.Offsets, "  ")
		b = append(b, '\n')
	} else {
		b = appendOffsets(b, p.Offsets, "")
	}
	return append(b, '}')
}

func schemaVersionFromNode(field string, n node) *fieldError {
	if n.kind != kindNumber {
		return wrongKind(field, n, "1")
	}
	if n.text != "1" {
		return fieldErrorf(field, "is %s: this kcleanup understands only schema version %d", n.text, SchemaVersion)
	}
	return nil
}

func stringFromNode(field string, n node) (string, *fieldError) {
	if n.kind != kindString {
		return "", wrongKind(field, n, "a string")
	}
	return n.text, nil
}

func isPlanID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// checkRecoveryPoint: any non-blank text without control characters. A
// newline would blur the lines the plan ID is computed over.
func checkRecoveryPoint(field, s string) *fieldError {
	if strings.TrimSpace(s) == "" {
		return fieldErrorf(field, "is blank: expected the checkpoint or savepoint the plan was made from")
	}
	if !utf8.ValidString(s) {
		return fieldErrorf(field, "is not valid UTF-8")
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		return fieldErrorf(field, "contains control character %q at byte %d: expected printable text", s[i], i)
	}
	return nil
}

// checkTopic accepts legal Kafka topic names: 1 to 249 of [a-zA-Z0-9._-],
// not "." or "..".
func checkTopic(field, s string) *fieldError {
	if strings.TrimSpace(s) == "" {
		return fieldErrorf(field, "is blank: expected the data topic's name")
	}
	const legal = "expected a Kafka topic name: 1 to 249 characters of a-z, A-Z, 0-9, '.', '_' and '-', not \".\" or \"..\""
	if len(s) > 249 || s == "." || s == ".." {
		return fieldErrorf(field, "is %q: %s", s, legal)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fieldErrorf(field, "is %q: %s", s, legal)
		}
	}
	return nil
}

func checkTopicID(field, s string) *fieldError {
	if reason := topicIDProblem(s); reason != "" {
		return fieldErrorf(field, "%q %s", s, reason)
	}
	return nil
}

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

func unknownField(name string, known []string) *fieldError {
	return fieldErrorf(childPath("", name), "is not a known field: expected only %s", strings.Join(known, ", "))
}

func missingField(name string) *fieldError {
	return fieldErrorf(name, "is missing")
}
