package events

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
)

// RetentionSchemaVersion is the envelope version of the retention events.
// They are version 7, above every earlier version (mirror 2, pin 3,
// mirror grace 4, a plan event's reason 5, the no-tombstones declaration 6), so that every kcleanup that predates them classifies
// them as ErrNewerSchema and fails closed, exactly as for pins: its
// projection degrades instead of skipping a policy that decides deletions
// (docs/events.md, "Retention events").
const RetentionSchemaVersion = 7

// The retention events (docs/design.md, "Follow the job").
const (
	// RetentionSet: from this record on, the owner of the control topic
	// follows the policy it carries (replacing any earlier one).
	RetentionSet Event = "RETENTION_SET"
	// RetentionCleared: from this record on, no policy is followed.
	RetentionCleared Event = "RETENTION_CLEARED"
)

// IsRetention reports whether e is one of the retention events.
func (e Event) IsRetention() bool { return retentionFamily.knows(e) }

// retentionFamily describes the retention events (family.go); no plan,
// mirror or pin key starts with its prefix, "retention/".
var retentionFamily = family{name: "retention", prefix: "retention/", events: [2]Event{RetentionSet, RetentionCleared},
	versions: []int{RetentionSchemaVersion}, expected: strconv.Itoa(RetentionSchemaVersion) + ", the schema version of retention events"}

// MinRetentionEvery is the shortest interval between two rounds of a policy.
const MinRetentionEvery = time.Second

// Retention is the body of a retention event. A RETENTION_SET carries every
// field but the optional operator ones; a RETENTION_CLEARED only Topic and
// Reason.
type Retention struct {
	// Topic is the data topic the policy trims.
	Topic string
	// Watch lists the watched locations: a checkpoint base directory
	// (<dir>/<jobid>/chk-N), one job's directory or a savepoint directory;
	// local paths or s3:// URLs.
	Watch []string
	// Every is how often the owner looks (at least MinRetentionEvery).
	Every time.Duration
	// MinAdvance is the least rise, on some partition, worth a plan (>= 0).
	MinAdvance int64
	// OperatorUID or OperatorUIDHash names the operator holding the
	// markers when a recovery point holds several; at most one is set.
	OperatorUID     string
	OperatorUIDHash string
	// Reason says why, for the audit: never blank.
	Reason string
}

// RetentionKey is the control-record key of a retention event:
// "retention/<EVENT>". One key per event: compaction keeps the latest SET
// and the latest CLEARED, and the fold decides by their offsets.
func RetentionKey(e Event) string { return retentionFamily.prefix + string(e) }

// IsRetentionKey reports whether a record key is a retention event's key.
func IsRetentionKey(key []byte) bool { return retentionFamily.isKey(key) }

// NewRetentionSet is the RETENTION_SET envelope of policy r (Validate it
// before producing it).
func NewRetentionSet(r Retention, at time.Time, actor string) Envelope {
	r.Watch = append([]string(nil), r.Watch...)
	return Envelope{SchemaVersion: RetentionSchemaVersion, Event: RetentionSet, Retention: &r, At: at.UTC(), Actor: actor}
}

// NewRetentionClear is the RETENTION_CLEARED envelope for topic.
func NewRetentionClear(topic, reason string, at time.Time, actor string) Envelope {
	return Envelope{SchemaVersion: RetentionSchemaVersion, Event: RetentionCleared, Retention: &Retention{Topic: topic, Reason: reason}, At: at.UTC(), Actor: actor}
}

// retentionJSON is a retention event on the wire, fields in Encode's order.
type retentionJSON struct {
	SchemaVersion   int      `json:"schemaVersion"`
	Event           string   `json:"event"`
	Topic           string   `json:"topic"`
	Watch           []string `json:"watch,omitempty"`
	EveryMs         int64    `json:"everyMs,omitzero"`
	MinAdvance      int64    `json:"minAdvance,omitzero"`
	OperatorUID     string   `json:"operatorUid,omitempty"`
	OperatorUIDHash string   `json:"operatorUidHash,omitempty"`
	At              string   `json:"at"`
	Actor           string   `json:"actor"`
	Reason          string   `json:"reason"`
}

// encodeRetention is Encode for a retention event.
func (e Envelope) encodeRetention() (key, value []byte) {
	r := e.Retention
	w := retentionJSON{SchemaVersion: RetentionSchemaVersion, Event: string(e.Event), Topic: r.Topic, At: e.At.UTC().Format(time.RFC3339Nano), Actor: e.Actor, Reason: r.Reason}
	if e.Event == RetentionSet {
		w.Watch, w.EveryMs, w.MinAdvance, w.OperatorUID, w.OperatorUIDHash = r.Watch, r.Every.Milliseconds(), r.MinAdvance, r.OperatorUID, r.OperatorUIDHash
	}
	b, err := json.Marshal(w, json.Deterministic(true))
	if err != nil { // only plain strings and numbers: cannot fail
		panic(err)
	}
	return []byte(RetentionKey(e.Event)), b
}

