package flinkagents

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// A hand-written JSON reader, because the job reads with Jackson into Java
// strings (UTF-16) and no Go JSON library keeps what that means: a \ud800
// escape is a lone surrogate the job keeps (encoding/json and jsontext both
// turn it into U+FFFD), and "-0" is an integer. Strings come out as WTF-8
// (UTF-8 that may also encode lone surrogates), so two strings are equal
// exactly when Java's String.equals says so. The grammar is RFC 8259's,
// which is what Jackson accepts with its default features: no comments, no
// leading zeros, no single quotes, only space, tab, CR and LF as whitespace,
// no unescaped control characters in strings. Duplicate names are errors
// (the job enables STRICT_DUPLICATE_DETECTION).

type kind int

const (
	kindObject kind = iota
	kindArray
	kindString
	kindNumber
	kindBool
	kindNull
)

func (k kind) String() string {
	return [...]string{"an object", "an array", "a string", "a number", "a boolean", "null"}[k]
}

type member struct {
	name  string // WTF-8
	value *node
}

type node struct {
	kind    kind
	text    string // string (WTF-8) or number (its literal)
	members []member
}

// get returns the member named name, or nil.
func (n *node) get(name string) *node {
	for _, m := range n.members {
		if m.name == name {
			return m.value
		}
	}
	return nil
}

// integral reports whether a number literal is what Jackson calls an
// integral number: no fraction and no exponent ("1.0" and "1e0" are not).
func (n *node) integral() bool {
	if n.kind != kindNumber {
		return false
	}
	for i := 0; i < len(n.text); i++ {
		if c := n.text[i]; c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// maxDepth bounds nesting; the job's records nest three deep, and Jackson
// itself stops at 1000.
const maxDepth = 64

type parser struct {
	data  []byte
	pos   int
	depth int
}

type syntaxError struct {
	pos int
	msg string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("invalid JSON at byte %d: %s", e.pos, e.msg) }

// parseJSON reads exactly one JSON value; anything but whitespace after it
// is an error (the job enables FAIL_ON_TRAILING_TOKENS). data must be valid
// UTF-8: the caller checks, because the job's StringDeserializer would have
// replaced invalid bytes with U+FFFD before Jackson saw them.
func parseJSON(data []byte) (*node, error) {
	p := &parser{data: data}
	p.space()
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.data) {
		return nil, p.fail("trailing content after the JSON value")
	}
	return n, nil
}

func (p *parser) fail(format string, args ...any) error {
	return &syntaxError{pos: p.pos, msg: fmt.Sprintf(format, args...)}
}

func (p *parser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value() (*node, error) {
	if p.pos >= len(p.data) {
		return nil, p.fail("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return &node{kind: kindString, text: s}, nil
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return p.literal("true", kindBool)
	case c == 'f':
		return p.literal("false", kindBool)
	case c == 'n':
		return p.literal("null", kindNull)
	default:
		return nil, p.fail("unexpected character %q", c)
	}
}

func (p *parser) literal(word string, k kind) (*node, error) {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return nil, p.fail("unexpected characters: expected %s", word)
	}
	p.pos += len(word)
	return &node{kind: k, text: word}, nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.fail("nested deeper than %d levels", maxDepth)
	}
	return nil
}

func (p *parser) object() (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.pos++ // {
	n := &node{kind: kindObject}
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return n, nil
	}
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.fail("expected a field name in double quotes")
		}
		at := p.pos
		name, err := p.str()
		if err != nil {
			return nil, err
		}
		for _, m := range n.members {
			if m.name == name {
				return nil, &syntaxError{pos: at, msg: fmt.Sprintf("duplicate field %s", quote(name))}
			}
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.fail("expected ':' after a field name")
		}
		p.pos++
		p.space()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.members = append(n.members, member{name: name, value: v})
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.fail("unexpected end of input in an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return n, nil
		default:
			return nil, p.fail("expected ',' or '}' in an object")
		}
	}
}

func (p *parser) array() (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.pos++ // [
	n := &node{kind: kindArray}
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return n, nil
	}
	for {
		p.space()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.members = append(n.members, member{value: v})
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.fail("unexpected end of input in an array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return n, nil
		default:
			return nil, p.fail("expected ',' or ']' in an array")
		}
	}
}

// number checks RFC 8259's grammar and keeps the literal.
func (p *parser) number() (*node, error) {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		s := p.pos
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
		}
		return p.pos - s
	}
	if p.pos < len(p.data) && p.data[p.pos] == '0' {
		p.pos++
		if p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			return nil, p.fail("leading zeros are not allowed in a number")
		}
	} else if digits() == 0 {
		return nil, p.fail("expected a digit")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return nil, p.fail("expected a digit after the decimal point")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.fail("expected a digit in the exponent")
		}
	}
	return &node{kind: kindNumber, text: string(p.data[start:p.pos])}, nil
}

// str reads a string literal into WTF-8: the UTF-16 code units Java would
// hold, with surrogate pairs joined and lone surrogates kept.
func (p *parser) str() (string, error) {
	p.pos++ // opening quote
	var units []uint16
	for {
		if p.pos >= len(p.data) {
			return "", p.fail("unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return wtf8(units), nil
		case c == '\\':
			if p.pos+1 >= len(p.data) {
				return "", p.fail("unterminated escape")
			}
			e := p.data[p.pos+1]
			p.pos += 2
			switch e {
			case '"', '\\', '/':
				units = append(units, uint16(e))
			case 'b':
				units = append(units, '\b')
			case 'f':
				units = append(units, '\f')
			case 'n':
				units = append(units, '\n')
			case 'r':
				units = append(units, '\r')
			case 't':
				units = append(units, '\t')
			case 'u':
				if p.pos+4 > len(p.data) {
					return "", p.fail("a \\u escape needs four hex digits")
				}
				var u uint16
				for _, h := range p.data[p.pos : p.pos+4] {
					var d byte
					switch {
					case h >= '0' && h <= '9':
						d = h - '0'
					case h >= 'a' && h <= 'f':
						d = h - 'a' + 10
					case h >= 'A' && h <= 'F':
						d = h - 'A' + 10
					default:
						return "", p.fail("a \\u escape needs four hex digits")
					}
					u = u<<4 | uint16(d)
				}
				p.pos += 4
				units = append(units, u)
			default:
				p.pos -= 2
				return "", p.fail("unknown escape \\%c", e)
			}
		case c < 0x20:
			return "", p.fail("unescaped control character 0x%02x in a string", c)
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", p.fail("invalid UTF-8")
			}
			p.pos += size
			units = utf16.AppendRune(units, r)
		}
	}
}
