package events

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// parseFast is the fast path of parseJSON for input that is valid: it reads
// the same grammar byte by byte and builds the same tree, without
// encoding/json's token reader, which allocates for every token and spent
// nine tenths of a control-record fold (docs/benchmarks.md, B1 and B5).
//
// It never decides an error. On anything it does not accept (a syntax error,
// a duplicate field, nesting deeper than maxDepth) it returns ok = false and
// parseJSON reads the input again with the token reader, which finds the
// error and words it. So the two must agree only on valid input, which
// FuzzParseFast checks: whatever parseFast accepts, the token reader accepts
// with an identical tree, and the other way round. The input is valid UTF-8
// (parseJSON checks it first).
func parseFast(data []byte) (n node, ok bool) {
	p := fastParser{data: data}
	n, ok = p.value(0)
	if !ok {
		return node{}, false
	}
	p.skipSpace()
	return n, p.i == len(p.data)
}

type fastParser struct {
	data []byte
	i    int
}

func (p *fastParser) skipSpace() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value reads one value; depth is that of a container starting here, as in
// parseValue.
func (p *fastParser) value(depth int) (node, bool) {
	p.skipSpace()
	if p.i >= len(p.data) {
		return node{}, false
	}
	switch c := p.data[p.i]; {
	case c == '{':
		if depth > maxDepth {
			return node{}, false
		}
		return p.object(depth)
	case c == '[':
		if depth > maxDepth {
			return node{}, false
		}
		return p.array(depth)
	case c == '"':
		s, ok := p.str()
		return node{kind: kindString, text: s}, ok
	case c == 't':
		return node{kind: kindBool, boolean: true}, p.literal("true")
	case c == 'f':
		return node{kind: kindBool}, p.literal("false")
	case c == 'n':
		return node{kind: kindNull}, p.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		s, ok := p.number()
		return node{kind: kindNumber, text: s}, ok
	}
	return node{}, false
}

func (p *fastParser) literal(word string) bool {
	if len(p.data)-p.i < len(word) || string(p.data[p.i:p.i+len(word)]) != word {
		return false
	}
	p.i += len(word)
	return true
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? and returns
// its literal text, as json.Number keeps it.
func (p *fastParser) number() (string, bool) {
	start := p.i
	if p.peek() == '-' {
		p.i++
	}
	switch c := p.peek(); {
	case c == '0':
		p.i++
	case c >= '1' && c <= '9':
		p.digits()
	default:
		return "", false
	}
	if p.peek() == '.' {
		p.i++
		if !p.digits() {
			return "", false
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.i++
		if c := p.peek(); c == '+' || c == '-' {
			p.i++
		}
		if !p.digits() {
			return "", false
		}
	}
	return string(p.data[start:p.i]), true
}

// digits reads one or more decimal digits.
func (p *fastParser) digits() bool {
	start := p.i
	for c := p.peek(); c >= '0' && c <= '9'; c = p.peek() {
		p.i++
	}
	return p.i > start
}

// peek is the next byte, or 0 at the end (never valid where it is asked).
func (p *fastParser) peek() byte {
	if p.i < len(p.data) {
		return p.data[p.i]
	}
	return 0
}

// str reads a string and returns it unescaped exactly as encoding/json
// does, including its treatment of unpaired UTF-16 surrogates.
func (p *fastParser) str() (string, bool) {
	p.i++ // the opening quote
	start := p.i
	for p.i < len(p.data) {
		switch c := p.data[p.i]; {
		case c == '"':
			s := string(p.data[start:p.i])
			p.i++
			return s, true
		case c == '\\':
			return p.escapedStr(start)
		case c < 0x20:
			return "", false
		default:
			p.i++
		}
	}
	return "", false
}

// escapedStr finishes a string that holds escapes; start is its first byte.
func (p *fastParser) escapedStr(start int) (string, bool) {
	b := make([]byte, 0, p.i-start+16)
	b = append(b, p.data[start:p.i]...)
	for p.i < len(p.data) {
		c := p.data[p.i]
		switch {
		case c == '"':
			p.i++
			return string(b), true
		case c < 0x20:
			return "", false
		case c != '\\':
			b = append(b, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.data) {
			return "", false
		}
		e := p.data[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				// A valid pair becomes one rune; anything else after a
				// surrogate is left to be read on its own, and the
				// surrogate becomes U+FFFD (encoding/json's unquote).
				save := p.i
				if len(p.data)-p.i >= 2 && p.data[p.i] == '\\' && p.data[p.i+1] == 'u' {
					p.i += 2
					if r2, ok := p.hex4(); ok {
						if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
							b = utf8.AppendRune(b, dec)
							continue
						}
					}
				}
				p.i = save
				r = unicode.ReplacementChar
			}
			b = utf8.AppendRune(b, r)
		default:
			return "", false
		}
	}
	return "", false
}

// hex4 reads four hex digits.
func (p *fastParser) hex4() (rune, bool) {
	if len(p.data)-p.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.data[p.i : p.i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	p.i += 4
	return r, true
}

func (p *fastParser) array(depth int) (node, bool) {
	p.i++ // [
	n := node{kind: kindArray}
	p.skipSpace()
	if p.peek() == ']' {
		p.i++
		return n, true
	}
	for {
		item, ok := p.value(depth + 1)
		if !ok {
			return node{}, false
		}
		n.items = append(n.items, item)
		p.skipSpace()
		switch p.peek() {
		case ',':
			p.i++
		case ']':
			p.i++
			return n, true
		default:
			return node{}, false
		}
	}
}

// smallObject is the number of members up to which duplicates are found by
// comparing names; larger objects (offset maps) use a set.
const smallObject = 16

func (p *fastParser) object(depth int) (node, bool) {
	p.i++ // {
	n := node{kind: kindObject}
	p.skipSpace()
	if p.peek() == '}' {
		p.i++
		return n, true
	}
	var seen map[string]struct{}
	for {
		p.skipSpace()
		if p.peek() != '"' {
			return node{}, false
		}
		name, ok := p.str()
		if !ok {
			return node{}, false
		}
		if p.duplicate(&n, &seen, name) {
			return node{}, false // the token reader words the error
		}
		p.skipSpace()
		if p.peek() != ':' {
			return node{}, false
		}
		p.i++
		value, ok := p.value(depth + 1)
		if !ok {
			return node{}, false
		}
		if n.members == nil {
			// Most objects of a control record have up to eight members:
			// one allocation instead of four for the envelope and the plan.
			n.members = make([]member, 0, 8)
		}
		n.members = append(n.members, member{name: name, value: value})
		p.skipSpace()
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			return n, true
		default:
			return node{}, false
		}
	}
}

// duplicate reports whether an object already has a member called name.
func (p *fastParser) duplicate(n *node, seen *map[string]struct{}, name string) bool {
	if len(n.members) < smallObject {
		for _, m := range n.members {
			if m.name == name {
				return true
			}
		}
		return false
	}
	if *seen == nil {
		*seen = make(map[string]struct{}, 2*len(n.members))
		for _, m := range n.members {
			(*seen)[m.name] = struct{}{}
		}
	}
	if _, dup := (*seen)[name]; dup {
		return true
	}
	(*seen)[name] = struct{}{}
	return false
}
