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

// family describes one family of side events: records that carry no plan,
// under a key prefix of their own, with a schema version of their own above
// every version a kcleanup before them knows, so that such a kcleanup reads
// them as ErrNewerSchema and fails closed (docs/events.md). The mirror, pin,
// no-tombstones declaration and retention events are the families; what
// they share (the key prefix, the events, the version rule, the envelope's
// head and tail, the dispatch of Encode and Decode) is written here once,
// and each family's file keeps only its body, its key and its fields' rules.
type family struct {
	// name is the family in messages: "pin" (as in "pin events").
	name string
	// prefix starts every key of the family, and no key of another.
	prefix string
	// events are the family's events this build knows, in messages' order.
	events [2]Event
	// versions are the schema versions this build reads, the family's own
	// first; any larger integer is ErrNewerSchema.
	versions []int
	// expected is what a schemaVersion neither known nor newer is told to be.
	expected string

	// body reports whether an envelope carries the family's body; encode
	// and decode are the family's Encode and Decode (set in init: they use
	// the descriptor, so a variable's initializer cannot name them).
	body   func(Envelope) bool
	encode func(Envelope) (key, value []byte)
	decode func(key, value []byte) (Envelope, error)
	// texts are the body's strings by field, reason first, which Validate
	// requires to be UTF-8 (Encode writes U+FFFD for invalid bytes).
	texts func(Envelope) []text
}

// families is every side-event family, in the order Encode asks them.
var families []*family

func init() {
	mirrorFamily.body, mirrorFamily.encode, mirrorFamily.decode = func(e Envelope) bool { return e.Mirror != nil }, Envelope.encodeMirror, decodeMirror
	mirrorFamily.texts = func(e Envelope) []text {
		return []text{{"reason", e.Mirror.Reason}, {"mirrorTopic", e.Mirror.Topic}, {"mirrorTopicId", e.Mirror.TopicID}}
	}
	pinFamily.body, pinFamily.encode, pinFamily.decode = func(e Envelope) bool { return e.Pin != nil }, Envelope.encodePin, decodePin
	pinFamily.texts = func(e Envelope) []text {
		p := e.Pin
		return []text{{"reason", p.Reason}, {"pinId", p.PinID}, {"recoveryPoint", p.RecoveryPoint}, {"topic", p.Topic}, {"topicId", p.TopicID}}
	}
	declarationFamily.body, declarationFamily.encode, declarationFamily.decode = func(e Envelope) bool { return e.Declaration != nil }, Envelope.encodeDeclaration, decodeDeclaration
	declarationFamily.texts = func(e Envelope) []text {
		return []text{{"reason", e.Declaration.Reason}, {"topic", e.Declaration.Topic}, {"topicId", e.Declaration.TopicID}}
	}
	retentionFamily.body, retentionFamily.encode, retentionFamily.decode = func(e Envelope) bool { return e.Retention != nil }, Envelope.encodeRetention, decodeRetention
	retentionFamily.texts = func(e Envelope) []text {
		r := e.Retention
		out := []text{{"reason", r.Reason}, {"topic", r.Topic}, {"operatorUid", r.OperatorUID}, {"operatorUidHash", r.OperatorUIDHash}}
		for _, w := range r.Watch {
			out = append(out, text{"watch", w})
		}
		return out
	}
	families = []*family{&mirrorFamily, &pinFamily, &declarationFamily, &retentionFamily}
}

// text is one string of a family's body and the field it is written to.
type text struct{ field, value string }

// checkTexts refuses a body string that is not valid UTF-8: Encode would
// write U+FFFD for its invalid bytes, and the record would decode to
// another value (or, for retention, not encode at all).
func (f *family) checkTexts(e Envelope) error {
	for _, t := range f.texts(e) {
		if !utf8.ValidString(t.value) {
			return malformed(fieldErrorf(t.field, "is not valid UTF-8: Encode would write U+FFFD for its invalid bytes, and the record would decode to another %s", t.field))
		}
	}
	return nil
}

// familyOf is the family of an envelope's body; nil for a plan event.
func familyOf(e Envelope) *family {
	for _, f := range families {
		if f.body(e) {
			return f
		}
	}
	return nil
}

