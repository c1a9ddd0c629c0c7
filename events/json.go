package events

import (
	"bytes"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/cockroachdb/errors"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// This file holds the JSON plumbing of every decoder in the package. Plans,
// markers and envelopes are decoded into structs by go-json-experiment/json
// (the upstream of encoding/json/v2), which rejects what encoding/json's
// Unmarshal lets through: duplicate names at any depth, unknown members
// (RejectUnknownMembers), trailing data. Every field type below checks its
// own value while it is decoded, so errors come in document order and name
// the field and what was expected.
//
// When a decode fails, scan (a walk over the tokens with jsontext) reads the
// whole document again: a syntax error, a duplicate name or a nesting limit
// anywhere is reported first, wherever it is, and Decode classifies a newer
// schema before any strict rule applies. Valid input is read once.

// strict are the decoding options of every plan, marker and envelope.
//
// AllowInvalidUTF8 is on because the library's UTF-8 check is stricter than
// this package's contract, not looser: every decoder first rejects input that
// is not valid UTF-8 (utf8.Valid), and the one thing the option then still
// allows is an escaped unpaired UTF-16 surrogate ("\ud83d"), which decodes to
// U+FFFD as encoding/json decodes it. The hand-written parser this replaced
// accepted it so, and a record accepted once must stay accepted on replay: a
// COMMITTED that an upgrade rejected would lower the boundary.
//
// AllowDuplicateNames is on because the library finds duplicates at a cost
// that grows with the object: past 64 names it allocates a string per name
// (jsontext's objectNamespace), and offset maps have one name per partition;
// with 100 partitions that doubled the time of a record. Duplicates are still
// rejected, more cheaply: each field type below refuses to be set twice, and
// offsetsField refuses a partition twice (canonical keys name each partition
// one way). scan, which words every error, keeps the library's check.
var strict = json.JoinOptions(json.RejectUnknownMembers(true), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

// twice is the error of a field decoded a second time (see strict); scan
// words it with its path.
var twice = fieldErrorf("", "appears more than once: expected each key exactly once")

// kind is the kind of a JSON value, as errors name it.
type kind int

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
	kindInvalid
)

func (k kind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object", "not valid JSON"}[k]
}

func kindOf(k jsontext.Kind) kind {
	switch k {
	case 'n':
		return kindNull
	case 't', 'f':
		return kindBool
	case '0':
		return kindNumber
	case '"':
		return kindString
	case '[':
		return kindArray
	case '{':
		return kindObject
	}
	return kindInvalid
}

func wrongKind(field string, k kind, expected string) *fieldError {
	if k == kindNull {
		return fieldErrorf(field, "is null: expected %s", expected)
	}
	return fieldErrorf(field, "is %s: expected %s", k, expected)
}

// maxDepth bounds nesting; our documents are at most four levels deep, and a
// newer schema is not going to need 64.
const maxDepth = 64

// decodeStrict decodes one JSON object into v, whose fields are the types
// below. known lists v's member names, for the unknown-member error.
func decodeStrict(data []byte, v any, known []string) *fieldError {
	if !utf8.Valid(data) {
		return &fieldError{Reason: "is not valid UTF-8"}
	}
	err := json.Unmarshal(data, v, strict)
	if err == nil {
		if k := firstKind(data); k != kindObject {
			return wrongKind("", k, "a JSON object") // null leaves v as it was
		}
		return nil
	}
	if _, ferr := scan(data); ferr != nil {
		return ferr
	}
	return fromLibrary(err, known)
}

// firstKind is the kind of the value data starts with (valid JSON).
func firstKind(data []byte) kind {
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) == 0 {
		return kindInvalid
	}
	switch c := data[0]; {
	case c == '-' || c >= '0' && c <= '9':
		return kindNumber
	default:
		return kindOf(jsontext.Kind(c))
	}
}

// fromLibrary turns a decode error of the library, on input that scan found
// well-formed, into a field error.
func fromLibrary(err error, known []string) *fieldError {
	var se *json.SemanticError
	if !errors.As(err, &se) {
		return fieldErrorf("", "is not valid: %v", err)
	}
	path := pointerPath(se.JSONPointer)
	var ferr *fieldError
	switch {
	case errors.As(se.Err, &ferr):
		return ferr // the field types below name their field (atValue)
	case errors.Is(se.Err, json.ErrUnknownName):
		return unknownField(se.JSONPointer.LastToken(), known)
	case se.JSONKind != 0:
		return wrongKind(path, kindOf(se.JSONKind), "a JSON object")
	}
	return fieldErrorf(path, "is not valid: %v", se.Err)
}

