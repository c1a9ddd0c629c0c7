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

// MirrorGraceSchemaVersion is the version of a MIRROR_ATTACHED that carries
// the mirror's restore grace (restoreGraceSeconds). A build that knows
// mirror events of version 2 only reads it as a newer schema and fails
// closed (its projection degrades: it deletes nothing) instead of
// attaching the mirror without the grace that protects the job's restores
// (docs/events.md, "Mirror events"). 3 is the pin events'.
const MirrorGraceSchemaVersion = 4

// MaxRestoreGrace bounds a mirror's restore grace: a grace is the time a
// restore takes to replay; a recovery point needed for longer is pinned.
const MaxRestoreGrace = 24 * time.Hour

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
	// HasGrace: the MIRROR_ATTACHED carries a restore grace
	// (MirrorGraceSchemaVersion), RestoreGrace, in whole seconds from 0 (off)
	// to MaxRestoreGrace. A version-2 attachment carries none.
	HasGrace     bool
	RestoreGrace time.Duration
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

// mirrorFields are the fields of a mirror event, in the order Encode writes
// them; mirrorGraceFields those of a MIRROR_ATTACHED with a restore grace.
var (
	mirrorFields      = []string{"schemaVersion", "event", "mirrorTopic", "mirrorTopicId", "at", "actor", "reason"}
	mirrorGraceFields = []string{"schemaVersion", "event", "mirrorTopic", "mirrorTopicId", "restoreGraceSeconds", "at", "actor", "reason"}
)

