package main

import (
	"bytes"
	"encoding/json"
	"io"
	"text/tabwriter"

	"github.com/cockroachdb/errors"
)

// jsonSchemaVersion is the version of every JSON document kcleanup prints. It changes only when
// a document changes incompatibly; adding a field is compatible.
const jsonSchemaVersion = 1

// writeJSON writes v as one indented JSON document followed by a newline. v must encode as a
// JSON object; its first field is always "schemaVersion":1, so a program reading any kcleanup
// output can check the version first. If v has its own schemaVersion field (a document that
// changed incompatibly since version 1) it is kept.
// Lists are wrapped by the caller: {"operations":[...]}, never a bare array.
func writeJSON(w io.Writer, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return errors.Wrap(err, "encode JSON output")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return errors.AssertionFailedf("JSON output must be an object, got %T", v)
	}
	if sv, ok := fields["schemaVersion"]; ok {
		// A document that changed incompatibly carries its own, higher version (the verdict of
		// validate is gate.SchemaVersion).
		var n int
		if err := json.Unmarshal(sv, &n); err != nil || n < jsonSchemaVersion {
			return errors.AssertionFailedf("JSON output %T has schemaVersion %s, want %d or more", v, sv, jsonSchemaVersion)
		}
	} else {
		// Splice the version in as the first field, keeping the order of v's own fields.
		prefix := []byte(`{"schemaVersion":1`)
		if len(fields) > 0 {
			prefix = append(prefix, ',')
		}
		raw = append(prefix, bytes.TrimPrefix(raw, []byte("{"))...)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return errors.Wrap(err, "indent JSON output")
	}
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return errors.Wrap(err, "write output")
}

// newTable returns a tabwriter for table output: cells separated by '\t', rows by '\n'.
// The caller must Flush it.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}
