package clientconfig

import (
	"strings"
	"unicode/utf8"

	"github.com/cockroachdb/errors"
)

// jaasLogin is the one login module of a client's sasl.jaas.config, e.g.
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";
type jaasLogin struct {
	module  string            // fully qualified class name
	flag    string            // control flag, lower case: required, requisite, sufficient, optional
	options map[string]string // never printed: it holds the password
}

// parseJAAS parses a sasl.jaas.config value the way Kafka's JaasConfig does (a
// java.io.StreamTokenizer): a module class name, a control flag, then key=value options and a
// terminating ';'. Values are words or quoted strings ("..." or '...') with backslash escapes;
// // and /* */ comments are skipped. A client config holds exactly one module. Errors never
// quote option values.
func parseJAAS(s string) (jaasLogin, error) {
	t := jaasTokenizer{s: s}
	var logins []jaasLogin
	for {
		tok, err := t.next()
		if err != nil {
			return jaasLogin{}, err
		}
		if tok.kind == tokEOF {
			break
		}
		if tok.kind != tokWord {
			return jaasLogin{}, errors.Newf("expected a login module class name, found %s", tok.describe())
		}
		l, err := parseJAASEntry(&t, tok.text)
		if err != nil {
			return jaasLogin{}, err
		}
		logins = append(logins, l)
	}
	switch len(logins) {
	case 0:
		return jaasLogin{}, errors.New("no login module")
	case 1:
		return logins[0], nil
	default:
		return jaasLogin{}, errors.Newf("%d login modules, a client uses exactly one", len(logins))
	}
}

func parseJAASEntry(t *jaasTokenizer, module string) (jaasLogin, error) {
	l := jaasLogin{module: module, options: map[string]string{}}
	tok, err := t.next()
	if err != nil {
		return l, err
	}
	if tok.kind != tokWord {
		return l, errors.Newf("expected a control flag (required) after %s, found %s", module, tok.describe())
	}
	switch f := strings.ToLower(tok.text); f {
	case "required", "requisite", "sufficient", "optional":
		l.flag = f
	default:
		return l, errors.Newf("invalid control flag %q: use required", tok.text)
	}
	for {
		tok, err := t.next()
		if err != nil {
			return l, err
		}
		switch {
		case tok.kind == tokSymbol && tok.text == ";":
			return l, nil
		case tok.kind == tokEOF:
			return l, errors.New("login module entry not terminated by ';'")
		case tok.kind != tokWord:
			return l, errors.Newf("expected an option name or ';', found %s", tok.describe())
		}
		key := tok.text
		if eq, err := t.next(); err != nil {
			return l, err
		} else if eq.kind != tokSymbol || eq.text != "=" {
			return l, errors.Newf("option %s: expected '=', found %s", key, eq.describe())
		}
		val, err := t.next()
		if err != nil {
			return l, errors.Wrapf(err, "option %s", key)
		}
		if val.kind != tokWord && val.kind != tokQuoted {
			return l, errors.Newf("option %s: expected a value, found %s", key, val.describe())
		}
		if _, dup := l.options[key]; dup {
			return l, errors.Newf("option %s given twice", key)
		}
		l.options[key] = val.text
	}
}

type jaasTokenKind int

const (
	tokEOF jaasTokenKind = iota
	tokWord
	tokQuoted
	tokSymbol
)

type jaasToken struct {
	kind jaasTokenKind
	text string
}

// describe names a token for an error message without revealing a quoted value (a password).
func (t jaasToken) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of text"
	case tokQuoted:
		return "a quoted string"
	case tokSymbol:
		return "'" + t.text + "'"
	default:
		return "word " + truncate(t.text, 40)
	}
}

type jaasTokenizer struct {
	s   string
	pos int
}

// isJAASWordChar: letters, digits, '.', '-', '_', '$' and non-ASCII letters, as StreamTokenizer
// is configured by Kafka (class names like org.apache...PlainLoginModule are one word).
func isJAASWordChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '.' || r == '-' || r == '_' || r == '$' || r >= 0xA0
}

func (t *jaasTokenizer) next() (jaasToken, error) {
	if err := t.skipSpaceAndComments(); err != nil {
		return jaasToken{}, err
	}
	if t.pos >= len(t.s) {
		return jaasToken{kind: tokEOF}, nil
	}
	r, size := utf8.DecodeRuneInString(t.s[t.pos:])
	switch {
	case isJAASWordChar(r):
		start := t.pos
		for t.pos < len(t.s) {
			r, size := utf8.DecodeRuneInString(t.s[t.pos:])
			if !isJAASWordChar(r) {
				break
			}
			t.pos += size
		}
		return jaasToken{kind: tokWord, text: t.s[start:t.pos]}, nil
	case r == '"' || r == '\'':
		t.pos += size
		return t.quoted(byte(r))
	default:
		t.pos += size
		return jaasToken{kind: tokSymbol, text: string(r)}, nil
	}
}

func (t *jaasTokenizer) skipSpaceAndComments() error {
	for t.pos < len(t.s) {
		switch c := t.s[t.pos]; {
		case c <= ' ':
			t.pos++
		case strings.HasPrefix(t.s[t.pos:], "//"):
			if nl := strings.IndexAny(t.s[t.pos:], "\r\n"); nl >= 0 {
				t.pos += nl
			} else {
				t.pos = len(t.s)
			}
		case strings.HasPrefix(t.s[t.pos:], "/*"):
			end := strings.Index(t.s[t.pos+2:], "*/")
			if end < 0 {
				return errors.New("unterminated /* comment")
			}
			t.pos += 2 + end + 2
		default:
			return nil
		}
	}
	return nil
}

// quoted reads a quoted string after its opening quote. Escapes follow StreamTokenizer:
// \a \b \f \n \r \t \v, octal \0 to \377, and backslash before any other character stands
// for that character. Unlike StreamTokenizer, a string may not run past the end of a line.
func (t *jaasTokenizer) quoted(q byte) (jaasToken, error) {
	var b strings.Builder
	for t.pos < len(t.s) {
		c := t.s[t.pos]
		t.pos++
		switch c {
		case q:
			return jaasToken{kind: tokQuoted, text: b.String()}, nil
		case '\n', '\r':
			return jaasToken{}, errors.New("quoted string runs past the end of a line")
		case '\\':
			if t.pos == len(t.s) {
				return jaasToken{}, errors.New("unterminated quoted string")
			}
			e := t.s[t.pos]
			t.pos++
			switch e {
			case '0', '1', '2', '3', '4', '5', '6', '7':
				b.WriteRune(t.octal(e))
			case 'a':
				b.WriteByte(7)
			case 'v':
				b.WriteByte(0x0b)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return jaasToken{}, errors.New("unterminated quoted string")
}

// octal reads the rest of an octal escape whose first digit is first: up to three digits in
// all, the third only if first is 0-3, so that the value fits in a byte (StreamTokenizer's rule).
func (t *jaasTokenizer) octal(first byte) rune {
	v := rune(first - '0')
	for n := 1; n < 3 && t.pos < len(t.s); n++ {
		d := t.s[t.pos]
		if d < '0' || d > '7' || (n == 2 && first > '3') {
			break
		}
		v = v<<3 | rune(d-'0')
		t.pos++
	}
	return v
}
