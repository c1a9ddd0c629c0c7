package events

import (
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// ReasonSchemaVersion is the version of a PLANNED or COMMITTED that carries
// the operator's reason (apply --reason, submit --reason). Schema 1 is
// closed (a field it does not define is malformed), so a reader that knows
// only version 1 must not meet a "reason" there: it would reject the
// COMMITTED and fold a lower boundary than the log holds. Under version 5 it
// reads a newer schema and fails closed (degraded: it commits and deletes
// nothing) until upgraded. A plan event without a reason stays version 1,
// byte for byte what earlier builds wrote (docs/events.md, "Reasons").
// 2 and 4 are the mirror events', 3 the pin events'.
const ReasonSchemaVersion = 5

// MaxReasonBytes bounds an operator's reason: report.TextLimit, the most
// of a writer's text any view shows whole.
const MaxReasonBytes = 1024

// CarriesReason reports whether an event may carry a reason: the two an
// operator's command writes (apply, submit); a worker's DELETING and
// APPLIED never do.
func (e Event) CarriesReason() bool { return e == Planned || e == Committed }

// envelopeVersion is a plan event's schemaVersion: exactly the literal 1,
// or 5 (ReasonSchemaVersion).
type envelopeVersion struct {
	set bool
	v   int
}

func (f *envelopeVersion) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if f.set {
		return twice
	}
	f.set = true
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if v.Kind() != '0' {
		return atValue(dec, wrongKind("", kindOf(v.Kind()), "1"))
	}
	switch string(v) {
	case "1":
		f.v = SchemaVersion
	case "5":
		f.v = ReasonSchemaVersion
	default:
		return atValue(dec, fieldErrorf("", "is %s: this kcleanup understands only schema version %d, or %d for a PLANNED or COMMITTED with a reason", v, SchemaVersion, ReasonSchemaVersion))
	}
	return nil
}

// reasonRule is the rule of an operator's reason: printable, not blank, at
// most MaxReasonBytes.
type reasonRule struct{}

func (reasonRule) check(s string) *fieldError { return checkReason("", s) }

func checkReason(field, s string) *fieldError {
	if strings.TrimSpace(s) == "" {
		return fieldErrorf(field, "is blank: expected why the operator wrote the record, for the audit")
	}
	if len(s) > MaxReasonBytes {
		return fieldErrorf(field, "is %d bytes: expected at most %d", len(s), MaxReasonBytes)
	}
	return checkActor(field, s)
}

// CheckReason says why s cannot be an operator's reason (blank, over
// MaxReasonBytes, a control character), or nil: what apply and submit
// check before they connect.
func CheckReason(s string) error {
	if ferr := checkReason("reason", s); ferr != nil {
		return malformed(ferr)
	}
	return nil
}

// planVersion is the schema version Encode writes for a plan event.
func (e Envelope) planVersion() int {
	if e.Reason != "" && e.Event.CarriesReason() {
		return ReasonSchemaVersion
	}
	return SchemaVersion
}
