package events

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// PinSchemaVersion is the envelope version of the pin events. They are
// version 3, above the mirror events' 2, so that every kcleanup that
// predates them (one that knows only version 1, or versions 1 and 2)
// classifies them as ErrNewerSchema and fails closed: its projection
// degrades, it commits and deletes nothing, instead of skipping a record
// that forbids a deletion (docs/events.md, "Pin events").
const PinSchemaVersion = 3

// The pin events (docs/design.md §12, "Pinned recovery points").
const (
	// Pinned: from this record on, every COMMITTED whose plan is above the
	// pin's offsets on a partition the pin protects is rejected, until the
	// pin expires or is unpinned.
	Pinned Event = "PINNED"
	// Unpinned: the named pin protects nothing from this record on.
	Unpinned Event = "UNPINNED"
)

// IsPin reports whether e is one of the pin events.
func (e Event) IsPin() bool { return pinFamily.knows(e) }

// pinFamily describes the pin events (family.go). Its key prefix, "pin/",
// starts no plan key (64 hex digits), mirror key ("mirror/") or Flink
// Agents key (a bare plan ID).
var pinFamily = family{name: "pin", prefix: "pin/", events: [2]Event{Pinned, Unpinned}, versions: []int{PinSchemaVersion},
	expected: strconv.Itoa(PinSchemaVersion) + ", the schema version of pin events"}

type pinRule struct{}

func (pinRule) family() *family { return &pinFamily }

// Pin is the body of a pin event. A PINNED carries every field; an
// UNPINNED only PinID and Reason.
type Pin struct {
	// PinID names the pin: ComputePinID of the PINNED's content.
	PinID string
	// RecoveryPoint is the checkpoint or savepoint the pin protects, and
	// Offsets its per-partition offsets, read from its markers exactly as
	// BuildPlan reads them (the minimum over the markers).
	RecoveryPoint string
	Topic         string
	TopicID       string
	Offsets       Offsets
	// Expires is when the pin stops protecting, judged by the envelope
	// time ("at") of the records after it; zero: never.
	Expires time.Time
	// Reason says why, for the audit: never blank.
	Reason string
}

// PinKey is the control-record key of a pin event: "pin/<pinId>/<EVENT>".
// One key per pin and event: compaction keeps a pin's PINNED and its
// UNPINNED, and the fold decides by their offsets.
func PinKey(pinID string, e Event) string { return pinFamily.prefix + pinID + "/" + string(e) }

// IsPinKey reports whether a record key is a pin event's key (by its prefix:
// whether the rest is well-formed is ParsePinKey's question).
func IsPinKey(key []byte) bool { return pinFamily.isKey(key) }

// ParsePinKey splits a pin event's key into pin ID and event. A well-formed
// key whose event this build does not know returns both parts with an error
// matching ErrUnknownEvent; any other bad key matches ErrMalformed.
func ParsePinKey(key []byte) (pinID string, e Event, err error) {
	return pinFamily.splitKey(key, isPinID, "pin/<pinId>/<EVENT>, a pin ID of 16 lowercase hex digits and an event such as PINNED")
}