// pointerPath turns a JSON Pointer into a field path: /plan/offsets/01 is
// plan.offsets["01"]. It is used only where every token is an object name
// (the strict decoders reject arrays before they are entered).
func pointerPath(p jsontext.Pointer) string {
	path := ""
	for name := range p.Tokens() {
		path = childPath(path, name)
	}
	return path
}

// shape is what scan learned of a well-formed document: its kind and, for
// an object, the members Decode classifies a record by.
type shape struct {
	kind                         kind
	schemaVersion, event, planID scalar
	mirrorTopic                  scalar // a mirror event's mirrorTopic
	pinID                        scalar // a pin event's pinId
	plan                         kind   // kind of the "plan" member, kindInvalid when absent
	planSchemaVersion            scalar // the plan object's schemaVersion
}

// scalar is one member of interest: present, its kind, and the text of a
// string (unescaped) or number (literal).
type scalar struct {
	present bool
	kind    kind
	text    string
}

// scan reads a whole document with jsontext and reports the first error
// that is not about a field's meaning: invalid UTF-8, emptiness, a syntax
// error, a duplicate name, nesting deeper than maxDepth, trailing content.
// Error paths name the container (or member) where reading failed.
func scan(data []byte) (shape, *fieldError) {
	if !utf8.Valid(data) {
		return shape{}, &fieldError{Reason: "is not valid UTF-8"}
	}
	if bytes.HasPrefix(data, utf8BOM) {
		return shape{}, &fieldError{Reason: "starts with a UTF-8 byte order mark (EF BB BF): expected JSON without one"}
	}
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowInvalidUTF8(true))
	var stack []scanFrame
	var sh shape
	sh.plan = kindInvalid
	// valuePath is where the next value goes: the member or the array item.
	valuePath := func() string {
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		if f.array {
			return f.path + "[" + strconv.Itoa(f.items) + "]"
		}
		return childPath(f.path, f.name)
	}
	// errPath is where an error reading the next token is reported: the
	// member whose value is due, else the container.
	errPath := func() string {
		if len(stack) == 0 {
			return ""
		}
		if f := stack[len(stack)-1]; f.named {
			return childPath(f.path, f.name)
		}
		return stack[len(stack)-1].path
	}
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF && len(stack) == 0 {
			return shape{}, &fieldError{Reason: "is empty: expected a JSON object"}
		}
		if err != nil {
			return shape{}, syntaxError(errPath(), err, int64(len(data)))
		}
		k := tok.Kind()
		if f := top(stack); f != nil && !f.array && !f.named && k == '"' {
			f.named, f.name = true, tok.String()
			continue
		}
		if k == '}' || k == ']' {
			stack = stack[:len(stack)-1]
		} else {
			if len(stack) == 0 {
				sh.kind = kindOf(k)
			}
			// Members Decode classifies by: schemaVersion, event and planId
			// of the envelope, and the plan's schemaVersion.
			if len(stack) == 1 && !stack[0].array {
				note(&sh, stack[0].name, k, tok)
			} else if len(stack) == 2 && !stack[1].array && stack[1].path == "plan" && stack[1].name == "schemaVersion" {
				sh.planSchemaVersion = scalar{present: true, kind: kindOf(k), text: scalarText(k, tok)}
			}
			if k == '{' || k == '[' {
				path := valuePath()
				if len(stack) > maxDepth {
					return shape{}, fieldErrorf(path, "nests deeper than %d levels", maxDepth)
				}
				stack = append(stack, scanFrame{path: path, array: k == '['})
				continue
			}
		}
		if len(stack) == 0 {
			break
		}
		if f := top(stack); f.array {
			f.items++
		} else {
			f.named = false
		}
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return shape{}, &fieldError{Reason: "has trailing content after the JSON value"}
	}
	return sh, nil
}

// scanFrame is one open container of scan.
type scanFrame struct {
	path  string
	array bool
	items int
	named bool   // a member name was read; its value comes next
	name  string // that member's name
}

