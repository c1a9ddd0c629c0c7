package httpauth

import (
	"strings"
	"testing"
)

func TestParseTokens(t *testing.T) {
	good := "# comment\n\nabcdefghijklmnop,alice\n  qrstuvwxyz012345,bob,1002,\"ops,admins\"\n"
	tokens, err := ParseTokens([]byte(good))
	if err != nil || tokens["abcdefghijklmnop"] != "alice" || tokens["qrstuvwxyz012345"] != "bob" || len(tokens) != 2 {
		t.Fatalf("%v %v", tokens, err)
	}
	for name, c := range map[string]struct{ file, want string }{
		"empty":          {"", "names no token"},
		"only a comment": {"# nothing\n", "names no token"},
		"no user":        {"abcdefghijklmnop\n", "not \"token,user\""},
		"blank user":     {"abcdefghijklmnop, \n", "names no user"},
		"short token":    {"short,alice\n", "shorter than 16"},
		"space in token": {"abcdefgh ijklmnop,alice\n", "whitespace"},
		"repeated token": {"abcdefghijklmnop,alice\nabcdefghijklmnop,bob\n", "repeats a token"},
		"bad quoting":    {"\"abcdefghijklmnop,alice\n", "parse the token file"},
	} {
		if _, err := ParseTokens([]byte(c.file)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want an error with %q, got %v", name, c.want, err)
		}
	}
}

func TestConfigCheck(t *testing.T) {
	for name, c := range map[string]struct {
		cfg  Config
		want string
	}{
		"cert without key":     {Config{CertFile: "c"}, "go together"},
		"client CA over HTTP":  {Config{ClientCAFile: "ca"}, "needs HTTPS"},
		"protect reads, alone": {Config{ProtectReads: true}, "needs a way"},
	} {
		if err := c.cfg.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want %q, got %v", name, c.want, err)
		}
	}
	if err := (Config{TokenFile: "t", ProtectReads: true}).Check(); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{TokenFile: "/nonexistent/tokens"}); err == nil || !strings.Contains(err.Error(), "--http-token-file") {
		t.Fatalf("a missing token file: %v", err)
	}
	var nobody *Authenticator
	if _, err := nobody.Caller(nil); err != ErrNotConfigured {
		t.Fatalf("nil authenticator: %v", err)
	}
}