// decodeRetention reads a record under a retention key (value not nil,
// UTF-8). The rules, in order: the schema version (5; above it
// ErrNewerSchema), the key's event (unknown: ErrUnknownEvent), then every
// field strictly.
func decodeRetention(key, value []byte) (Envelope, error) {
	if _, err := retentionFamily.prelude(value); err != nil {
		return Envelope{}, err
	}
	ev := Event(strings.TrimPrefix(string(key), retentionFamily.prefix))
	if !isEventName(string(ev)) {
		return Envelope{}, &DecodeError{Field: "key", Reason: "is " + strconv.Quote(string(key)) + ": expected retention/<EVENT>, such as retention/RETENTION_SET"}
	}
	if !retentionFamily.knows(ev) {
		return Envelope{}, retentionFamily.unknownEvent(string(ev))
	}
	var w retentionJSON
	if err := json.Unmarshal(value, &w, strict); err != nil {
		return Envelope{}, malformed(fromLibrary(err, []string{"schemaVersion", "event", "topic", "watch", "everyMs", "minAdvance", "operatorUid", "operatorUidHash", "at", "actor", "reason"}))
	}
	if w.Event != string(ev) {
		return Envelope{}, malformed(keyMismatch("event", w.Event, string(ev)))
	}
	at, err := time.Parse(time.RFC3339Nano, w.At)
	if err != nil {
		return Envelope{}, malformed(fieldErrorf("at", "is %q: expected an RFC 3339 time", w.At))
	}
	r := Retention{Topic: w.Topic, Reason: w.Reason}
	if ev == RetentionSet {
		r.Watch, r.Every, r.MinAdvance, r.OperatorUID, r.OperatorUIDHash = w.Watch, time.Duration(w.EveryMs)*time.Millisecond, w.MinAdvance, w.OperatorUID, w.OperatorUIDHash
	} else if len(w.Watch) > 0 || w.EveryMs != 0 || w.MinAdvance != 0 || w.OperatorUID != "" || w.OperatorUIDHash != "" {
		return Envelope{}, malformed(fieldErrorf("value", "RETENTION_CLEARED carries only topic, at, actor and reason"))
	}
	if ferr := checkActor("actor", w.Actor); ferr != nil {
		return Envelope{}, malformed(ferr)
	}
	if err := r.Check(ev); err != nil {
		return Envelope{}, malformed(fieldErrorf("value", "%s", err.Error()))
	}
	return Envelope{SchemaVersion: RetentionSchemaVersion, Event: ev, Retention: &r, At: at.UTC(), Actor: w.Actor}, nil
}

// Check applies the rules of a policy's fields (a RETENTION_SET's, or only
// topic and reason for RETENTION_CLEARED): what the CLI checks before
// writing and every reader checks after.
func (r Retention) Check(e Event) error {
	if strings.TrimSpace(r.Topic) == "" {
		return fmt.Errorf("topic is blank: expected the data topic the policy trims")
	}
	if strings.TrimSpace(r.Reason) == "" {
		return fmt.Errorf("reason is blank: expected why the policy is set or cleared, for the audit")
	}
	if ferr := checkActor("reason", r.Reason); ferr != nil {
		return fmt.Errorf("reason %s", ferr.Reason)
	}
	if e != RetentionSet {
		return nil
	}
	if len(r.Watch) == 0 {
		return fmt.Errorf("watch is empty: expected at least one checkpoint or savepoint location")
	}
	seen := map[string]bool{}
	for _, w := range r.Watch {
		if strings.TrimSpace(w) == "" || strings.IndexFunc(w, func(c rune) bool { return c < ' ' || c == 0x7f }) >= 0 {
			return fmt.Errorf("watch location %q is blank or holds a control character", w)
		}
		if seen[w] {
			return fmt.Errorf("watch location %q is given twice", w)
		}
		seen[w] = true
	}
	if r.Every < MinRetentionEvery {
		return fmt.Errorf("every is %s: expected at least %s", r.Every, MinRetentionEvery)
	}
	if r.MinAdvance < 0 {
		return fmt.Errorf("minAdvance is %d: expected 0 or more", r.MinAdvance)
	}
	if r.OperatorUID != "" && r.OperatorUIDHash != "" {
		return fmt.Errorf("operatorUid and operatorUidHash are both set: expected at most one")
	}
	if h := r.OperatorUIDHash; h != "" && !isOperatorHash(h) {
		return fmt.Errorf("operatorUidHash is %q: expected 32 lowercase hex digits (Flink's operator ID)", h)
	}
	return nil
}

func isOperatorHash(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
