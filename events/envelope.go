package events

import (
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Known reports whether e is one of the four events this build understands.
func (e Event) Known() bool {
	switch e {
	case Planned, Committed, Deleting, Applied:
		return true
	}
	return false
}

// envelopeFields are the fields of an envelope, in the order Encode writes
// them. boundary belongs to COMMITTED only, logStart to APPLIED only.
var envelopeFields = []string{"schemaVersion", "event", "planId", "plan", "at", "actor", "boundary", "logStart"}

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

func unknownEvent(field, ev string) *DecodeError {
	return &DecodeError{
		Field:  field,
		Reason: "names event " + strconv.Quote(ev) + ", which this kcleanup does not know (it knows PLANNED, COMMITTED, DELETING and APPLIED): upgrade kcleanup",
		class:  ErrUnknownEvent,
	}
}

// Encode returns the control record of the envelope: its key and a compact
// JSON value with fields in a fixed order, so equal envelopes give equal
// bytes. It always writes SchemaVersion (this build writes no other), At in
// UTC, and boundary and logStart when they are non-nil. Encode does not
// check the envelope; Validate does.
func (e Envelope) Encode() (key, value []byte) {
	b := make([]byte, 0, 256+32*(len(e.Plan.Offsets)+len(e.Boundary)+len(e.LogStart)))
	b = append(b, `{"schemaVersion":`...)
	b = strconv.AppendInt(b, SchemaVersion, 10)
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

// Validate checks that the envelope would decode: exactly what a reader of
// the control topic will check. Call it before producing a record.
func (e Envelope) Validate() error {
	k, v := e.Encode()
	_, err := Decode(k, v)
	return err
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
	if value == nil {
		return Envelope{}, &DecodeError{Field: "value", Reason: "is null (a tombstone): expected an envelope", class: ErrTombstone}
	}
	n, ferr := parseJSON(value)
	if ferr != nil {
		return Envelope{}, malformed(ferr)
	}
	if n.kind != kindObject {
		return Envelope{}, malformed(wrongKind("value", n, "a JSON object"))
	}
	if err := checkVersion("schemaVersion", n); err != nil {
		return Envelope{}, err
	}
	keyID, keyEvent, keyErr := ParseKey(key)
	if keyErr != nil && keyEvent == "" {
		return Envelope{}, keyErr
	}
	ev, ferr := requiredString(n, "event")
	if ferr != nil {
		return Envelope{}, malformed(ferr)
	}
	if ev != string(keyEvent) {
		return Envelope{}, malformed(keyMismatch("event", ev, string(keyEvent)))
	}
	id, ferr := requiredString(n, "planId")
	if ferr != nil {
		return Envelope{}, malformed(ferr)
	}
	if id != keyID {
		return Envelope{}, malformed(keyMismatch("planId", id, keyID))
	}
	if keyErr != nil { // well-formed, consistent, and from a newer kcleanup
		return Envelope{}, unknownEvent("event", ev)
	}
	if planNode, ok := lookup(n, "plan"); ok && planNode.kind == kindObject {
		if err := checkVersion("plan.schemaVersion", planNode); err != nil {
			return Envelope{}, err
		}
	}
	env, ferr := envelopeFromNode(n)
	if ferr != nil {
		return Envelope{}, malformed(ferr)
	}
	return env, nil
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

// checkVersion classifies the schemaVersion of object n: nil for
// SchemaVersion, ErrNewerSchema for any larger integer, else ErrMalformed.
func checkVersion(field string, n node) error {
	name := field[strings.LastIndexByte(field, '.')+1:]
	v, ok := lookup(n, name)
	if !ok {
		return malformed(missingField(field))
	}
	if v.kind != kindNumber {
		return malformed(wrongKind(field, v, "1"))
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

func lookup(n node, name string) (node, bool) {
	for _, m := range n.members {
		if m.name == name {
			return m.value, true
		}
	}
	return node{}, false
}

func requiredString(n node, name string) (string, *fieldError) {
	v, ok := lookup(n, name)
	if !ok {
		return "", missingField(name)
	}
	return stringFromNode(name, v)
}

// envelopeFromNode checks a schema-1 envelope of a known event strictly.
func envelopeFromNode(n node) (Envelope, *fieldError) {
	var e Envelope
	var seen [8]bool
	for _, m := range n.members {
		i := indexOf(envelopeFields, m.name)
		if i < 0 {
			return Envelope{}, unknownField(m.name, envelopeFields)
		}
		seen[i] = true
		var ferr *fieldError
		switch m.name {
		case "schemaVersion":
			ferr = schemaVersionFromNode(m.name, m.value)
			e.SchemaVersion = SchemaVersion
		case "event":
			var s string
			s, ferr = stringFromNode(m.name, m.value)
			e.Event = Event(s)
		case "planId":
			e.PlanID, ferr = stringFromNode(m.name, m.value)
		case "plan":
			var p Plan
			p, ferr = planFromNode(m.value)
			if ferr != nil {
				ferr = ferr.within("plan")
			}
			e.Plan = p
		case "at":
			e.At, ferr = timeFromNode(m.name, m.value)
		case "actor":
			e.Actor, ferr = stringFromNode(m.name, m.value)
			if ferr == nil {
				ferr = checkActor(m.name, e.Actor)
			}
		case "boundary":
			e.Boundary, ferr = offsetsFromNode(m.name, m.value)
		case "logStart":
			e.LogStart, ferr = offsetsFromNode(m.name, m.value)
		}
		if ferr != nil {
			return Envelope{}, ferr
		}
	}
	for i, name := range envelopeFields {
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

// rfc3339 is the time syntax the envelope schema allows: RFC 3339 with an
// upper-case T and Z and at most nine fraction digits. time.Parse alone also
// accepts a comma before the fraction, an offset hour of 24, and more digits
// than it keeps.
var rfc3339 = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`)

func timeFromNode(field string, n node) (time.Time, *fieldError) {
	s, ferr := stringFromNode(field, n)
	if ferr != nil {
		return time.Time{}, ferr
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || !rfc3339.MatchString(s) {
		return time.Time{}, fieldErrorf(field, "is %q: expected an RFC 3339 time such as 2006-01-02T15:04:05.999Z", s)
	}
	// UTC: the location time.Parse picks depends on the host's time zone,
	// and every replica must decode the same record to the same value.
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return time.Time{}, fieldErrorf(field, "is %q: expected a time between years 0000 and 9999 in UTC", s)
	}
	return t, nil
}

func checkActor(field, s string) *fieldError {
	if strings.TrimSpace(s) == "" {
		return fieldErrorf(field, "is blank: expected who wrote the record, such as host/pid or a worker ID")
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		return fieldErrorf(field, "contains control character %q at byte %d: expected printable text", s[i], i)
	}
	return nil
}
