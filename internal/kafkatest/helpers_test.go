package kafkatest

import (
	"encoding/base64"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestTopicIDText pins Kafka's text form against an ID that `kafka-topics --describe`
// printed, and shows that kadm's String is a different encoding.
func TestTopicIDText(t *testing.T) {
	const printed = "Iz4CmIQ8SMSeu-J7e_DpxA" // kafka-topics --describe, Kafka 4.1.1
	raw, err := base64.RawURLEncoding.DecodeString(printed)
	if err != nil || len(raw) != 16 {
		t.Fatalf("decode %s: %v (%d bytes)", printed, err, len(raw))
	}
	id := [16]byte(raw)
	if got := TopicIDText(id); got != printed {
		t.Errorf("TopicIDText = %s, want %s", got, printed)
	}
	if got, want := kadm.TopicID(id).String(), "Iz4CmIQ8SMSeu+J7e/DpxA=="; got != want {
		t.Errorf("kadm.TopicID.String = %s, want %s (standard base64, padded)", got, want)
	}
}
