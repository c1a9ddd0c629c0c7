package events

import (
	"bytes"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// MirrorSchemaVersion is the envelope version of the mirror events. They
// are version 2, not 1, so that a kcleanup that predates them (which
// understands only version 1) classifies them as ErrNewerSchema and fails
// closed (its projection degrades: it commits and deletes nothing) instead
// of skipping a record that obliges it to keep a Flink Agents mirror in
// step (docs/events.md, "Mirror events").
const MirrorSchemaVersion = 2

// The mirror events (docs/design.md, "The Flink Agents mirror").
const (
	// MirrorAttached: from this record on, every apply and every worker
	// keeps the named topic, in Flink Agents' control format, in step with
	// the boundary (the topic a Flink Agents job's
	// kafkaActionStateCleanupControlTopic names).
	MirrorAttached Event = "MIRROR_ATTACHED"
	// MirrorDetached: the named mirror is no longer kept in step.
	MirrorDetached Event = "MIRROR_DETACHED"
)

// IsMirror reports whether e is one of the mirror events.
func (e Event) IsMirror() bool { return e == MirrorAttached || e == MirrorDetached }

// Mirror is the body of a mirror event: which topic, which incarnation of
// it, and why (for the audit).
type Mirror struct {
	// Topic is the mirror topic's name; TopicID its Kafka topic ID when the
	// event was written (a recreated mirror has another, and is refused).
	Topic   string
	TopicID string
	// Reason says why, for the audit: never blank.
	Reason string
}

// mirrorKeyPrefix starts every mirror event's key. No plan key can start
// with it (plan keys start with 64 hex digits), nor a Flink Agents key (a
// bare plan ID).
const mirrorKeyPrefix = "mirror/"

// MirrorKey is the control-record key of a mirror event:
// "mirror/<topic>/<EVENT>". One key per topic and event, so compaction
// keeps the latest attach and the latest detach of each mirror topic, and
// the fold decides by their offsets. A Kafka topic name has no '/', so the
// key splits one way.
func MirrorKey(topic string, e Event) string {
	return mirrorKeyPrefix + topic + "/" + string(e)
}

// IsMirrorKey reports whether a record key is a mirror event's key (by its
// prefix: whether the rest is well-formed is ParseMirrorKey's question).
func IsMirrorKey(key []byte) bool { return bytes.HasPrefix(key, []byte(mirrorKeyPrefix)) }

// ParseMirrorKey splits a mirror event's key into topic and event. A
// well-formed key whose event this build does not know returns both parts
// with an error matching ErrUnknownEvent; any other bad key matches
// ErrMalformed.
func ParseMirrorKey(key []byte) (topic string, e Event, err error) {
	s := string(key)
	rest, ok := strings.CutPrefix(s, mirrorKeyPrefix)
	t, ev, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || !utf8.ValidString(s) || checkTopic("", t) != nil || !isEventName(ev) {
		return "", "", &DecodeError{Field: "key", Reason: "is " + strconv.Quote(s) + ": expected mirror/<topic>/<EVENT>, a Kafka topic name and an event such as MIRROR_ATTACHED"}
	}
	if !Event(ev).IsMirror() {
		return t, Event(ev), &DecodeError{Field: "key", Reason: "names mirror event " + strconv.Quote(ev) +
			", which this kcleanup does not know (it knows MIRROR_ATTACHED and MIRROR_DETACHED): upgrade kcleanup", class: ErrUnknownEvent}
	}
	return t, Event(ev), nil
}

// mirrorFields are the fields of a mirror event, in the order Encode writes them.
var mirrorFields = []string{"schemaVersion", "event", "mirrorTopic", "mirrorTopicId", "at", "actor", "reason"}

// encodeMirror is Encode for a mirror event:
//
//	{"schemaVersion":2,"event":"MIRROR_ATTACHED","mirrorTopic":…,"mirrorTopicId":…,"at":…,"actor":…,"reason":…}
func (e Envelope) encodeMirror() (key, value []byte) {
	m := e.Mirror
	b := make([]byte, 0, 256)
	b = append(b, `{"schemaVersion":`...)
	b = strconv.AppendInt(b, MirrorSchemaVersion, 10)
	b = append(b, `,"event":`...)
	b = appendString(b, string(e.Event))
	b = append(b, `,"mirrorTopic":`...)
	b = appendString(b, m.Topic)
	b = append(b, `,"mirrorTopicId":`...)
	b = appendString(b, m.TopicID)
	b = append(b, `,"at":`...)
	b = appendString(b, e.At.UTC().Format(time.RFC3339Nano))
	b = append(b, `,"actor":`...)
	b = appendString(b, e.Actor)
	b = append(b, `,"reason":`...)
	b = appendString(b, m.Reason)
	b = append(b, '}')
	return []byte(MirrorKey(m.Topic, e.Event)), b
}

// NewMirrorEvent is the envelope of a mirror event (Validate it before
// producing it).
func NewMirrorEvent(e Event, m Mirror, at time.Time, actor string) Envelope {
	return Envelope{SchemaVersion: MirrorSchemaVersion, Event: e, Mirror: &m, At: at, Actor: actor}
}

// mirrorJSON is a mirror event as decoded; each field checks itself.
type mirrorJSON struct {
	SchemaVersion mirrorVersion     `json:"schemaVersion"`
	Event         str[anyText]      `json:"event"`
	MirrorTopic   str[topicRule]    `json:"mirrorTopic"`
	MirrorTopicID str[topicIDRule]  `json:"mirrorTopicId"`
	At            timeField         `json:"at"`
	Actor         str[actor]        `json:"actor"`
	Reason        str[mirrorReason] `json:"reason"`
}

// decodeMirror reads a record under a mirror key (value not nil, UTF-8).
// The rules, in order: the schema version (2; above it ErrNewerSchema),
// the key, the body's event and mirrorTopic against the key, an unknown
// mirror event (ErrUnknownEvent), then every field strictly.
func decodeMirror(key, value []byte) (Envelope, error) {
	keyTopic, keyEvent, keyErr := ParseMirrorKey(key)
	var w mirrorJSON
	err := json.Unmarshal(value, &w, strict)
	if err == nil && firstKind(value) == kindObject && keyErr == nil {
		seen := [...]bool{w.SchemaVersion.set, w.Event.set, w.MirrorTopic.set, w.MirrorTopicID.set, w.At.set, w.Actor.set, w.Reason.set}
		for i, ok := range seen {
			if !ok {
				return Envelope{}, malformed(missingField(mirrorFields[i]))
			}
		}
		if Event(w.Event.v) != keyEvent {
			return Envelope{}, malformed(keyMismatch("event", w.Event.v, string(keyEvent)))
		}
		if w.MirrorTopic.v != keyTopic {
			return Envelope{}, malformed(mirrorKeyMismatch(w.MirrorTopic.v, keyTopic))
		}
		return Envelope{SchemaVersion: MirrorSchemaVersion, Event: keyEvent, At: w.At.v, Actor: w.Actor.v,
			Mirror: &Mirror{Topic: w.MirrorTopic.v, TopicID: w.MirrorTopicID.v, Reason: w.Reason.v}}, nil
	}
	sh, sferr := scan(value)
	if sferr != nil {
		return Envelope{}, malformed(sferr)
	}
	if sh.kind != kindObject {
		return Envelope{}, malformed(wrongKind("value", sh.kind, "a JSON object"))
	}
	if err := checkMirrorVersion(sh.schemaVersion); err != nil {
		return Envelope{}, err
	}
	if keyErr != nil && keyEvent == "" {
		return Envelope{}, keyErr
	}
	ev, ferr := requiredString("event", sh.event)
	if ferr != nil {
		return Envelope{}, malformed(ferr)
	}
	if ev != string(keyEvent) {
		return Envelope{}, malformed(keyMismatch("event", ev, string(keyEvent)))
	}
	t, ferr := requiredString("mirrorTopic", sh.mirrorTopic)
	if ferr != nil {
		return Envelope{}, malformed(ferr)
	}
	if t != keyTopic {
		return Envelope{}, malformed(mirrorKeyMismatch(t, keyTopic))
	}
	if keyErr != nil { // well-formed, consistent, and from a newer kcleanup
		return Envelope{}, keyErr
	}
	if err == nil { // only the kind can have failed
		return Envelope{}, malformed(wrongKind("value", firstKind(value), "a JSON object"))
	}
	return Envelope{}, malformed(fromLibrary(err, mirrorFields))
}

func mirrorKeyMismatch(body, key string) *fieldError {
	f := fieldErrorf("mirrorTopic", "is %q but the key names %q: expected the key to be mirror/<mirrorTopic>/<event>", body, key)
	f.detail = ErrKeyMismatch
	return f
}

// checkMirrorVersion: nil for 2, ErrNewerSchema for any larger integer,
// else ErrMalformed (1 included: the mirror events do not exist in
// version 1).
func checkMirrorVersion(v scalar) error {
	const field = "schemaVersion"
	if !v.present {
		return malformed(missingField(field))
	}
	if v.kind != kindNumber {
		return malformed(wrongKind(field, v.kind, "2"))
	}
	if v.text == "2" {
		return nil
	}
	if isDigits(v.text) && v.text[0] != '0' && v.text != "1" {
		return newDecodeError(ErrNewerSchema, fieldErrorf(field, "is %s: this kcleanup understands mirror events of schema version %d only: upgrade kcleanup", v.text, MirrorSchemaVersion))
	}
	return malformed(fieldErrorf(field, "is %s: expected %d, the schema version of mirror events", v.text, MirrorSchemaVersion))
}

// mirrorVersion is a mirror event's schemaVersion: exactly the literal 2.
type mirrorVersion struct{ set bool }

func (f *mirrorVersion) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if f.set {
		return twice
	}
	f.set = true
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if v.Kind() != '0' || string(v) != "2" {
		return atValue(dec, fieldErrorf("", "is %s: expected %d, the schema version of mirror events", v, MirrorSchemaVersion))
	}
	return nil
}

// mirrorReason is the rule of a mirror event's reason: printable, not blank.
type mirrorReason struct{}

func (mirrorReason) check(s string) *fieldError {
	if strings.TrimSpace(s) == "" {
		return fieldErrorf("", "is blank: expected why the mirror was attached or detached, for the audit")
	}
	return checkActor("", s)
}