// familyOfKey is the family whose prefix starts key; nil for a plan event's
// key (64 hex digits) or a Flink Agents key (a bare plan ID).
func familyOfKey(key []byte) *family {
	for _, f := range families {
		if f.isKey(key) {
			return f
		}
	}
	return nil
}

func (f *family) isKey(key []byte) bool { return bytes.HasPrefix(key, []byte(f.prefix)) }

// knows reports whether e is one of the family's events.
func (f *family) knows(e Event) bool { return e == f.events[0] || e == f.events[1] }

// versionsText is "version 3", or "versions 2 and 4".
func (f *family) versionsText() string {
	if len(f.versions) == 1 {
		return "version " + strconv.Itoa(f.versions[0])
	}
	return "versions " + strconv.Itoa(f.versions[0]) + " and " + strconv.Itoa(f.versions[1])
}

// checkVersion classifies a family record's schemaVersion: nil for a
// version it reads, ErrNewerSchema for any larger integer (however large),
// else ErrMalformed (a lower version has no such events).
func (f *family) checkVersion(v scalar) error {
	const field = "schemaVersion"
	if !v.present {
		return malformed(missingField(field))
	}
	if v.kind != kindNumber {
		return malformed(wrongKind(field, v.kind, strconv.Itoa(f.versions[0])))
	}
	for _, n := range f.versions {
		if v.text == strconv.Itoa(n) {
			return nil
		}
	}
	if isDigits(v.text) && v.text[0] != '0' && above(v.text, f.versions[0]) {
		return newDecodeError(ErrNewerSchema, fieldErrorf(field, "is %s: this kcleanup understands %s events of schema %s only: upgrade kcleanup", v.text, f.name, f.versionsText()))
	}
	return malformed(fieldErrorf(field, "is %s: expected %s", v.text, f.expected))
}

// above reports whether digits, a canonical decimal integer, is above n.
func above(digits string, n int) bool {
	if len(digits) > 18 {
		return true
	}
	d, _ := strconv.ParseInt(digits, 10, 64)
	return d > int64(n)
}

// prelude reads what comes before a family record's strict rules: the value
// is a JSON object whose schemaVersion this build reads (checkVersion).
func (f *family) prelude(value []byte) (shape, error) {
	sh, sferr := scan(value)
	if sferr != nil {
		return shape{}, malformed(sferr)
	}
	if sh.kind != kindObject {
		return shape{}, malformed(wrongKind("value", sh.kind, "a JSON object"))
	}
	return sh, f.checkVersion(sh.schemaVersion)
}

// unknownEvent is a key that names an event of the family this build does
// not know: a newer kcleanup's.
func (f *family) unknownEvent(ev string) *DecodeError {
	return &DecodeError{Field: "key", Reason: "names " + f.name + " event " + strconv.Quote(ev) +
		", which this kcleanup does not know (it knows " + string(f.events[0]) + " and " + string(f.events[1]) + "): upgrade kcleanup", class: ErrUnknownEvent}
}

// splitKey splits "<prefix><middle>/<EVENT>" (a pin's or a mirror's key).
// A well-formed key whose event this build does not know returns both parts
// with an error matching ErrUnknownEvent; any other bad key (one whose
// middle fails valid) matches ErrMalformed and says it expected expect.
func (f *family) splitKey(key []byte, valid func(string) bool, expect string) (middle string, e Event, err error) {
	s := string(key)
	rest, ok := strings.CutPrefix(s, f.prefix)
	middle, ev, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || !utf8.ValidString(s) || !valid(middle) || !isEventName(ev) {
		return "", "", &DecodeError{Field: "key", Reason: "is " + strconv.Quote(s) + ": expected " + expect}
	}
	if !f.knows(Event(ev)) {
		return middle, Event(ev), f.unknownEvent(ev)
	}
	return middle, Event(ev), nil
}

// keyed is the part of a pin's or a mirror's record that its key names
// again: the event and a field (id: pinId, mirrorTopic).
type keyed struct {
	parse    func(key []byte) (id string, e Event, err error) // ParsePinKey, ParseMirrorKey
	id       string                                           // the field's name
	idOf     func(shape) scalar                               // its value as scanned
	mismatch func(body, key string) *fieldError               // the body's value is not the key's
	fields   []string                                         // every field of the family, in Encode's order
}