// encodeMirror is Encode for a mirror event:
//
//	{"schemaVersion":2,"event":"MIRROR_ATTACHED","mirrorTopic":…,"mirrorTopicId":…,"at":…,"actor":…,"reason":…}
func (e Envelope) encodeMirror() (key, value []byte) {
	m := e.Mirror
	grace := m.HasGrace && e.Event == MirrorAttached
	b := make([]byte, 0, 256)
	b = append(b, `{"schemaVersion":`...)
	if grace {
		b = strconv.AppendInt(b, MirrorGraceSchemaVersion, 10)
	} else {
		b = strconv.AppendInt(b, MirrorSchemaVersion, 10)
	}
	b = append(b, `,"event":`...)
	b = appendString(b, string(e.Event))
	b = append(b, `,"mirrorTopic":`...)
	b = appendString(b, m.Topic)
	b = append(b, `,"mirrorTopicId":`...)
	b = appendString(b, m.TopicID)
	if grace {
		b = append(b, `,"restoreGraceSeconds":`...)
		b = strconv.AppendInt(b, int64(m.RestoreGrace/time.Second), 10)
	}
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
// producing it). A MIRROR_ATTACHED whose m.HasGrace is
// MirrorGraceSchemaVersion.
func NewMirrorEvent(e Event, m Mirror, at time.Time, actor string) Envelope {
	v := MirrorSchemaVersion
	if e == MirrorAttached && m.HasGrace {
		v = MirrorGraceSchemaVersion
	} else {
		m.HasGrace, m.RestoreGrace = false, 0
	}
	return Envelope{SchemaVersion: v, Event: e, Mirror: &m, At: at, Actor: actor}
}

// CheckRestoreGrace says why d cannot be a mirror's restore grace, or nil:
// whole seconds from 0 (off) to MaxRestoreGrace.
func CheckRestoreGrace(d time.Duration) error {
	switch {
	case d < 0 || d > MaxRestoreGrace:
		return &DecodeError{Field: "restoreGraceSeconds", Reason: "is " + d.String() + ": expected 0 (off) to " + MaxRestoreGrace.String(), class: ErrMalformed}
	case d%time.Second != 0:
		return &DecodeError{Field: "restoreGraceSeconds", Reason: "is " + d.String() + ": expected whole seconds", class: ErrMalformed}
	}
	return nil
}

// mirrorJSON is a mirror event as decoded; each field checks itself.
type mirrorJSON struct {
	SchemaVersion mirrorVersion     `json:"schemaVersion"`
	Event         str[anyText]      `json:"event"`
	MirrorTopic   str[topicRule]    `json:"mirrorTopic"`
	MirrorTopicID str[topicIDRule]  `json:"mirrorTopicId"`
	RestoreGrace  graceSeconds      `json:"restoreGraceSeconds"`
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
		// Version 4 is a MIRROR_ATTACHED with its restore grace; version 2
		// has none.
		switch {
		case w.SchemaVersion.v == MirrorGraceSchemaVersion && keyEvent != MirrorAttached:
			return Envelope{}, malformed(fieldErrorf("schemaVersion", "is %d: only a MIRROR_ATTACHED carries a restore grace; %s is version %d", MirrorGraceSchemaVersion, keyEvent, MirrorSchemaVersion))
		case w.SchemaVersion.v == MirrorGraceSchemaVersion && !w.RestoreGrace.set:
			return Envelope{}, malformed(missingField("restoreGraceSeconds"))
		case w.SchemaVersion.v == MirrorSchemaVersion && w.RestoreGrace.set:
			return Envelope{}, malformed(fieldErrorf("restoreGraceSeconds", "is in a mirror event of schema version %d: expected it only in version %d", MirrorSchemaVersion, MirrorGraceSchemaVersion))
		}
		if Event(w.Event.v) != keyEvent {
			return Envelope{}, malformed(keyMismatch("event", w.Event.v, string(keyEvent)))
		}
		if w.MirrorTopic.v != keyTopic {
			return Envelope{}, malformed(mirrorKeyMismatch(w.MirrorTopic.v, keyTopic))
		}
		return Envelope{SchemaVersion: w.SchemaVersion.v, Event: keyEvent, At: w.At.v, Actor: w.Actor.v,
			Mirror: &Mirror{Topic: w.MirrorTopic.v, TopicID: w.MirrorTopicID.v, Reason: w.Reason.v,
				HasGrace: w.RestoreGrace.set, RestoreGrace: w.RestoreGrace.d}}, nil
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

// checkMirrorVersion: nil for 2 and 4, ErrNewerSchema for any other
// integer above 2 (3 as before: a build before pins read it so), else
// ErrMalformed (1 included: the mirror events do not exist in version 1).
func checkMirrorVersion(v scalar) error {
	const field = "schemaVersion"
	if !v.present {
		return malformed(missingField(field))
	}
	if v.kind != kindNumber {
		return malformed(wrongKind(field, v.kind, "2"))
	}
	if v.text == "2" || v.text == "4" {
		return nil
	}
	if isDigits(v.text) && v.text[0] != '0' && v.text != "1" {
		return newDecodeError(ErrNewerSchema, fieldErrorf(field, "is %s: this kcleanup understands mirror events of schema versions %d and %d only: upgrade kcleanup", v.text, MirrorSchemaVersion, MirrorGraceSchemaVersion))
	}
	return malformed(fieldErrorf(field, "is %s: expected %d, or %d for a MIRROR_ATTACHED with its restore grace", v.text, MirrorSchemaVersion, MirrorGraceSchemaVersion))
}

// mirrorVersion is a mirror event's schemaVersion: exactly the literal 2
// or 4.
type mirrorVersion struct {
	set bool
	v   int
}

func (f *mirrorVersion) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if f.set {
		return twice
	}
	f.set = true
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	switch {
	case v.Kind() == '0' && string(v) == "2":
		f.v = MirrorSchemaVersion
	case v.Kind() == '0' && string(v) == "4":
		f.v = MirrorGraceSchemaVersion
	default:
		return atValue(dec, fieldErrorf("", "is %s: expected %d, or %d for a MIRROR_ATTACHED with its restore grace", v, MirrorSchemaVersion, MirrorGraceSchemaVersion))
	}
	return nil
}

// graceSeconds is a MIRROR_ATTACHED's restoreGraceSeconds: an integer
// literal from 0 to MaxRestoreGrace in seconds.
type graceSeconds struct {
	set bool
	d   time.Duration
}

func (f *graceSeconds) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if f.set {
		return twice
	}
	f.set = true
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	n, perr := strconv.ParseInt(string(v), 10, 64)
	if v.Kind() != '0' || !isDigits(string(v)) || (len(v) > 1 && v[0] == '0') || perr != nil || n > int64(MaxRestoreGrace/time.Second) {
		return atValue(dec, fieldErrorf("", "is %s: expected whole seconds from 0 (off) to %d", v, int64(MaxRestoreGrace/time.Second)))
	}
	f.d = time.Duration(n) * time.Second
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
