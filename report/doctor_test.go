package report

import (
	"strings"
	"testing"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/protocol"
)

func subjects(fs []protocol.Finding) string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Severity)+" "+f.Subject)
	}
	return strings.Join(out, "; ")
}

// TestDiagnoseAMissingControlTopic: a missing control topic of a missing data topic is said
// once per topic, with the nearest names; of an existing one, with the command that creates it,
// or with the control topic that governs it elsewhere.
func TestDiagnoseAMissingControlTopic(t *testing.T) {
	gone := Diagnose(DoctorFacts{Asked: "actoin-state", ControlTopic: "actoin-state.kcleanup", ControlMissing: true,
		DataMissing: true, DataGone: true, Typos: []string{"did you mean action-state?"}})
	if got, want := subjects(gone), "block data topic actoin-state; block data topic actoin-state"; got != want {
		t.Fatalf("findings %q, want %q", got, want)
	}
	if gone[0].Hint != "did you mean action-state?" {
		t.Fatalf("hint %q, want the nearest name", gone[0].Hint)
	}
	fresh := Diagnose(DoctorFacts{Asked: "action-state", ControlTopic: "action-state.kcleanup", ControlMissing: true, DataRead: true,
		DataInfo: protocol.Topic{Name: "action-state", Configs: map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1"}}})
	if fresh[0].Hint != "create it: kcleanup init --topic action-state" || fresh[1].Severity != protocol.OK {
		t.Fatalf("findings %+v, want the create hint and a good data topic", fresh)
	}
	elsewhere := errors.WithHint(errors.New("topic action-state is governed by other.kcleanup"), "name it: --control-topic other.kcleanup")
	named := Diagnose(DoctorFacts{Asked: "action-state", ControlTopic: "action-state.kcleanup", ControlMissing: true, Elsewhere: elsewhere, DataGone: true})
	if named[0].Message != elsewhere.Error() || named[0].Hint != "name it: --control-topic other.kcleanup" {
		t.Fatalf("finding %+v, want the other control topic named", named[0])
	}
}

// TestDiagnoseWithoutADataTopic: a control topic that governs nothing yet leaves the data topic
// unchecked, and says how to check it.
func TestDiagnoseWithoutADataTopic(t *testing.T) {
	fs := Diagnose(DoctorFacts{ControlTopic: "c", NotControl: errors.New("c has 3 partitions")})
	if got, want := subjects(fs), "block control topic c; warn data topic"; got != want {
		t.Fatalf("findings %q, want %q", got, want)
	}
}
