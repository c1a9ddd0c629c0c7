package clientconfig

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseProperties(t *testing.T) {
	type kv = property
	for _, tc := range []struct {
		name string
		text string
		want []kv
	}{
		{"equals", "a=1", []kv{{"a", "1", 1}}},
		{"colon", "a:1", []kv{{"a", "1", 1}}},
		{"space", "a 1", []kv{{"a", "1", 1}}},
		{"blanks around separator", "a \t = \f 1", []kv{{"a", "1", 1}}},
		{"colon then equals is a value", "a : =1", []kv{{"a", "=1", 1}}},
		{"separator after blank taken once", "a = = 1", []kv{{"a", "= 1", 1}}},
		{"leading whitespace", "   \t a=1", []kv{{"a", "1", 1}}},
		{"trailing blanks kept", "a=1  ", []kv{{"a", "1  ", 1}}},
		{"key only", "a", []kv{{"a", "", 1}}},
		{"key with empty value", "a=", []kv{{"a", "", 1}}},
		{"empty key", "=v", []kv{{"", "v", 1}}},
		{"comments and blank lines", "# c\n! c\n\n   \n  # indented comment\na=1\n", []kv{{"a", "1", 6}}},
		{"hash inside value", "a=1#2", []kv{{"a", "1#2", 1}}},
		{"CRLF and CR line ends", "a=1\r\nb=2\rc=3", []kv{{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3}}},
		{"continuation", "a=one \\\n    two\nb=3", []kv{{"a", "one two", 1}, {"b", "3", 3}}},
		{"continuation over several lines", "a=x\\\n y\\\n\tz", []kv{{"a", "xyz", 1}}},
		{"continued line is not a comment", "a=x\\\n #y", []kv{{"a", "x#y", 1}}},
		{"comment is not continued", "# c \\\na=1", []kv{{"a", "1", 2}}},
		{"even backslashes do not continue", "a=x\\\\\nb=2", []kv{{"a", "x\\", 1}, {"b", "2", 2}}},
		{"continuation at end of text", "a=x\\", []kv{{"a", "x", 1}}},
		{"escapes", `a=\t\n\r\f\\\=\:\#\!\ \q`, []kv{{"a", "\t\n\r\f\\=:#! q", 1}}},
		{"escaped separators in key", `my\=key\:x\ y=v`, []kv{{"my=key:x y", "v", 1}}},
		{"unicode escapes", `a=\u0041\u00e9\u20AC`, []kv{{"a", "Aé€", 1}}},
		{"surrogate pair", `a=\uD83D\uDE00`, []kv{{"a", "😀", 1}}},
		{"utf-8 text", "a=é€😀", []kv{{"a", "é€😀", 1}}},
		{"escaped non-ascii", `a=\é`, []kv{{"a", "é", 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProperties("f", tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParsePropertiesErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"a=1\nb=\\u12", `f:2: value of b: malformed \uXXXX escape "\\u12"`},
		{"a=\\uZZZZ", `f:1: value of a: malformed \uXXXX escape`},
		{"\n\\u00=1", `f:2: malformed \uXXXX escape`},
		{"a=\\uD83D", `f:1: value of a: \u escape "\\uD83D" is half of a UTF-16 surrogate pair`},
		{"a=\\uDE00\\uD83D", `half of a UTF-16 surrogate pair`},
		{"a=1\nb=\xff", "f:2: not valid UTF-8"},
		{"a=1\r\n\r\nb=\xc3", "f:3: not valid UTF-8"},
	} {
		_, err := parseProperties("f", tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.text, err, tc.want)
		}
	}
}

// escapeProperty writes s the way java.util.Properties.store does, escaping separators,
// comment characters, blanks and control characters. isKey escapes every space; a value only
// its leading one.
func escapeProperty(s string, isKey bool) string {
	var b strings.Builder
	for i, r := range s {
		switch r {
		case '\\', '=', ':', '#', '!':
			b.WriteByte('\\')
			b.WriteRune(r)
		case ' ':
			if isKey || i == 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(' ')
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

// FuzzPropertiesRoundTrip: any key and value, written as Properties.store writes them, read back
// unchanged. This checks the escape and separator rules against an independent writer.
func FuzzPropertiesRoundTrip(f *testing.F) {
	f.Add("a", "b")
	f.Add("sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`)
	f.Add("k ey", " leading space")
	f.Add("#", "!")
	f.Add("a=b:c", "\\\n\t\r\f")
	f.Add("", "")
	f.Add("x", "é€😀\u0000")
	f.Fuzz(func(t *testing.T, key, value string) {
		if !utf8.ValidString(key) || !utf8.ValidString(value) {
			t.Skip()
		}
		text := "# written by the test\n" + escapeProperty(key, true) + "=" + escapeProperty(value, false) + "\n"
		got, err := parseProperties("f", text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if len(got) != 1 || got[0].key != key || got[0].value != value || got[0].line != 2 {
			t.Fatalf("%q read back as %+v", text, got)
		}
	})
}
