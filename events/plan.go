package events

import (
	"bytes"
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
	sum := planIDSum(recoveryPoint, topic, topicID, offsets)
	return hex.EncodeToString(sum[:])
}

// planIDSum is the SHA-256 ComputePlanID writes in hex. It builds the text
// on the stack for a plan of a few partitions: every new plan a Decoder
// reads is checked with it.
func planIDSum(recoveryPoint, topic, topicID string, offsets Offsets) [sha256.Size]byte {
	var buf [512]byte
	b := buf[:0]
	b = strconv.AppendInt(b, SchemaVersion, 10)
	b = append(b, '\n')
	b = append(b, recoveryPoint...)
	b = append(b, '\n')
	b = append(b, topic...)
	b = append(b, '\n')
	b = append(b, topicID...)
	b = append(b, '\n')
	var small [16]int32
	for _, p := range offsets.appendPartitions(small[:0]) {
		b = strconv.AppendInt(b, int64(p), 10)
		b = append(b, '=')
		b = strconv.AppendInt(b, offsets[p], 10)
		b = append(b, '\n')
	}
	return sha256.Sum256(b)
}

// matchPlanID checks that id is the plan ID of the content, and words the
// mismatch as ParsePlan does.
func matchPlanID(id, recoveryPoint, topic, topicID string, offsets Offsets) *fieldError {
	sum := planIDSum(recoveryPoint, topic, topicID, offsets)
	var text [2 * sha256.Size]byte
	hex.Encode(text[:], sum[:])
	if string(text[:]) != id {
		return idMismatch(id, string(text[:]))
	}
	return nil
}

// planFields are the fields of a plan, in the order Encode writes them.
var planFields = []string{"schemaVersion", "planId", "sourceRecoveryPoint", "topic", "topicId", "offsets"}

// ParsePlan reads a plan file strictly (docs/design.md §3) and verifies its ID. Every
// error names the field at fault and what was expected.
// A UTF-8 byte order mark at the start is skipped (editors on Windows write
// one); the plan ID covers the content, not the bytes.
func ParsePlan(data []byte) (Plan, error) {
	p, ferr := decodePlan(bytes.TrimPrefix(data, utf8BOM))
	if ferr != nil {
		return Plan{}, planError(ferr)
	}
	return p, nil
}

func planError(ferr *fieldError) error {
	err := errors.Newf("invalid plan: %s", ferr.Error())
	if ferr.detail == ErrPlanEdited {
		err = errors.Mark(err, ErrPlanEdited)
		err = errors.WithHint(err, "make a new plan from the recovery point instead of editing one: kcleanup plan")
	}
	return err
}

// planJSON is the plan object as decoded; each field checks itself.
type planJSON struct {
	SchemaVersion       version            `json:"schemaVersion"`
	PlanID              str[planIDRule]    `json:"planId"`
	SourceRecoveryPoint str[recoveryPoint] `json:"sourceRecoveryPoint"`
	Topic               str[topicRule]     `json:"topic"`
	TopicID             str[topicIDRule]   `json:"topicId"`
	Offsets             offsetsField       `json:"offsets"`
}

// decodePlan reads a plan object strictly: exactly the six fields, each
// valid, and a planId that matches the content.
func decodePlan(data []byte) (Plan, *fieldError) {
	var w planJSON
	if ferr := decodeStrict(data, &w, planFields); ferr != nil {
		return Plan{}, ferr
	}
	for i, set := range [...]bool{w.SchemaVersion.set, w.PlanID.set, w.SourceRecoveryPoint.set, w.Topic.set, w.TopicID.set, w.Offsets.set} {
		if !set {
			return Plan{}, missingField(planFields[i])
		}
	}
	p := Plan{PlanID: w.PlanID.v, SourceRecoveryPoint: w.SourceRecoveryPoint.v, Topic: w.Topic.v, TopicID: w.TopicID.v, Offsets: w.Offsets.v}
	if ferr := matchPlanID(p.PlanID, p.SourceRecoveryPoint, p.Topic, p.TopicID, p.Offsets); ferr != nil {
		return Plan{}, ferr
	}
	return p, nil
}

// The rules of the plan's string fields (see str).
type (
	planIDRule    struct{}
	recoveryPoint struct{}
	topicRule     struct{}
	topicIDRule   struct{}
)

func (planIDRule) check(s string) *fieldError {
	if !isPlanID(s) {
		return fieldErrorf("", "is %q: expected 64 lowercase hex digits (a SHA-256)", s)
	}
	return nil
}
func (recoveryPoint) check(s string) *fieldError { return checkRecoveryPoint("", s) }
func (topicRule) check(s string) *fieldError     { return checkTopic("", s) }
func (topicIDRule) check(s string) *fieldError   { return checkTopicID("", s) }

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
	return matchPlanID(p.PlanID, p.SourceRecoveryPoint, p.Topic, p.TopicID, p.Offsets)
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

func isPlanID[T ~string | ~[]byte](s T) bool {
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
