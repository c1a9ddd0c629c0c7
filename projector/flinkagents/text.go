package flinkagents

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Strings here are WTF-8: UTF-8 that may also hold a lone UTF-16 surrogate
// (U+D800–U+DFFF) as its three-byte form ED A0–BF xx. Valid UTF-8 never has
// those bytes, so a plain Go string is its own WTF-8, and WTF-8 strings are
// equal exactly when the Java strings they stand for are.

// wtf8 joins surrogate pairs and keeps lone surrogates.
func wtf8(units []uint16) string {
	b := make([]byte, 0, len(units))
	for i := 0; i < len(units); i++ {
		u := units[i]
		if utf16.IsSurrogate(rune(u)) && u < 0xdc00 && i+1 < len(units) && units[i+1] >= 0xdc00 && units[i+1] <= 0xdfff {
			b = utf8.AppendRune(b, utf16.DecodeRune(rune(u), rune(units[i+1])))
			i++
			continue
		}
		if utf16.IsSurrogate(rune(u)) {
			b = append(b, 0xe0|byte(u>>12), 0x80|byte(u>>6)&0x3f, 0x80|byte(u)&0x3f)
			continue
		}
		b = utf8.AppendRune(b, rune(u))
	}
	return string(b)
}

// loneSurrogateAt reports whether s holds a lone surrogate at byte i.
func loneSurrogateAt(s string, i int) bool {
	return i+2 < len(s) && s[i] == 0xed && s[i+1] >= 0xa0 && s[i+1] <= 0xbf
}

// HasLoneSurrogate reports whether s (WTF-8) holds a lone surrogate, which
// no UTF-8 text can.
func HasLoneSurrogate(s string) bool {
	for i := 0; i < len(s); i++ {
		if loneSurrogateAt(s, i) {
			return true
		}
	}
	return false
}

// javaUTF8 is what Java's String.getBytes(UTF_8) makes of s: every lone
// surrogate becomes '?' (the encoder's replacement), the rest is unchanged.
// The job hashes a plan's ID over these bytes.
func javaUTF8(s string) string {
	if !HasLoneSurrogate(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if loneSurrogateAt(s, i) {
			b.WriteByte('?')
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// quote renders s (WTF-8) for people: Go-quoted, lone surrogates as \uXXXX.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		if loneSurrogateAt(s, i) {
			u := rune(s[i]&0x0f)<<12 | rune(s[i+1]&0x3f)<<6 | rune(s[i+2]&0x3f)
			fmt.Fprintf(&b, `\u%04x`, u)
			i += 3
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		q := strconv.QuoteRune(r)
		if r == '\'' {
			q = `'''`
		} else if r == '"' {
			q = `'\"'`
		}
		b.WriteString(q[1 : len(q)-1])
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

// Quote renders a plan's text field for people, as quote does.
func Quote(s string) string { return quote(s) }

// javaBlank is Java's value.trim().isEmpty(): trim() strips every char up
// to U+0020 from both ends, and nothing else (not U+00A0, not U+2028).
func javaBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] > ' ' {
			return false
		}
	}
	return true
}
