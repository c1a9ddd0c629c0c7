package flinkagents

import (
	"encoding/json"
	"testing"
)

// FuzzParseValue: ParseValue never panics; whatever it accepts is a plan
// whose ID verifies as Java computes it, that the fold accepts under its
// ID, and whose JSON Go's validator also accepts.
func FuzzParseValue(f *testing.F) {
	for _, s := range []string{
		`{"schemaVersion":1,"status":"COMMITTED","plan":{"schemaVersion":1,"planId":"x","sourceRecoveryPoint":"chk-1","topic":"t","topicId":"AAAAAAAAAAAAAAAAAAAAAQ","offsets":{"0":100}}}`,
		`{"schemaVersion":1,"status":"APPLIED","plan":{"schemaVersion":1,"planId":"1644903c5867016314f367efe6722dbc4fc865ea3bc23c143972839f70b7751f","sourceRecoveryPoint":"chk-\ud800-7","topic":"action-state","topicId":"AAAAAAAAAAAAAAAAAAAAAQ","offsets":{"0":100}}}`,
		`{"schemaVersion":1,"status":"COMMITTED","plan":{"schemaVersion":1,"planId":"e2a9c6e9453bf2fde536c2640502c6aa38b7d9ac730cfcbcf54d08bab62c8fe1","sourceRecoveryPoint":"chk\n7\u0001","topic":"action-state","topicId":"AAAAAAAAAAAAAAAAAAAAAQ","offsets":{"0":100,"1":-0}}}`,
		`{"a":[1,2,{"b":null}],"c":true}`, `-0`, `"\ud83d\ude00"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		st, p, err := ParseValue(value)
		if err != nil {
			if err.Reason != ReasonMalformed && err.Reason != ReasonUnsupported {
				t.Fatalf("ParseValue gave reason %s", err.Reason)
			}
			return
		}
		if st != Committed && st != Applied {
			t.Fatalf("status %q", st)
		}
		if ComputePlanID(p.SourceRecoveryPoint, p.Topic, p.TopicID, p.Offsets) != p.PlanID || len(p.Offsets) == 0 {
			t.Fatalf("accepted a plan whose ID does not verify: %+v", p)
		}
		if !json.Valid(value) {
			t.Fatalf("accepted JSON that Go's validator refuses: %q", value)
		}
		fo := New()
		if ferr := fo.Step(Record{Offset: 0, Key: []byte(p.PlanID), Value: value}); ferr != nil {
			t.Fatalf("fold refused an accepted value: %v", ferr)
		}
		if b, berr := fo.Effective(); berr != nil || !b.Equal(p.Offsets) {
			t.Fatalf("effective boundary %v (%v), want the plan's %v", b, berr, p.Offsets)
		}
	})
}