// decodeKeyed reads a record of a keyed family (value not nil, UTF-8): the
// strict decode into W first (one pass over valid input), which build checks
// against the key; on any failure, classify.
func decodeKeyed[W any](f *family, k keyed, key, value []byte, build func(w *W, keyID string, keyEvent Event) (Envelope, *fieldError)) (Envelope, error) {
	keyID, keyEvent, keyErr := k.parse(key)
	var w W
	err := json.Unmarshal(value, &w, strict)
	if err == nil && firstKind(value) == kindObject && keyErr == nil {
		env, ferr := build(&w, keyID, keyEvent)
		if ferr != nil {
			return Envelope{}, malformed(ferr)
		}
		return env, nil
	}
	return Envelope{}, f.classify(k, value, keyID, keyEvent, keyErr, err)
}

// classify is a keyed family's Decode once the strict decode failed: the
// rules that come before the strict ones, in order (the schema version, the
// key, the body's event and id against the key, an unknown event), then the
// strict decode's own error (err; nil when only the kind failed).
func (f *family) classify(k keyed, value []byte, keyID string, keyEvent Event, keyErr, err error) error {
	sh, perr := f.prelude(value)
	if perr != nil {
		return perr
	}
	if err := keyAgrees(sh, k.id, k.idOf(sh), keyID, keyEvent, keyErr, k.mismatch); err != nil {
		return err
	}
	if keyErr != nil { // well-formed, consistent, and from a newer kcleanup
		return keyErr
	}
	if err == nil { // only the kind can have failed
		return malformed(wrongKind("value", firstKind(value), "a JSON object"))
	}
	return malformed(fromLibrary(err, k.fields))
}

// keyAgrees applies, in order, the rules on a record's key before its
// strict ones: a key that names no event is its error; the body's event
// and its id field (planId, pinId, mirrorTopic) must be the key's.
func keyAgrees(sh shape, idField string, id scalar, keyID string, keyEvent Event, keyErr error, mismatch func(body, key string) *fieldError) error {
	if keyErr != nil && keyEvent == "" {
		return keyErr
	}
	ev, ferr := requiredString("event", sh.event)
	if ferr != nil {
		return malformed(ferr)
	}
	if ev != string(keyEvent) {
		return malformed(keyMismatch("event", ev, string(keyEvent)))
	}
	got, ferr := requiredString(idField, id)
	if ferr != nil {
		return malformed(ferr)
	}
	if got != keyID {
		return malformed(mismatch(got, keyID))
	}
	return nil
}

// appendHead starts a family record: {"schemaVersion":v,"event":e.
func appendHead(b []byte, version int, e Event) []byte {
	b = append(b, `{"schemaVersion":`...)
	b = strconv.AppendInt(b, int64(version), 10)
	b = append(b, `,"event":`...)
	return appendString(b, string(e))
}

// appendTail ends a family record: ,"at":…,"actor":…,"reason":…}.
func appendTail(b []byte, e Envelope, reason string) []byte {
	b = append(b, `,"at":`...)
	b = appendString(b, e.At.UTC().Format(time.RFC3339Nano))
	b = append(b, `,"actor":`...)
	b = appendString(b, e.Actor)
	b = append(b, `,"reason":`...)
	b = appendString(b, reason)
	return append(b, '}')
}

// familyRule names a family for the rules of its fields (versionField).
type familyRule interface{ family() *family }

// versionField is a family record's schemaVersion as decoded: exactly the
// literal of one of the versions the family reads.
type versionField[F familyRule] struct {
	set bool
	v   int
}

func (f *versionField[F]) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if f.set {
		return twice
	}
	f.set = true
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	var rule F
	fam := rule.family()
	for _, n := range fam.versions {
		if v.Kind() == '0' && string(v) == strconv.Itoa(n) {
			f.v = n
			return nil
		}
	}
	return atValue(dec, fieldErrorf("", "is %s: expected %s", v, fam.expected))
}

// auditReason is the rule of a side event's reason: printable, not blank;
// why says what a blank one should have said.
func auditReason(s, why string) *fieldError {
	if strings.TrimSpace(s) == "" {
		return fieldErrorf("", "is blank: expected %s, for the audit", why)
	}
	return checkActor("", s)
}
