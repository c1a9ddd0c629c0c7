package events

import (
	"encoding/base64"
	"fmt"

	"github.com/cockroachdb/errors"
)

// zeroTopicID is Kafka's Uuid.ZERO_UUID: "no topic ID", never a real topic's.
const zeroTopicID = "AAAAAAAAAAAAAAAAAAAAAA"

// topicIDEncoding is Kafka's text form of a Uuid. Strict rejects strings whose
// unused low bits are set, so every ID has exactly one spelling.
var topicIDEncoding = base64.RawURLEncoding.Strict()

// ValidTopicID checks that id is a Kafka topic ID as `kafka-topics --describe`
// prints it: 22 characters of URL-safe base64 without padding that decode to
// 16 bytes, and not the zero ID.
func ValidTopicID(id string) error {
	if reason := topicIDProblem(id); reason != "" {
		return errors.Newf("topic ID %q %s", id, errors.Safe(reason))
	}
	return nil
}

// topicIDProblem returns "" for a valid ID, else what is wrong and expected.
func topicIDProblem(id string) string {
	const expected = "expected 22 characters of URL-safe base64 without padding, as kafka-topics --describe prints it"
	if len(id) != 22 {
		return fmt.Sprintf("has %d bytes: %s", len(id), expected)
	}
	var raw [16]byte // 22 characters decode to at most 16 bytes
	n, err := topicIDEncoding.Decode(raw[:], []byte(id))
	if err != nil || n != 16 {
		return "is not a Kafka topic ID: " + expected
	}
	if id == zeroTopicID {
		return "is the zero topic ID, which Kafka uses for \"no ID\": expected the data topic's real ID"
	}
	return ""
}
