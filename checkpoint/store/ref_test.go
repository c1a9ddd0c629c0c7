package store

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Ref
		err  string // a fragment of the error; "" for none
	}{
		{in: "/data/chk-1", want: Ref{Scheme: "file", Path: "/data/chk-1"}},
		{in: "/data/chk-1/", want: Ref{Scheme: "file", Path: "/data/chk-1"}},
		{in: "/data/./x/../chk-1//", want: Ref{Scheme: "file", Path: "/data/chk-1"}},
		{in: "chk-1", want: Ref{Scheme: "file", Path: "/cwd/chk-1"}},
		{in: "../up", want: Ref{Scheme: "file", Path: "/up"}},
		{in: "file:/tmp/sp", want: Ref{Scheme: "file", Path: "/tmp/sp"}},
		{in: "file:///tmp/sp", want: Ref{Scheme: "file", Path: "/tmp/sp"}},
		{in: "FILE:///tmp/sp", want: Ref{Scheme: "file", Path: "/tmp/sp"}},
		{in: "file://localhost/tmp/sp", want: Ref{Scheme: "file", Path: "/tmp/sp"}},
		{in: "file:///", want: Ref{Scheme: "file", Path: "/"}},
		{in: "file:///a%2F..%2Fetc", want: Ref{Scheme: "file", Path: "/a%2F..%2Fetc"}}, // no decoding: one name
		{in: "s3://bucket/a/chk-1", want: Ref{Scheme: "s3", Bucket: "bucket", Path: "a/chk-1"}},
		{in: "s3://bucket/a/chk-1/", want: Ref{Scheme: "s3", Bucket: "bucket", Path: "a/chk-1"}},
		{in: "s3a://bucket/a", want: Ref{Scheme: "s3", Bucket: "bucket", Path: "a"}},
		{in: "S3P://bucket/a", want: Ref{Scheme: "s3", Bucket: "bucket", Path: "a"}},
		{in: "s3://bucket", want: Ref{Scheme: "s3", Bucket: "bucket"}},
		{in: "s3://bucket/", want: Ref{Scheme: "s3", Bucket: "bucket"}},
		{in: "s3://bucket/a%2F..%2Fb", want: Ref{Scheme: "s3", Bucket: "bucket", Path: "a%2F..%2Fb"}},

		{in: "", err: "empty"},
		{in: "/data/chk\x00", err: "control character"},
		{in: "/data/chk\n1", err: "control character"},
		{in: "file://evil.example/etc", err: `names host "evil.example"`},
		{in: "file:relative", err: "relative file: URL"},
		{in: "file://", err: "names no file"},
		{in: "hdfs://nn/x", err: `scheme "hdfs"`},
		{in: "gs://b/x", err: `scheme "gs"`},
		{in: "http://127.0.0.1/x", err: `scheme "http"`},
		{in: "s3:/bucket/x", err: "not an S3 URL"},
		{in: "s3://", err: "names no bucket"},
		{in: "s3:///key", err: "names no bucket"},
		{in: "s3://user@bucket/x", err: "the character '@'"},
		{in: "s3://bucket:443/x", err: "the character ':'"},
		{in: "s3://bucket%2Fevil/x", err: "the character '%'"},
		{in: "s3://bu..cket/x", err: `has ".."`},
		{in: "s3://bucket/a/../x", err: `".." segment`},
		{in: "s3://bucket/../evil-bucket/x", err: `".." segment`},
		{in: "s3://bucket/./x", err: `"." segment`},
		{in: "s3://bucket/a//x", err: "empty segment"},
		{in: "s3://bucket//x", err: "empty segment"},
	} {
		got, err := ParseRef(tc.in, "/cwd")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseRef(%q) = %+v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	if _, err := ParseRef("chk-1", ""); err == nil || !strings.Contains(err.Error(), "relative") {
		t.Errorf("a relative path without a working directory: %v, want refused", err)
	}
}

