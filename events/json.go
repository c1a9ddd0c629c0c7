package events

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/cockroachdb/errors"
)

// This file reads JSON into a small ordered tree and writes JSON by hand.
// encoding/json's Unmarshal silently keeps the last of duplicate fields and
// accepts unknown ones; a plan decides which records are deleted forever, so
// we read token by token and reject both.

type kind int

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func (k kind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[k]
}

// node is one JSON value. Numbers keep their literal text (json.Number).
type node struct {
	kind    kind
	text    string // string value or number literal
	boolean bool
	items   []node
	members []member // in document order, names unique
}

type member struct {
	name  string
	value node
}

// maxDepth bounds nesting; our documents are at most four levels deep, and a
// newer schema is not going to need 64.
const maxDepth = 64

// parseJSON parses exactly one JSON value: valid UTF-8, no duplicate object
// fields at any depth, nothing but whitespace after it.
func parseJSON(data []byte) (node, *fieldError) {
	if !utf8.Valid(data) {
		return node{}, &fieldError{Reason: "is not valid UTF-8"}
	}
	if n, ok := parseFast(data); ok {
		return n, nil
	}
	return parseTokens(data)
}

// parseTokens is parseJSON with encoding/json's token reader: the reader of
// record, which words every error. parseFast reads valid input faster.
func parseTokens(data []byte) (node, *fieldError) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err == io.EOF {
		return node{}, &fieldError{Reason: "is empty: expected a JSON object"}
	}
	if err != nil {
		return node{}, syntaxError("", err)
	}
	n, ferr := parseValue(dec, tok, "", 0)
	if ferr != nil {
		return node{}, ferr
	}
	if _, err := dec.Token(); err != io.EOF {
		return node{}, &fieldError{Reason: "has trailing content after the JSON value"}
	}
	return n, nil
}

// parseValue parses the value that starts with tok. Paths are built only for
// containers (scalars cannot fail here), which keeps large offset maps cheap.
func parseValue(dec *json.Decoder, tok json.Token, path string, depth int) (node, *fieldError) {
	if n, ok := scalar(tok); ok {
		return n, nil
	}
	if depth > maxDepth {
		return node{}, fieldErrorf(path, "nests deeper than %d levels", maxDepth)
	}
	switch tok {
	case json.Delim('['):
		return parseArray(dec, path, depth)
	case json.Delim('{'):
		return parseObject(dec, path, depth)
	}
	return node{}, fieldErrorf(path, "is not valid JSON: unexpected %v", tok)
}

func scalar(tok json.Token) (node, bool) {
	switch t := tok.(type) {
	case nil:
		return node{kind: kindNull}, true
	case bool:
		return node{kind: kindBool, boolean: t}, true
	case json.Number:
		return node{kind: kindNumber, text: string(t)}, true
	case string:
		return node{kind: kindString, text: t}, true
	}
	return node{}, false
}

func parseArray(dec *json.Decoder, path string, depth int) (node, *fieldError) {
	n := node{kind: kindArray}
	for {
		tok, err := dec.Token()
		if err != nil {
			return node{}, syntaxError(path, err)
		}
		if tok == json.Delim(']') {
			return n, nil
		}
		item, ok := scalar(tok)
		if !ok {
			var ferr *fieldError
			item, ferr = parseValue(dec, tok, path+"["+strconv.Itoa(len(n.items))+"]", depth+1)
			if ferr != nil {
				return node{}, ferr
			}
		}
		n.items = append(n.items, item)
	}
}

func parseObject(dec *json.Decoder, path string, depth int) (node, *fieldError) {
	n := node{kind: kindObject}
	var seen map[string]struct{}
	for {
		tok, err := dec.Token()
		if err != nil {
			return node{}, syntaxError(path, err)
		}
		if tok == json.Delim('}') {
			return n, nil
		}
		name, ok := tok.(string)
		if !ok {
			return node{}, fieldErrorf(path, "is not valid JSON: unexpected %v", tok)
		}
		if seen == nil {
			seen = make(map[string]struct{})
		}
		if _, dup := seen[name]; dup {
			return node{}, fieldErrorf(childPath(path, name), "appears more than once: expected each key exactly once")
		}
		seen[name] = struct{}{}
		tok, err = dec.Token()
		if err != nil {
			return node{}, syntaxError(childPath(path, name), err)
		}
		value, ok := scalar(tok)
		if !ok {
			var ferr *fieldError
			value, ferr = parseValue(dec, tok, childPath(path, name), depth+1)
			if ferr != nil {
				return node{}, ferr
			}
		}
		n.members = append(n.members, member{name: name, value: value})
	}
}

func syntaxError(path string, err error) *fieldError {
	if err == io.EOF {
		return fieldErrorf(path, "is not valid JSON: unexpected end of input")
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fieldErrorf(path, "is not valid JSON: %v at byte %d", err, se.Offset)
	}
	return fieldErrorf(path, "is not valid JSON: %v", err)
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
