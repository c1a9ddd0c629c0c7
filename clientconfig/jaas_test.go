package clientconfig

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want jaasLogin
	}{
		{"plain", `org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="s3cret";`,
			jaasLogin{plainLoginModule, "required", map[string]string{"username": "alice", "password": "s3cret"}}},
		{"scram with token", `org.apache.kafka.common.security.scram.ScramLoginModule REQUIRED username="id" password="hmac" tokenauth="true";`,
			jaasLogin{scramLoginModule, "required", map[string]string{"username": "id", "password": "hmac", "tokenauth": "true"}}},
		{"unquoted words, spacing, other flag", "  m.M   optional\n\tusername = bob\tpassword=pa-ss_$w.rd ; ",
			jaasLogin{"m.M", "optional", map[string]string{"username": "bob", "password": "pa-ss_$w.rd"}}},
		{"single quotes", `m.M required username='a b' password='x"y';`,
			jaasLogin{"m.M", "required", map[string]string{"username": "a b", "password": `x"y`}}},
		{"escapes in quotes", `m.M required password="a\"b\\c\td\nq\x\101\7";`,
			jaasLogin{"m.M", "required", map[string]string{"password": "a\"b\\c\td\nqxA\a"}}},
		{"octal limits", `m.M required p="\400\0777";`,
			jaasLogin{"m.M", "required", map[string]string{"p": "\x200\x3f7"}}},
		{"separators inside quotes are text", `m.M required password="a;b=c//d/*e*/";`,
			jaasLogin{"m.M", "required", map[string]string{"password": "a;b=c//d/*e*/"}}},
		{"comments", "m.M /* flag next */ required // end of line\n username=u;",
			jaasLogin{"m.M", "required", map[string]string{"username": "u"}}},
		{"no options", `m.M sufficient;`, jaasLogin{"m.M", "sufficient", map[string]string{}}},
		{"non-ascii", `m.M requisite username="jürgen" password=pässwörd;`,
			jaasLogin{"m.M", "requisite", map[string]string{"username": "jürgen", "password": "pässwörd"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseJAAS(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestParseJAASErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "no login module"},
		{"  /* nothing */ ", "no login module"},
		{`m.M required; n.N required;`, "2 login modules, a client uses exactly one"},
		{`m.M required username="u"`, "not terminated by ';'"},
		{`m.M`, "expected a control flag (required) after m.M, found end of text"},
		{`m.M mandatory;`, `invalid control flag "mandatory"`},
		{`m.M required username "u";`, "option username: expected '=', found a quoted string"},
		{`m.M required username=;`, "option username: expected a value, found ';'"},
		{`m.M required username=u username=v;`, "option username given twice"},
		{`m.M required password="secret`, "unterminated quoted string"},
		{`m.M required password="sec` + "\n" + `ret";`, "quoted string runs past the end of a line"},
		{`m.M required password="x\`, "unterminated quoted string"},
		{`m.M required /* x`, "unterminated /* comment"},
		{`"m.M" required;`, "expected a login module class name, found a quoted string"},
		{`m.M required = x;`, "expected an option name or ';', found '='"},
	} {
		_, err := parseJAAS(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: error quotes the password: %v", tc.in, err)
		}
	}
}