func top(stack []scanFrame) *scanFrame {
	if len(stack) == 0 {
		return nil
	}
	return &stack[len(stack)-1]
}

func note(sh *shape, name string, k jsontext.Kind, tok jsontext.Token) {
	s := scalar{present: true, kind: kindOf(k), text: scalarText(k, tok)}
	switch name {
	case "schemaVersion":
		sh.schemaVersion = s
	case "event":
		sh.event = s
	case "planId":
		sh.planID = s
	case "mirrorTopic":
		sh.mirrorTopic = s
	case "pinId":
		sh.pinID = s
	case "plan":
		sh.plan = s.kind
	}
}

func scalarText(k jsontext.Kind, tok jsontext.Token) string {
	if k == '"' || k == '0' {
		return tok.String()
	}
	return ""
}

// utf8BOM is the byte order mark some editors put at the start of a file.
var utf8BOM = []byte("\xef\xbb\xbf")

// syntaxError words an error of the jsontext reader; size is where the
// input ends, for a document cut short.
func syntaxError(path string, err error, size int64) *fieldError {
	if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
		return fieldErrorf(path, "ends early (truncated?) at byte %d: expected the rest of the JSON value", size)
	}
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		return fieldErrorf(path, "is not valid JSON: %v", err)
	}
	if errors.Is(se.Err, jsontext.ErrDuplicateName) {
		return fieldErrorf(childPath(path, se.JSONPointer.LastToken()), "appears more than once: expected each key exactly once")
	}
	return fieldErrorf(path, "is not valid JSON: %v at byte %d", se.Err, se.ByteOffset)
}

// childPath names a field inside path. Plain names join with a dot; any other
// name (such as a partition key) is quoted in brackets: offsets["00"].
func childPath(path, name string) string {
	if isPlainName(name) {
		if path == "" {
			return name
		}
		return path + "." + name
	}
	return path + "[" + strconv.Quote(name) + "]"
}

func isPlainName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// readString reads a JSON string value (any other kind is an error naming
// expected), unescaped. A string without escapes is converted directly.
func readString(dec *jsontext.Decoder, expected string) (string, *fieldError) {
	v, err := dec.ReadValue()
	if err != nil {
		return "", fieldErrorf("", "is not valid JSON: %v", err)
	}
	if v.Kind() != '"' {
		return "", wrongKind("", kindOf(v.Kind()), expected)
	}
	return unquote(v), nil
}

// unquote unescapes a JSON string that the decoder has validated. An error
// of AppendUnquote can only be an unpaired surrogate, which it has written
// as U+FFFD (see strict).
func unquote(v []byte) string {
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner)
	}
	b, _ := jsontext.AppendUnquote(nil, v)
	return string(b)
}

// atValue gives an error of a field type the path of the value just read.
func atValue(dec *jsontext.Decoder, ferr *fieldError) *fieldError {
	return ferr.within(pointerPath(dec.StackPointer()))
}

// rule checks the value of a string field; "" is the field itself in the
// error's path.
type rule interface {
	check(s string) *fieldError
}

// str is a required JSON string field checked by R as it is decoded. set
// tells a present field from a missing one (the library has no "required").
type str[R rule] struct {
	v   string
	set bool
}

func (f *str[R]) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if f.set {
		return twice
	}
	f.set = true
	s, ferr := readString(dec, "a string")
	if ferr != nil {
		return atValue(dec, ferr)
	}
	var r R
	if ferr := r.check(s); ferr != nil {
		return atValue(dec, ferr)
	}
	f.v = s
	return nil
}

// anyText accepts any string.
type anyText struct{}

func (anyText) check(string) *fieldError { return nil }

// version is a schemaVersion field: exactly the literal 1.
type version struct{ set bool }

func (f *version) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
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
	if string(v) != "1" {
		return atValue(dec, fieldErrorf("", "is %s: this kcleanup understands only schema version %d", v, SchemaVersion))
	}
	return nil
}

// appendString appends s as a JSON string. Unlike encoding/json it does not
// escape <, > and & (a recovery point URL stays readable); invalid UTF-8 is
// written as U+FFFD, as encoding/json does.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			// Valid JSON, but not valid JavaScript; escape like encoding/json.
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