func isPinID(s string) bool {
	if len(s) != 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ComputePinID is the ID of a pin: the first 16 lowercase hex digits of
// the SHA-256 of
//
//	"pin\n" + recoveryPoint + "\n" + topic + "\n" + topicID + "\n" + at + "\n" + actor + "\n"
//
// (at in RFC 3339 with nanoseconds, UTC), then partition + "=" + offset +
// "\n" for each partition in ascending order. The time and the writer are
// part of it: pinning the same recovery point again after an unpin is
// another pin, while a producer's retry of the same record is the same one.
func ComputePinID(recoveryPoint, topic, topicID string, offsets Offsets, at time.Time, actor string) string {
	var b []byte
	for _, s := range []string{"pin", recoveryPoint, topic, topicID, at.UTC().Format(time.RFC3339Nano), actor} {
		b = append(b, s...)
		b = append(b, '\n')
	}
	for _, p := range offsets.Partitions() {
		b = strconv.AppendInt(b, int64(p), 10)
		b = append(b, '=')
		b = strconv.AppendInt(b, offsets[p], 10)
		b = append(b, '\n')
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// NewPin is the PINNED envelope of a pin of recoveryPoint with offsets, its
// ID computed (Validate it before producing it). expires zero: no expiry.
func NewPin(recoveryPoint, topic, topicID string, offsets Offsets, expires time.Time, reason string, at time.Time, actor string) Envelope {
	at = at.UTC()
	if !expires.IsZero() {
		expires = expires.UTC()
	}
	p := Pin{PinID: ComputePinID(recoveryPoint, topic, topicID, offsets, at, actor), RecoveryPoint: recoveryPoint,
		Topic: topic, TopicID: topicID, Offsets: offsets, Expires: expires, Reason: reason}
	return Envelope{SchemaVersion: PinSchemaVersion, Event: Pinned, Pin: &p, At: at, Actor: actor}
}

// NewUnpin is the UNPINNED envelope of pin pinID.
func NewUnpin(pinID, reason string, at time.Time, actor string) Envelope {
	return Envelope{SchemaVersion: PinSchemaVersion, Event: Unpinned, Pin: &Pin{PinID: pinID, Reason: reason}, At: at.UTC(), Actor: actor}
}

// pinFields are the fields of a pin event, in the order Encode writes them.
// recoveryPoint, topic, topicId and offsets belong to PINNED only; expires
// is optional on PINNED and forbidden on UNPINNED.
var pinFields = []string{"schemaVersion", "event", "pinId", "recoveryPoint", "topic", "topicId", "offsets", "expires", "at", "actor", "reason"}

// encodePin is Encode for a pin event:
//
//	{"schemaVersion":3,"event":"PINNED","pinId":…,"recoveryPoint":…,"topic":…,"topicId":…,"offsets":{…},"expires":…,"at":…,"actor":…,"reason":…}
//	{"schemaVersion":3,"event":"UNPINNED","pinId":…,"at":…,"actor":…,"reason":…}
func (e Envelope) encodePin() (key, value []byte) {
	p := e.Pin
	b := appendHead(make([]byte, 0, 256+32*len(p.Offsets)), PinSchemaVersion, e.Event)
	b = append(b, `,"pinId":`...)
	b = appendString(b, p.PinID)
	if e.Event == Pinned {
		b = append(b, `,"recoveryPoint":`...)
		b = appendString(b, p.RecoveryPoint)
		b = append(b, `,"topic":`...)
		b = appendString(b, p.Topic)
		b = append(b, `,"topicId":`...)
		b = appendString(b, p.TopicID)
		b = append(b, `,"offsets":`...)
		b = appendOffsets(b, p.Offsets, "")
		if !p.Expires.IsZero() {
			b = append(b, `,"expires":`...)
			b = appendString(b, p.Expires.UTC().Format(time.RFC3339Nano))
		}
	}
	return []byte(PinKey(p.PinID, e.Event)), appendTail(b, e, p.Reason)
}

// pinJSON is a pin event as decoded; each field checks itself.
type pinJSON struct {
	SchemaVersion versionField[pinRule] `json:"schemaVersion"`
	Event         str[anyText]          `json:"event"`
	PinID         str[pinIDRule]        `json:"pinId"`
	RecoveryPoint str[recoveryPoint]    `json:"recoveryPoint"`
	Topic         str[topicRule]        `json:"topic"`
	TopicID       str[topicIDRule]      `json:"topicId"`
	Offsets       offsetsField          `json:"offsets"`
	Expires       timeField             `json:"expires"`
	At            timeField             `json:"at"`
	Actor         str[actor]            `json:"actor"`
	Reason        str[pinReason]        `json:"reason"`
}

// decodePin reads a record under a pin key (value not nil, UTF-8). The
// rules, in order: the schema version (3; above it ErrNewerSchema), the
// key, the body's event and pinId against the key, an unknown pin event
// (ErrUnknownEvent), then every field strictly, which fields the event
// carries, expires after at, and a PINNED's pinId against its content.
func decodePin(key, value []byte) (Envelope, error) {
	return decodeKeyed(&pinFamily, pinKeyed, key, value, (*pinJSON).envelope)
}

// pinKeyed: a pin's key names its pinId.
var pinKeyed = keyed{parse: ParsePinKey, id: "pinId", idOf: func(sh shape) scalar { return sh.pinID }, mismatch: pinKeyMismatch, fields: pinFields}

// envelope checks what no single field can.
func (w *pinJSON) envelope(keyID string, keyEvent Event) (Envelope, *fieldError) {
	ev := Event(w.Event.v)
	seen := [...]bool{w.SchemaVersion.set, w.Event.set, w.PinID.set, w.RecoveryPoint.set, w.Topic.set, w.TopicID.set, w.Offsets.set, w.Expires.set, w.At.set, w.Actor.set, w.Reason.set}
	for i, name := range pinFields {
		pinnedOnly := i >= 3 && i <= 7
		switch {
		case name == "expires" && ev == Pinned:
			continue // optional
		case pinnedOnly && ev != Pinned && seen[i]:
			return Envelope{}, fieldErrorf(name, "is not allowed on %s: it belongs to PINNED only", ev)
		case pinnedOnly && ev != Pinned:
			continue
		case !seen[i]:
			return Envelope{}, missingField(name)
		}
	}
	if ev != keyEvent {
		return Envelope{}, keyMismatch("event", string(ev), string(keyEvent))
	}
	if w.PinID.v != keyID {
		return Envelope{}, pinKeyMismatch(w.PinID.v, keyID)
	}
	p := Pin{PinID: w.PinID.v, Reason: w.Reason.v}
	if ev == Pinned {
		p.RecoveryPoint, p.Topic, p.TopicID, p.Offsets, p.Expires = w.RecoveryPoint.v, w.Topic.v, w.TopicID.v, w.Offsets.v, w.Expires.v
		if w.Expires.set && !p.Expires.After(w.At.v) {
			return Envelope{}, fieldErrorf("expires", "is %s, not after at (%s): expected a pin that protects something for a while",
				p.Expires.Format(time.RFC3339Nano), w.At.v.Format(time.RFC3339Nano))
		}
		if want := ComputePinID(p.RecoveryPoint, p.Topic, p.TopicID, p.Offsets, w.At.v, w.Actor.v); want != p.PinID {
			f := fieldErrorf("pinId", "does not match the pin's content (pinId %s, content hashes to %s): the record was edited after it was made", p.PinID, want)
			f.detail = ErrPlanEdited
			return Envelope{}, f
		}
	}
	return Envelope{SchemaVersion: PinSchemaVersion, Event: ev, Pin: &p, At: w.At.v, Actor: w.Actor.v}, nil
}

func pinKeyMismatch(body, key string) *fieldError {
	f := fieldErrorf("pinId", "is %q but the key names %q: expected the key to be pin/<pinId>/<event>", body, key)
	f.detail = ErrKeyMismatch
	return f
}

type pinIDRule struct{}

func (pinIDRule) check(s string) *fieldError {
	if !isPinID(s) {
		return fieldErrorf("", "is %q: expected 16 lowercase hex digits", s)
	}
	return nil
}

// pinReason is the rule of a pin event's reason: printable, not blank.
type pinReason struct{}

func (pinReason) check(s string) *fieldError {
	return auditReason(s, "why the recovery point is pinned or unpinned")
}

// Active reports whether the pin protects at time t, the "at" of a record
// after it: before its expiry, or always when it has none.
func (p Pin) Active(t time.Time) bool { return p.Expires.IsZero() || t.Before(p.Expires) }