func TestRootsAllow(t *testing.T) {
	roots, err := ParseRoots([]string{"/allowed/", "file:///srv/flink", "s3://allowed-bucket/savepoints", "s3a://whole-bucket"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path  string
		allow bool
	}{
		{"/allowed", true},
		{"/allowed/", true},
		{"/allowed/chk-1/_metadata", true},
		{"file:/allowed/chk-1", true},
		{"file:///allowed/chk-1", true},
		{"file://localhost/allowed/x", true},
		{"/srv/flink/job/chk-3", true},
		{"/allowed/x/../../etc/passwd", false},
		{"/allowed/../etc", false},
		{"/allowed-evil/x", false},
		{"/allowedx", false},
		{"/Allowed/x", false}, // case: refused, never guessed the same
		{"/", false},
		{"/etc/passwd", false},
		{"/srv/flinkx/chk-1", false},
		{"/srv", false},
		{"file:///allowed%2F..%2Fetc", false}, // one literal name, beside /allowed
		{"s3://allowed-bucket/savepoints/sp-1", true},
		{"s3a://allowed-bucket/savepoints/sp-1/_metadata", true},
		{"s3p://allowed-bucket/savepoints", true},
		{"s3://allowed-bucket/savepoints/", true},
		{"s3://allowed-bucket/savepointsX/sp-1", false},
		{"s3://allowed-bucket/other/sp-1", false},
		{"s3://allowed-bucket", false},
		{"s3://allowed-bucket-evil/savepoints/sp-1", false},
		{"s3://Allowed-Bucket/savepoints/sp-1", false},
		{"s3://whole-bucket", true},
		{"s3://whole-bucket/any/key", true},
		{"s3://whole-bucket-evil/any/key", false},
		{"s3://whole-bucke/any", false},
		{"/allowed-bucket/savepoints/sp-1", false}, // a local path is not the bucket
	} {
		r, err := ParseRef(tc.path, "/cwd")
		if err != nil {
			t.Errorf("ParseRef(%q): %v", tc.path, err)
			continue
		}
		if got := roots.Allow(r); got != tc.allow {
			t.Errorf("Allow(%q → %s) = %v, want %v", tc.path, r, got, tc.allow)
		}
	}
	// Paths the parser refuses never reach Allow: the refusal is the answer.
	for _, hostile := range []string{"s3://allowed-bucket/savepoints/../../etc", "s3://allowed-bucket/savepoints/./x", "s3://allowed-bucket@evil/savepoints", "file://evil/allowed/x"} {
		if r, err := ParseRef(hostile, "/cwd"); err == nil {
			t.Errorf("ParseRef(%q) = %s, want refused", hostile, r)
		}
	}
	if (Roots{}).Allow(Ref{Scheme: "file", Path: "/allowed"}) {
		t.Error("no roots allowed a path: want nothing allowed")
	}
	if _, err := ParseRoots([]string{"relative/dir"}); err == nil {
		t.Error("a relative root was accepted: want refused (a worker's working directory is no place to name)")
	}
}

// FuzzParseRef: any input is refused or normalised, never a panic; a normalised Ref prints
// as a path that parses back to itself, and a root holds itself and its children but not a
// sibling that extends its last name.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"/a/b", "a/../b", "file:/x", "file:///x/", "file://localhost/x", "s3://b/k", "s3a://b", "S3P://b/k/",
		"s3://b/a/../x", "s3://b//x", "s3://user@b/x", "/allowed%2F..%2Fetc", "file://evil/x", "hdfs://nn/x", "", "\x00", "s3://b/ü/检查点"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s, "/cwd")
		if err != nil {
			return
		}
		back, err := ParseRef(r.String(), "")
		if err != nil || back != r {
			t.Fatalf("ParseRef(%q) = %+v, which prints as %q and parses back to %+v, %v", s, r, r.String(), back, err)
		}
		if r.Scheme == "file" && (!filepath.IsAbs(r.Path) || filepath.Clean(r.Path) != r.Path) {
			t.Fatalf("ParseRef(%q): local path %q is not absolute and clean", s, r.Path)
		}
		roots := Roots{r}
		child := r
		child.Path = strings.TrimSuffix(r.Path, "/") + "/x"
		if r.Scheme == "s3" && r.Path == "" {
			child.Path = "x"
		}
		sibling := r
		sibling.Path += "x"
		if !roots.Allow(r) || !roots.Allow(child) || (r.Path != "" && r.Path != "/" && roots.Allow(sibling)) {
			t.Fatalf("root %s: allows itself %v, its child %s %v, the sibling %s %v", r, roots.Allow(r), child, roots.Allow(child), sibling, roots.Allow(sibling))
		}
	})
}
