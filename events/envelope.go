package events

import (
	"bytes"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Known reports whether e is one of the four events this build understands.
func (e Event) Known() bool {
	_, ok := knownEvent([]byte(e))
	return ok
}

// envelopeFields are the fields of an envelope, in the order Encode writes
// them. boundary belongs to COMMITTED only, logStart to APPLIED only.
// reason belongs to a PLANNED or COMMITTED of ReasonSchemaVersion only.
var envelopeFields = []string{"schemaVersion", "event", "planId", "plan", "at", "actor", "reason", "boundary", "logStart"}

// Key is the control-record key of one transition of one plan:
// "<planId>/<EVENT>". Each transition has its own key, so compaction keeps
// the history while a retried duplicate collapses onto its original.
func Key(planID string, e Event) string {
	return planID + "/" + string(e)
}

// ParseKey splits a control-record key into plan ID and event. A well-formed
// key whose event this build does not know returns both parts together with
// an error matching ErrUnknownEvent; any other bad key matches ErrMalformed.
func ParseKey(key []byte) (planID string, e Event, err error) {
	s := string(key)
	id, ev, ok := strings.Cut(s, "/")
	if !ok || !utf8.ValidString(s) || !isPlanID(id) || !isEventName(ev) {
		return "", "", &DecodeError{Field: "key", Reason: "is " + strconv.Quote(s) + ": expected <planId>/<EVENT>, a plan ID of 64 lowercase hex digits, a slash and an event such as PLANNED"}
	}
	if !Event(ev).Known() {
		return id, Event(ev), unknownEvent("key", ev)
	}
	return id, Event(ev), nil
}

// isEventName is the shape of every event name, known or future:
// ^[A-Z][A-Z0-9_]{0,63}$.
func isEventName(s string) bool {
	if s == "" || len(s) > 64 || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// knownList names the known events for a message: "PLANNED, COMMITTED, DELETING and APPLIED".
var knownList = func() string {
	names := make([]string, len(lifecycle))
	for i, e := range lifecycle {
		names[i] = string(e)
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}()

func unknownEvent(field, ev string) *DecodeError {
	return &DecodeError{
		Field:  field,
		Reason: "names event " + strconv.Quote(ev) + ", which this kcleanup does not know (it knows " + knownList + "): upgrade kcleanup",
		class:  ErrUnknownEvent,
	}
}

// Encode returns the control record of the envelope: its key and a compact
// JSON value with fields in a fixed order, so equal envelopes give equal
// bytes. It writes schema version 1, or ReasonSchemaVersion with "reason"
// after "actor" for a PLANNED or COMMITTED with a Reason; At in UTC, and
// boundary and logStart when they are non-nil. Encode does not
// check the envelope; Validate does (text that is not valid UTF-8 is written
// as U+FFFD, so only an envelope Validate accepts decodes to itself).
func (e Envelope) Encode() (key, value []byte) {
	if f := familyOf(e); f != nil {
		return f.encode(e)
	}
	b := make([]byte, 0, 256+len(e.Reason)+32*(len(e.Plan.Offsets)+len(e.Boundary)+len(e.LogStart)))
	b = append(b, `{"schemaVersion":`...)
	b = strconv.AppendInt(b, int64(e.planVersion()), 10)
	b = append(b, `,"event":`...)
	b = appendString(b, string(e.Event))
	b = append(b, `,"planId":`...)
	b = appendString(b, e.PlanID)
	b = append(b, `,"plan":`...)
	b = e.Plan.appendJSON(b, false)
	b = append(b, `,"at":`...)
	b = appendString(b, e.At.UTC().Format(time.RFC3339Nano))
	b = append(b, `,"actor":`...)
	b = appendString(b, e.Actor)
	if e.planVersion() == ReasonSchemaVersion {
		b = append(b, `,"reason":`...)
		b = appendString(b, e.Reason)
	}
	if e.Boundary != nil {
		b = append(b, `,"boundary":`...)
		b = appendOffsets(b, e.Boundary, "")
	}
	if e.LogStart != nil {
		b = append(b, `,"logStart":`...)
		b = appendOffsets(b, e.LogStart, "")
	}
	b = append(b, '}')
	return []byte(Key(e.PlanID, e.Event)), b
}

// Validate checks that the envelope would decode, and to itself: what a
// reader of the control topic will check, and the one thing Decode cannot
// see, text that is not valid UTF-8. Encode writes such bytes as U+FFFD (the
// JSON it writes stays valid), so the record would decode to another actor
// or reason than the one written; Validate refuses it instead. Call it
// before producing a record (worker.Cluster.Append does, by EncodeValid).
func (e Envelope) Validate() error {
	_, _, err := e.EncodeValid()
	return err
}

// EncodeValid is Encode after Validate's checks, for a writer: the record
// is encoded once, checked to decode back, and that encoding is returned.
func (e Envelope) EncodeValid() (key, value []byte, err error) {
	if !utf8.ValidString(e.Actor) {
		return nil, nil, malformed(fieldErrorf("actor", "is not valid UTF-8: Encode would write U+FFFD for its invalid bytes, and the record would decode to another actor"))
	}
	if !utf8.ValidString(e.Reason) {
		return nil, nil, malformed(fieldErrorf("reason", "is not valid UTF-8: Encode would write U+FFFD for its invalid bytes, and the record would decode to another reason"))
	}
	if e.Reason != "" && e.Mirror == nil && e.Pin == nil && !e.Event.CarriesReason() {
		return nil, nil, malformed(fieldErrorf("reason", "is set on %s: only a PLANNED or COMMITTED carries an operator's reason", e.Event))
	}
	if f := familyOf(e); f != nil {
		if err := f.checkTexts(e); err != nil {
			return nil, nil, err
		}
	}
	if e.Mirror != nil && e.Mirror.HasGrace && e.Event == MirrorAttached {
		if err := CheckRestoreGrace(e.Mirror.RestoreGrace); err != nil {
			return nil, nil, err
		}
	}
	key, value = e.Encode()
	if _, err := Decode(key, value); err != nil {
		return nil, nil, err
	}
	return key, value, nil
}

// Decode reads one control record strictly. Errors are *DecodeError and
// match one of the sentinels with errors.Is:
//   - ErrTombstone: value is nil.
//   - ErrNewerSchema: value is a JSON object whose schemaVersion (or whose
//     plan's schemaVersion) is above SchemaVersion; the rest is not checked,
//     because a newer schema may add fields.
//   - ErrUnknownEvent: a schema-1 envelope whose key and body agree on plan
//     ID and on an event name this build does not know.
//   - ErrMalformed: everything else, including a key that does not match the
//     body, a plan that fails ParsePlan's rules, and a body planId that is
//     not the plan's.
func Decode(key, value []byte) (Envelope, error) {
	return decode(nil, key, value)
}

// Decoder decodes control records as Decode does, and remembers the plans
// it has verified: every record of an operation carries its full plan, and a
// plan whose bytes equal those of a plan already verified under the same
// plan ID is neither decoded nor hashed again. The Plan of such envelopes is
// shared, and so is a Boundary or LogStart written as the plan's offsets:
// their maps must not be modified. A Decoder is used by one goroutine at a
// time.
type Decoder struct {
	plans map[string]verifiedPlan // by plan ID
	last  verifiedPlan            // the plan verified or found last (canonical)
	actor string                  // the last actor the fast path accepted (canonical)
	// topic and topicID are the last plan's (canonical): every plan of a
	// control topic has the same.
	topic, topicID string
}

type verifiedPlan struct {
	raw     []byte // the plan object's bytes, as the record had them
	offsets int    // where in raw its offsets object starts; -1 when not known (the strict path's)
	plan    Plan
}

// maxVerifiedPlans bounds a Decoder's memory. The records of one operation
// are usually close together in the log, so a small window catches them.
const maxVerifiedPlans = 1024

// NewDecoder returns a Decoder that remembers no plan yet.
func NewDecoder() *Decoder {
	return &Decoder{plans: make(map[string]verifiedPlan)}
}

// Decode is the package's Decode, with the Decoder's memory of plans.
func (d *Decoder) Decode(key, value []byte) (Envelope, error) {
	return decode(d, key, value)
}

func (d *Decoder) remember(raw []byte, offsets int, p Plan) {
	if d == nil {
		return
	}
	if len(d.plans) >= maxVerifiedPlans {
		clear(d.plans)
	}
	d.last = verifiedPlan{raw: bytes.Clone(raw), offsets: offsets, plan: p}
	d.plans[p.PlanID] = d.last
}

// envelopeJSON is the envelope as decoded; each field checks itself.
type envelopeJSON struct {
	SchemaVersion envelopeVersion `json:"schemaVersion"`
	Event         str[anyText]    `json:"event"`
	PlanID        str[anyText]    `json:"planId"`
	Plan          planField       `json:"plan"`
	At            timeField       `json:"at"`
	Actor         str[actor]      `json:"actor"`
	Reason        str[reasonRule] `json:"reason"`
	Boundary      offsetsField    `json:"boundary"`
	LogStart      offsetsField    `json:"logStart"`
}

// decode reads a record the fast way when it is in exactly Encode's form
// (canonical), else strictly (strictDecode).
func decode(d *Decoder, key, value []byte) (Envelope, error) {
	if env, ok := canonical(d, key, value); ok {
		return env, nil
	}
	return strictDecode(d, key, value)
}

// strictDecode reads a record in two steps only when it is not a valid schema-1
// envelope: the strict decode first (one pass over valid input), and on any
// failure a scan that classifies the record as docs/design.md §5 needs it, newer
// schema and unknown event before any strict rule.
// It reads every record the fast path does not accept outright, and is
// FuzzCanonical's reference.
func strictDecode(d *Decoder, key, value []byte) (Envelope, error) {
	if value == nil {
		return Envelope{}, &DecodeError{Field: "value", Reason: "is null (a tombstone): expected an envelope", class: ErrTombstone}
	}
	if !utf8.Valid(value) {
		return Envelope{}, malformed(&fieldError{Reason: "is not valid UTF-8"})
	}
	if f := familyOfKey(key); f != nil {
		return f.decode(key, value)
	}
	keyID, keyEvent, keyErr := ParseKey(key)
	w := envelopeJSON{Plan: planField{d: d, keyID: keyID}}
	err := json.Unmarshal(value, &w, strict)
	var ferr *fieldError
	var env Envelope
	if err == nil {
		if k := firstKind(value); k != kindObject {
			ferr = wrongKind("value", k, "a JSON object")
		} else {
			env, ferr = w.envelope()
		}
	}
	if err == nil && ferr == nil {
		if keyErr != nil && keyEvent == "" {
			return Envelope{}, keyErr
		}
		if env.Event != keyEvent {
			return Envelope{}, malformed(keyMismatch("event", string(env.Event), string(keyEvent)))
		}
		if env.PlanID != keyID {
			return Envelope{}, malformed(keyMismatch("planId", env.PlanID, keyID))
		}
		if keyErr != nil {
			return Envelope{}, unknownEvent("event", string(env.Event))
		}
		return env, nil
	}
	sh, sferr := scan(value)
	if sferr != nil {
		return Envelope{}, malformed(sferr)
	}
	if sh.kind != kindObject {
		return Envelope{}, malformed(wrongKind("value", sh.kind, "a JSON object"))
	}
	if err := classify(sh, keyID, keyEvent, keyErr); err != nil {
		return Envelope{}, err
	}
	if ferr == nil {
		ferr = fromLibrary(err, envelopeFields)
	}
	return Envelope{}, malformed(ferr)
}

// classify applies, in order, the rules that come before the strict ones:
// the envelope's schema version, the key, the body's event and planId
// against the key, an unknown event, the plan's schema version.
func classify(sh shape, keyID string, keyEvent Event, keyErr error) error {
	if sh.schemaVersion.text != "5" || sh.schemaVersion.kind != kindNumber { // 5: a plan event with a reason (ReasonSchemaVersion)
		if err := checkVersion("schemaVersion", sh.schemaVersion); err != nil {
			return err
		}
	}
	planMismatch := func(body, key string) *fieldError { return keyMismatch("planId", body, key) }
	if err := keyAgrees(sh, "planId", sh.planID, keyID, keyEvent, keyErr, planMismatch); err != nil {
		return err
	}
	if keyErr != nil { // well-formed, consistent, and from a newer kcleanup
		return unknownEvent("event", string(keyEvent))
	}
	if sh.plan == kindObject {
		return checkVersion("plan.schemaVersion", sh.planSchemaVersion)
	}
	return nil
}

func keyMismatch(field, body, key string) *fieldError {
	f := fieldErrorf(field, "is %q but the key names %q: expected the key to be <planId>/<event>", body, key)
	f.detail = ErrKeyMismatch
	return f
}

func malformed(ferr *fieldError) *DecodeError {
	if ferr.Field == "" {
		ferr = ferr.within("value")
	}
	return newDecodeError(ErrMalformed, ferr)
}

// checkVersion classifies a schemaVersion: nil for SchemaVersion,
// ErrNewerSchema for any larger integer, else ErrMalformed.
func checkVersion(field string, v scalar) error {
	if !v.present {
		return malformed(missingField(field))
	}
	if v.kind != kindNumber {
		return malformed(wrongKind(field, v.kind, "1"))
	}
	if v.text == "1" {
		return nil
	}
	// Any other canonical integer above 1, however large, is a newer schema.
	if isDigits(v.text) && v.text[0] != '0' {
		return newDecodeError(ErrNewerSchema, fieldErrorf(field, "is %s: this kcleanup understands only schema version %d: upgrade kcleanup", v.text, SchemaVersion))
	}
	return malformed(fieldErrorf(field, "is %s: expected schema version %d", v.text, SchemaVersion))
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func requiredString(name string, v scalar) (string, *fieldError) {
	if !v.present {
		return "", missingField(name)
	}
	if v.kind != kindString {
		return "", wrongKind(name, v.kind, "a string")
	}
	return v.text, nil
}

// envelope checks what no single field can: which fields are present for
// the event, and that the body's planId is the plan's.
func (w *envelopeJSON) envelope() (Envelope, *fieldError) {
	e := Envelope{
		SchemaVersion: w.SchemaVersion.v,
		Event:         Event(w.Event.v),
		PlanID:        w.PlanID.v,
		Plan:          w.Plan.v,
		At:            w.At.v,
		Actor:         w.Actor.v,
		Reason:        w.Reason.v,
		Boundary:      w.Boundary.v,
		LogStart:      w.LogStart.v,
	}
	if e.SchemaVersion == ReasonSchemaVersion && !e.Event.CarriesReason() {
		return Envelope{}, fieldErrorf("schemaVersion", "is %d on %s: only a PLANNED or COMMITTED carries a reason; %s is version %d", ReasonSchemaVersion, e.Event, e.Event, SchemaVersion)
	}
	seen := [...]bool{w.SchemaVersion.set, w.Event.set, w.PlanID.set, w.Plan.set, w.At.set, w.Actor.set, w.Reason.set, w.Boundary.set, w.LogStart.set}
	for i, name := range envelopeFields {
		if name == "reason" {
			if seen[i] != (e.SchemaVersion == ReasonSchemaVersion) {
				if seen[i] {
					return Envelope{}, fieldErrorf(name, "is in a record of schema version %d: expected it only in version %d", SchemaVersion, ReasonSchemaVersion)
				}
				return Envelope{}, missingField(name)
			}
			continue
		}
		if seen[i] == fieldRequired(name, e.Event) {
			continue
		}
		if seen[i] {
			return Envelope{}, fieldErrorf(name, "is not allowed on %s: it belongs to %s only", e.Event, map[string]Event{"boundary": Committed, "logStart": Applied}[name])
		}
		return Envelope{}, missingField(name)
	}
	if e.PlanID != e.Plan.PlanID {
		return Envelope{}, fieldErrorf("planId", "is %q but plan.planId is %q: expected the ID of the plan it carries", e.PlanID, e.Plan.PlanID)
	}
	return e, nil
}

// fieldRequired: every field but boundary and logStart is always required;
// those two are required on their event and forbidden on the others.
func fieldRequired(name string, e Event) bool {
	switch name {
	case "boundary":
		return e == Committed
	case "logStart":
		return e == Applied
	}
	return true
}

// planField is the envelope's plan. With a Decoder, a plan whose bytes it
// has verified before under the key's plan ID is taken from its memory.
type planField struct {
	d     *Decoder
	keyID string
	v     Plan
	set   bool
}

func (f *planField) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if f.set {
		return twice
	}
	f.set = true
	k := dec.PeekKind()
	raw, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if k != '{' {
		return atValue(dec, wrongKind("", kindOf(k), "a JSON object"))
	}
	if f.d != nil {
		if c, ok := f.d.plans[f.keyID]; ok && bytes.Equal(c.raw, raw) {
			f.v = c.plan
			return nil
		}
	}
	p, ferr := decodePlan(raw)
	if ferr != nil {
		return atValue(dec, ferr)
	}
	if p.PlanID == f.keyID {
		f.d.remember(raw, -1, p) // where its offsets are is canonical's to know
	}
	f.v = p
	return nil
}

// timeField is "at": RFC 3339 with an upper-case T and Z and at most nine
// fraction digits, read in UTC. time.Parse alone also accepts a comma before
// the fraction, an offset hour of 24, and more digits than it keeps.
type timeField struct {
	v   time.Time
	set bool
}

func (f *timeField) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if f.set {
		return twice
	}
	f.set = true
	s, ferr := readString(dec, "a string")
	if ferr != nil {
		return atValue(dec, ferr)
	}
	// The shape first: it is cheaper than time.Parse and rejects most.
	if !rfc3339Shape(s) {
		return atValue(dec, fieldErrorf("", "is %q: expected an RFC 3339 time such as 2006-01-02T15:04:05.999Z", s))
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return atValue(dec, fieldErrorf("", "is %q: expected an RFC 3339 time such as 2006-01-02T15:04:05.999Z", s))
	}
	// UTC: the location time.Parse picks depends on the host's time zone,
	// and every replica must decode the same record to the same value.
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return atValue(dec, fieldErrorf("", "is %q: expected a time between years 0000 and 9999 in UTC", s))
	}
	f.v = t
	return nil
}

// rfc3339Shape matches
// ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$
// without a regular expression (it runs for every record).
func rfc3339Shape[T ~string | ~[]byte](s T) bool {
	digits := func(from, n int) bool {
		for i := from; i < from+n; i++ {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		}
		return true
	}
	if len(s) < 20 || !digits(0, 4) || s[4] != '-' || !digits(5, 2) || s[7] != '-' || !digits(8, 2) || s[10] != 'T' ||
		!digits(11, 2) || s[13] != ':' || !digits(14, 2) || s[16] != ':' || !digits(17, 2) {
		return false
	}
	i := 19
	if s[i] == '.' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if n := j - i - 1; n < 1 || n > 9 {
			return false
		}
		i = j
	}
	zone := s[i:]
	if len(zone) == 1 && zone[0] == 'Z' {
		return true
	}
	if len(zone) != 6 || zone[0] != '+' && zone[0] != '-' || zone[3] != ':' {
		return false
	}
	h1, h2, m1, m2 := zone[1], zone[2], zone[4], zone[5]
	hourOK := (h1 == '0' || h1 == '1') && h2 >= '0' && h2 <= '9' || h1 == '2' && h2 >= '0' && h2 <= '3'
	return hourOK && m1 >= '0' && m1 <= '5' && m2 >= '0' && m2 <= '9'
}

// actor is the rule of the actor field.
type actor struct{}

func (actor) check(s string) *fieldError { return checkActor("", s) }

func checkActor(field, s string) *fieldError {
	if strings.TrimSpace(s) == "" {
		return fieldErrorf(field, "is blank: expected who wrote the record, such as host/pid or a worker ID")
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		return fieldErrorf(field, "contains control character %q at byte %d: expected printable text", s[i], i)
	}
	return nil
}
