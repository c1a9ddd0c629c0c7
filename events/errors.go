package events

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/errors"
)

// The classes of control-record decode errors. Match them with errors.Is on
// any error Decode or ParseKey returns. Their messages are unique because
// cockroachdb/errors compares sentinels by message across process boundaries.
var (
	// ErrTombstone: the record has a nil value. Compaction may delete it, and
	// it may erase an accepted record's key, so the projector rejects it.
	ErrTombstone = errors.New("control record is a tombstone")
	// ErrMalformed: anything else that is not a valid envelope of this schema.
	ErrMalformed = errors.New("control record is malformed")
	// ErrNewerSchema: a JSON object whose schemaVersion is newer than this
	// build's. It was probably written by a newer kcleanup; the projection
	// must fail closed until this build is upgraded (docs/design.md §5).
	ErrNewerSchema = errors.New("control record uses a newer schema version")
	// ErrUnknownEvent: a schema-1 envelope, consistent with its key, whose
	// event this build does not know. Treated like ErrNewerSchema.
	ErrUnknownEvent = errors.New("control record names an unknown event")
)

// Finer causes of ErrMalformed, for callers that report them apart. errors.Is
// matches them in addition to the class; they are not classes themselves.
var (
	// ErrPlanEdited: a plan's planId is not the hash of its content (the plan
	// was edited after it was made). Also marks ParsePlan's error.
	ErrPlanEdited = errors.New("plan does not match its plan ID")
	// ErrKeyMismatch: the record key names another plan ID or event than the
	// value's body.
	ErrKeyMismatch = errors.New("control record key does not match its value")
)

// DecodeError says which field of a control record is wrong and why. Field is
// a path into the record: "key", "value", "actor", "plan.offsets" or
// `plan.offsets["00"]`. errors.Is matches it with exactly one of ErrTombstone,
// ErrMalformed, ErrNewerSchema or ErrUnknownEvent.
type DecodeError struct {
	Field  string
	Reason string
	// class is one of the four sentinels; nil means ErrMalformed, so a
	// DecodeError built by hand elsewhere still classifies as malformed.
	class error
	// detail is nil, ErrPlanEdited or ErrKeyMismatch.
	detail error
}

func (e *DecodeError) Error() string {
	return "control record field " + quoteField(e.Field) + ": " + e.Reason
}

// Unwrap exposes the class, so both errors.Is of the standard library and
// of cockroachdb/errors match the sentinel.
func (e *DecodeError) Unwrap() error {
	if e.class == nil {
		return ErrMalformed
	}
	return e.class
}

// Is matches the finer cause, if any; the class is matched through Unwrap.
func (e *DecodeError) Is(target error) bool {
	return e.detail != nil && target == e.detail
}

func newDecodeError(class error, f *fieldError) *DecodeError {
	return &DecodeError{Field: f.Field, Reason: f.Reason, class: class, detail: f.detail}
}

// fieldError is the parse error shared by plans, markers and envelopes before
// it is given its final form (a plan-file error or a DecodeError).
type fieldError struct {
	Field  string // path, "" for the whole document
	Reason string
	detail error // nil, ErrPlanEdited or ErrKeyMismatch
}

func (e *fieldError) Error() string {
	if e.Field == "" {
		return "the document " + e.Reason
	}
	return "field " + quoteField(e.Field) + ": " + e.Reason
}

func fieldErrorf(field, format string, args ...any) *fieldError {
	return &fieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// within prefixes the path of a nested document's error with the field that
// holds it: plan + offsets["00"] = plan.offsets["00"].
func (e *fieldError) within(parent string) *fieldError {
	f := *e
	switch {
	case e.Field == "":
		f.Field = parent
	case strings.HasPrefix(e.Field, "["):
		f.Field = parent + e.Field
	default:
		f.Field = parent + "." + e.Field
	}
	return &f
}

// quoteField quotes a plain path ("at" reads badly unquoted) but leaves a
// path that already contains quoted partition keys as it is, to avoid
// backslashes: offsets["00"].
func quoteField(f string) string {
	if f == "" {
		return `""`
	}
	if strings.ContainsAny(f, `["`) {
		return f
	}
	return `"` + f + `"`
}
