package events

import (
	"strconv"
	"time"
)

// DeclarationSchemaVersion is the envelope version of the no-tombstones
// declaration events. They are version 6, above every earlier side event
// (mirror 2, pin 3, mirror grace 4, retention 5), so that every kcleanup
// that predates them reads them as ErrNewerSchema and fails closed, exactly
// as for pins: its projection degrades and it deletes nothing, instead of
// reading the data topic under a declaration it cannot see withdrawn
// (docs/events.md, "No-tombstones declaration").
const DeclarationSchemaVersion = 6

// The no-tombstones declaration events (docs/design.md, the tombstone rule).
const (
	// NoTombstonesDeclared: an operator declares that the job writes no
	// tombstones to the data topic from Since on; the tombstone rule trusts
	// it there instead of reading the data topic (issue 35 item 8).
	NoTombstonesDeclared Event = "NO_TOMBSTONES_DECLARED"
	// NoTombstonesWithdrawn: the declaration holds no more; the scan resumes.
	NoTombstonesWithdrawn Event = "NO_TOMBSTONES_WITHDRAWN"
)

// IsDeclaration reports whether e is one of the declaration events.
func (e Event) IsDeclaration() bool { return declarationFamily.knows(e) }

// declarationFamily describes the declaration events (family.go): one key,
// DeclarationKey, under the prefix "tombstones/", which no plan, mirror,
// pin or retention key starts with; the event is the body's.
var declarationFamily = family{name: "declaration", prefix: "tombstones/", events: [2]Event{NoTombstonesDeclared, NoTombstonesWithdrawn},
	versions: []int{DeclarationSchemaVersion}, expected: strconv.Itoa(DeclarationSchemaVersion) + ", the schema version of declaration events"}

type declarationRule struct{}

func (declarationRule) family() *family { return &declarationFamily }

// Declaration is the body of a declaration event. A NO_TOMBSTONES_DECLARED
// carries every field; a NO_TOMBSTONES_WITHDRAWN only Reason.
type Declaration struct {
	// Topic and TopicID are the data topic incarnation declared for.
	Topic   string
	TopicID string
	// Since is, per partition, the first offset the declaration covers:
	// no tombstone at or above it. A partition it does not name is not
	// covered.
	Since Offsets
	// Reason says why, for the audit: never blank.
	Reason string
}

// DeclarationKey is the one key of both declaration events: compaction
// keeps only the latest, which is the one in force (a DECLARED) or its end
// (a WITHDRAWN); a null value over it erases the declaration, the safe
// direction (the scan resumes).
const DeclarationKey = "tombstones/declaration"

// IsDeclarationKey reports whether a record key is under the declaration
// prefix (whether it is exactly DeclarationKey is decodeDeclaration's
// question). No plan, mirror, pin or retention key starts with it.
func IsDeclarationKey(key []byte) bool { return declarationFamily.isKey(key) }

// NewDeclaration is the NO_TOMBSTONES_DECLARED envelope (Validate it before
// producing it).
func NewDeclaration(topic, topicID string, since Offsets, reason string, at time.Time, actor string) Envelope {
	d := Declaration{Topic: topic, TopicID: topicID, Since: since.Clone(), Reason: reason}
	return Envelope{SchemaVersion: DeclarationSchemaVersion, Event: NoTombstonesDeclared, Declaration: &d, At: at.UTC(), Actor: actor}
}

// NewWithdrawal is the NO_TOMBSTONES_WITHDRAWN envelope.
func NewWithdrawal(reason string, at time.Time, actor string) Envelope {
	return Envelope{SchemaVersion: DeclarationSchemaVersion, Event: NoTombstonesWithdrawn, Declaration: &Declaration{Reason: reason}, At: at.UTC(), Actor: actor}
}

// declarationFields are the fields of a declaration event, in Encode's order.
var declarationFields = []string{"schemaVersion", "event", "topic", "topicId", "since", "at", "actor", "reason"}

