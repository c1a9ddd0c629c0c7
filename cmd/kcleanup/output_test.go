package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestWriteJSON(t *testing.T) {
	type doc struct {
		Topic   string `json:"topic"`
		Offsets []int  `json:"offsets"`
	}
	type versioned struct {
		SchemaVersion int    `json:"schemaVersion"`
		Topic         string `json:"topic"`
	}
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"version spliced in first, field order kept", doc{Topic: "t", Offsets: []int{1, 2}},
			"{\n  \"schemaVersion\": 1,\n  \"topic\": \"t\",\n  \"offsets\": [\n    1,\n    2\n  ]\n}\n"},
		{"empty object", struct{}{}, "{\n  \"schemaVersion\": 1\n}\n"},
		{"own schemaVersion kept", versioned{SchemaVersion: 1, Topic: "t"}, "{\n  \"schemaVersion\": 1,\n  \"topic\": \"t\"\n}\n"},
		{"a newer own schemaVersion kept", versioned{SchemaVersion: 2, Topic: "t"}, "{\n  \"schemaVersion\": 2,\n  \"topic\": \"t\"\n}\n"},
		{"map", map[string]int{"b": 2, "a": 1}, "{\n  \"schemaVersion\": 1,\n  \"a\": 1,\n  \"b\": 2\n}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := writeJSON(&b, tc.v); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", b.String(), tc.want)
			}
		})
	}
}

func TestWriteJSONRejects(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{[]int{1}, "JSON output must be an object"},
		{"text", "JSON output must be an object"},
		{nil, "JSON output must be an object"},
		{struct {
			SchemaVersion int `json:"schemaVersion"`
		}{0}, "has schemaVersion 0, want 1 or more"},
		{map[string]any{"f": func() {}}, "encode JSON output"},
	} {
		var b bytes.Buffer
		err := writeJSON(&b, tc.v)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%T: error %v, want %q", tc.v, err, tc.want)
		}
		if b.Len() != 0 {
			t.Errorf("%T: wrote %q despite the error", tc.v, b.String())
		}
	}
}

func TestNewTableAligns(t *testing.T) {
	var b bytes.Buffer
	tw := newTable(&b)
	fmt.Fprintf(tw, "PARTITION\tOFFSET\n0\t100\n12\t150\n")
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "PARTITION  OFFSET\n0          100\n12         150\n"
	if b.String() != want {
		t.Fatalf("got\n%q\nwant\n%q", b.String(), want)
	}
}
