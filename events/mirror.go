package events

import (
	"strconv"
	"time"

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
func (e Event) IsMirror() bool { return mirrorFamily.knows(e) }

// mirrorFamily describes the mirror events (family.go). No plan key can
// start with its prefix, "mirror/" (plan keys start with 64 hex digits),
// nor a Flink Agents key (a bare plan ID).
var mirrorFamily = family{name: "mirror", prefix: "mirror/", events: [2]Event{MirrorAttached, MirrorDetached},
	versions: []int{MirrorSchemaVersion, MirrorGraceSchemaVersion},
	expected: strconv.Itoa(MirrorSchemaVersion) + ", or " + strconv.Itoa(MirrorGraceSchemaVersion) + " for a MIRROR_ATTACHED with its restore grace"}

type mirrorRule struct{}

func (mirrorRule) family() *family { return &mirrorFamily }

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

// MirrorKey is the control-record key of a mirror event:
// "mirror/<topic>/<EVENT>". One key per topic and event, so compaction
// keeps the latest attach and the latest detach of each mirror topic, and
// the fold decides by their offsets. A Kafka topic name has no '/', so the
// key splits one way.
func MirrorKey(topic string, e Event) string {
	return mirrorFamily.prefix + topic + "/" + string(e)
}

// IsMirrorKey reports whether a record key is a mirror event's key (by its
// prefix: whether the rest is well-formed is ParseMirrorKey's question).
func IsMirrorKey(key []byte) bool { return mirrorFamily.isKey(key) }

// ParseMirrorKey splits a mirror event's key into topic and event. A
// well-formed key whose event this build does not know returns both parts
// with an error matching ErrUnknownEvent; any other bad key matches
// ErrMalformed.
func ParseMirrorKey(key []byte) (topic string, e Event, err error) {
	return mirrorFamily.splitKey(key, func(t string) bool { return checkTopic("", t) == nil },
		"mirror/<topic>/<EVENT>, a Kafka topic name and an event such as MIRROR_ATTACHED")
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
	v := MirrorSchemaVersion
	if grace {
		v = MirrorGraceSchemaVersion
	}
	b := appendHead(make([]byte, 0, 256), v, e.Event)
	b = append(b, `,"mirrorTopic":`...)
	b = appendString(b, m.Topic)
	b = append(b, `,"mirrorTopicId":`...)
	b = appendString(b, m.TopicID)
	if grace {
		b = append(b, `,"restoreGraceSeconds":`...)
		b = strconv.AppendInt(b, int64(m.RestoreGrace/time.Second), 10)
	}
	return []byte(MirrorKey(m.Topic, e.Event)), appendTail(b, e, m.Reason)
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
	SchemaVersion versionField[mirrorRule] `json:"schemaVersion"`
	Event         str[anyText]             `json:"event"`
	MirrorTopic   str[topicRule]           `json:"mirrorTopic"`
	MirrorTopicID str[topicIDRule]         `json:"mirrorTopicId"`
	RestoreGrace  graceSeconds             `json:"restoreGraceSeconds"`
	At            timeField                `json:"at"`
	Actor         str[actor]               `json:"actor"`
	Reason        str[mirrorReason]        `json:"reason"`
}

// decodeMirror reads a record under a mirror key (value not nil, UTF-8).
// The rules, in order: the schema version (2; above it ErrNewerSchema),
// the key, the body's event and mirrorTopic against the key, an unknown
// mirror event (ErrUnknownEvent), then every field strictly.
func decodeMirror(key, value []byte) (Envelope, error) {
	return decodeKeyed(&mirrorFamily, mirrorKeyed, key, value, (*mirrorJSON).envelope)
}

// envelope checks what no single field can.
func (w *mirrorJSON) envelope(keyTopic string, keyEvent Event) (Envelope, *fieldError) {
	seen := [...]bool{w.SchemaVersion.set, w.Event.set, w.MirrorTopic.set, w.MirrorTopicID.set, w.At.set, w.Actor.set, w.Reason.set}
	for i, ok := range seen {
		if !ok {
			return Envelope{}, missingField(mirrorFields[i])
		}
	}
	// Version 4 is a MIRROR_ATTACHED with its restore grace; version 2
	// has none.
	switch {
	case w.SchemaVersion.v == MirrorGraceSchemaVersion && keyEvent != MirrorAttached:
		return Envelope{}, fieldErrorf("schemaVersion", "is %d: only a MIRROR_ATTACHED carries a restore grace; %s is version %d", MirrorGraceSchemaVersion, keyEvent, MirrorSchemaVersion)
	case w.SchemaVersion.v == MirrorGraceSchemaVersion && !w.RestoreGrace.set:
		return Envelope{}, missingField("restoreGraceSeconds")
	case w.SchemaVersion.v == MirrorSchemaVersion && w.RestoreGrace.set:
		return Envelope{}, fieldErrorf("restoreGraceSeconds", "is in a mirror event of schema version %d: expected it only in version %d", MirrorSchemaVersion, MirrorGraceSchemaVersion)
	}
	if Event(w.Event.v) != keyEvent {
		return Envelope{}, keyMismatch("event", w.Event.v, string(keyEvent))
	}
	if w.MirrorTopic.v != keyTopic {
		return Envelope{}, mirrorKeyMismatch(w.MirrorTopic.v, keyTopic)
	}
	return Envelope{SchemaVersion: w.SchemaVersion.v, Event: keyEvent, At: w.At.v, Actor: w.Actor.v,
		Mirror: &Mirror{Topic: w.MirrorTopic.v, TopicID: w.MirrorTopicID.v, Reason: w.Reason.v,
			HasGrace: w.RestoreGrace.set, RestoreGrace: w.RestoreGrace.d}}, nil
}

// mirrorKeyed: a mirror's key names its mirrorTopic.
var mirrorKeyed = keyed{parse: ParseMirrorKey, id: "mirrorTopic", idOf: func(sh shape) scalar { return sh.mirrorTopic }, mismatch: mirrorKeyMismatch, fields: mirrorFields}

func mirrorKeyMismatch(body, key string) *fieldError {
	f := fieldErrorf("mirrorTopic", "is %q but the key names %q: expected the key to be mirror/<mirrorTopic>/<event>", body, key)
	f.detail = ErrKeyMismatch
	return f
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
	return auditReason(s, "why the mirror was attached or detached")
}