// encodeDeclaration is Encode for a declaration event:
//
//	{"schemaVersion":6,"event":"NO_TOMBSTONES_DECLARED","topic":…,"topicId":…,"since":{…},"at":…,"actor":…,"reason":…}
//	{"schemaVersion":6,"event":"NO_TOMBSTONES_WITHDRAWN","at":…,"actor":…,"reason":…}
func (e Envelope) encodeDeclaration() (key, value []byte) {
	d := e.Declaration
	b := appendHead(make([]byte, 0, 256+32*len(d.Since)), DeclarationSchemaVersion, e.Event)
	if e.Event == NoTombstonesDeclared {
		b = append(b, `,"topic":`...)
		b = appendString(b, d.Topic)
		b = append(b, `,"topicId":`...)
		b = appendString(b, d.TopicID)
		b = append(b, `,"since":`...)
		b = appendOffsets(b, d.Since, "")
	}
	return []byte(DeclarationKey), appendTail(b, e, d.Reason)
}

// declarationJSON is a declaration event as decoded; each field checks itself.
type declarationJSON struct {
	Version versionField[declarationRule] `json:"schemaVersion"`
	Event   str[anyText]                  `json:"event"`
	Topic   str[topicRule]                `json:"topic"`
	TopicID str[topicIDRule]              `json:"topicId"`
	Since   offsetsField                  `json:"since"`
	At      timeField                     `json:"at"`
	Actor   str[actor]                    `json:"actor"`
	Reason  str[declarationText]          `json:"reason"`
}

// decodeDeclaration reads a record under a declaration key (value not nil,
// UTF-8). The rules, in order: the schema version (6; above it
// ErrNewerSchema), the key, an unknown event under it (ErrUnknownEvent),
// then every field strictly and which fields the event carries.
func decodeDeclaration(key, value []byte) (Envelope, error) {
	sh, err := declarationFamily.prelude(value)
	if err != nil {
		return Envelope{}, err
	}
	if string(key) != DeclarationKey {
		return Envelope{}, &DecodeError{Field: "key", Reason: "is " + strconv.Quote(string(key)) + ": expected " + DeclarationKey}
	}
	ev, ferr := requiredString("event", sh.event)
	if ferr != nil {
		return Envelope{}, malformed(ferr)
	}
	if !declarationFamily.knows(Event(ev)) {
		if isEventName(ev) {
			return Envelope{}, &DecodeError{Field: "event", Reason: "is " + strconv.Quote(ev) +
				", which this kcleanup does not know under " + DeclarationKey + " (it knows NO_TOMBSTONES_DECLARED and NO_TOMBSTONES_WITHDRAWN): upgrade kcleanup", class: ErrUnknownEvent}
		}
		return Envelope{}, malformed(fieldErrorf("event", "is %q: expected NO_TOMBSTONES_DECLARED or NO_TOMBSTONES_WITHDRAWN", ev))
	}
	var w declarationJSON
	if ferr := decodeStrict(value, &w, declarationFields); ferr != nil {
		return Envelope{}, malformed(ferr)
	}
	e := Event(ev)
	seen := [...]bool{w.Version.set, w.Event.set, w.Topic.set, w.TopicID.set, w.Since.set, w.At.set, w.Actor.set, w.Reason.set}
	for i, name := range declarationFields {
		declaredOnly := i >= 2 && i <= 4
		switch {
		case declaredOnly && e != NoTombstonesDeclared && seen[i]:
			return Envelope{}, malformed(fieldErrorf(name, "is not allowed on %s: it belongs to NO_TOMBSTONES_DECLARED only", e))
		case declaredOnly && e != NoTombstonesDeclared:
			continue
		case !seen[i]:
			return Envelope{}, malformed(missingField(name))
		}
	}
	d := Declaration{Reason: w.Reason.v}
	if e == NoTombstonesDeclared {
		d.Topic, d.TopicID, d.Since = w.Topic.v, w.TopicID.v, w.Since.v
		if len(d.Since) == 0 {
			return Envelope{}, malformed(fieldErrorf("since", "is empty: expected the first offset the declaration covers on each partition"))
		}
	}
	return Envelope{SchemaVersion: DeclarationSchemaVersion, Event: e, Declaration: &d, At: w.At.v, Actor: w.Actor.v}, nil
}

// declarationText is the rule of a declaration event's reason: printable,
// not blank.
type declarationText struct{}

func (declarationText) check(s string) *fieldError {
	return auditReason(s, "why the job writes no tombstones, or why the declaration is withdrawn")
}
