package clientconfig

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/cockroachdb/errors"
)

// property is one key/value pair of a Java properties file, with the (1-based) physical line
// where its logical line starts, for error messages.
type property struct {
	key, value string
	line       int
}

// parseProperties reads text in the format of java.util.Properties.load, which is what Kafka's
// tools read for --command-config; name is the file's name, for error messages:
//
//   - a line whose first non-blank character is '#' or '!' is a comment; blank lines are skipped;
//   - leading blanks (space, tab, form feed) are ignored;
//   - the key ends at the first unescaped '=', ':' or blank; blanks around the separator are
//     skipped, so "k=v", "k: v" and "k v" are the same;
//   - a line ending in an odd number of backslashes continues on the next line, whose leading
//     blanks are dropped (a continued line is never a comment);
//   - escapes: \t \n \r \f, \uXXXX (UTF-16, surrogate pairs joined), and backslash before any
//     other character stands for that character (\\ \= \: \# \! and "\ ").
//
// Values are returned exactly, trailing blanks included; Kafka trims them when it reads a
// setting, and so does parseCommandConfig. Unlike Java, which reads ISO-8859-1, the text must be
// UTF-8: an invalid byte sequence is an error, not a silent mojibake. A malformed \u escape or a
// lone UTF-16 surrogate is an error (Java throws on the first and keeps the second).
func parseProperties(name, text string) ([]property, error) {
	if !utf8.ValidString(text) {
		return nil, errors.Newf("%s:%d: not valid UTF-8", name, invalidUTF8Line(text))
	}
	lines := splitPhysicalLines(text)
	var props []property
	for i := 0; i < len(lines); {
		start := i
		logical := strings.TrimLeft(lines[i], propBlanks)
		i++
		if logical == "" || logical[0] == '#' || logical[0] == '!' {
			continue
		}
		for endsInOddBackslashes(logical) {
			logical = logical[:len(logical)-1]
			if i == len(lines) {
				break // a continuation at the end of the text continues with nothing
			}
			logical += strings.TrimLeft(lines[i], propBlanks)
			i++
		}
		rawKey, rawValue := splitKeyValue(logical)
		key, err := unescapeProperty(rawKey)
		if err != nil {
			return nil, errors.Wrapf(err, "%s:%d", name, start+1)
		}
		value, err := unescapeProperty(rawValue)
		if err != nil {
			return nil, errors.Wrapf(err, "%s:%d: value of %s", name, start+1, key)
		}
		props = append(props, property{key: key, value: value, line: start + 1})
	}
	return props, nil
}

// propBlanks are the characters java.util.Properties treats as white space.
const propBlanks = " \t\f"

// splitPhysicalLines splits on "\n", "\r" or "\r\n", as Java's line reader does.
func splitPhysicalLines(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	return strings.Split(text, "\n")
}

func endsInOddBackslashes(s string) bool {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n%2 == 1
}

// splitKeyValue splits a logical line (still escaped) into key and value.
func splitKeyValue(s string) (key, value string) {
	end := len(s) // end of the key
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' {
			i++ // the escaped character belongs to the key
			continue
		}
		if c == '=' || c == ':' || strings.IndexByte(propBlanks, c) >= 0 {
			end = i
			break
		}
	}
	key, rest := s[:end], s[end:]
	rest = strings.TrimLeft(rest, propBlanks)
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], propBlanks)
	}
	return key, rest
}

// unescapeProperty resolves the escapes of a key or value.
func unescapeProperty(s string) (string, error) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(s) {
			break // a lone trailing backslash (a continuation at end of text) stands for nothing
		}
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			r, n, err := decodeUnicodeEscape(s[i-1:])
			if err != nil {
				return "", err
			}
			b.WriteRune(r)
			i += n - 2 // i is at 'u', one past the escape's first byte; the loop adds one more
		default:
			// Any other escaped character stands for itself; copy the whole UTF-8 sequence.
			_, size := utf8.DecodeRuneInString(s[i:])
			b.WriteString(s[i : i+size])
			i += size - 1
		}
	}
	return b.String(), nil
}

// decodeUnicodeEscape decodes "\uXXXX" at the start of s, joining a surrogate pair written as
// two escapes. It returns the rune and the number of bytes consumed.
func decodeUnicodeEscape(s string) (rune, int, error) {
	hi, ok := hex4(s)
	if !ok {
		return 0, 0, errors.Newf(`malformed \uXXXX escape %q`, truncate(s, 6))
	}
	r := rune(hi)
	if !utf16.IsSurrogate(r) {
		return r, 6, nil
	}
	if lo, ok := hex4(s[6:]); ok && r < 0xDC00 {
		if pair := utf16.DecodeRune(r, rune(lo)); pair != utf8.RuneError {
			return pair, 12, nil
		}
	}
	return 0, 0, errors.Newf(`\u escape %q is half of a UTF-16 surrogate pair without its other half`, truncate(s, 6))
}

// hex4 parses `\uXXXX` (exactly four hex digits) at the start of s.
func hex4(s string) (uint16, bool) {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return 0, false
	}
	var v uint16
	for _, c := range []byte(s[2:6]) {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | uint16(d)
	}
	return v, true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// invalidUTF8Line returns the 1-based line of the first invalid UTF-8 sequence in s.
func invalidUTF8Line(s string) int {
	line := 1
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return line
		}
		if s[i] == '\n' || (s[i] == '\r' && (i+1 == len(s) || s[i+1] != '\n')) {
			line++
		}
		i += size
	}
	return line
}
