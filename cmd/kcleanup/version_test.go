package main

import (
	"bytes"
	"runtime/debug"
	"testing"
)

func TestVersionFrom(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/kcleanup/kcleanup", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"},
			{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	for _, tc := range []struct {
		name   string
		linked string
		bi     *debug.BuildInfo
		ok     bool
		want   versionInfo
	}{
		{"build info", "", bi, true, versionInfo{"v0.3.0", "go1.26.0", "abc123", "2026-01-02T03:04:05Z", true}},
		{"link-time version wins", "v9.9.9", bi, true, versionInfo{"v9.9.9", "go1.26.0", "abc123", "2026-01-02T03:04:05Z", true}},
		{"development build", "", &debug.BuildInfo{GoVersion: "go1.26.0"}, true, versionInfo{Version: "(devel)", GoVersion: "go1.26.0"}},
		{"no build info", "", nil, false, versionInfo{Version: "unknown"}},
	} {
		if got := versionFrom(tc.linked, tc.bi, tc.ok); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestPrintVersion(t *testing.T) {
	v := versionInfo{"v0.3.0", "go1.26.0", "abc123", "2026-01-02T03:04:05Z", true}
	var table, js bytes.Buffer
	if err := printVersion(&table, outputTable, v); err != nil {
		t.Fatal(err)
	}
	wantTable := "version      v0.3.0\ngo           go1.26.0\ncommit       abc123 (modified)\ncommit time  2026-01-02T03:04:05Z\n"
	if table.String() != wantTable {
		t.Errorf("table:\n%q\nwant\n%q", table.String(), wantTable)
	}
	if err := printVersion(&js, outputJSON, v); err != nil {
		t.Fatal(err)
	}
	wantJSON := `{
  "schemaVersion": 1,
  "version": "v0.3.0",
  "goVersion": "go1.26.0",
  "commit": "abc123",
  "commitTime": "2026-01-02T03:04:05Z",
  "modified": true
}
`
	if js.String() != wantJSON {
		t.Errorf("json:\n%s\nwant\n%s", js.String(), wantJSON)
	}
}
