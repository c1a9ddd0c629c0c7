package main

import (
	"strings"
	"testing"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/protocol"
)

// TestPlanErrorNeverSaysNothingWasCommittedOfAWrittenCommit: a COMMITTED that was written and
// that the log rejected (a pin landed between apply's PLANNED and its COMMITTED,
// protocol/testdata/pins) is not worded "nothing was committed or deleted" (issue 35 item 5);
// a refusal before anything was committed still is.
func TestPlanErrorNeverSaysNothingWasCommittedOfAWrittenCommit(t *testing.T) {
	g := globalOptions{bootstrapServers: []string{"b:9092"}}
	written := errors.Mark(errors.Mark(errors.New("COMMITTED for plan d was written at control offset 10 and rejected by the log"), protocol.ErrCommitRejected), protocol.ErrRejected)
	if hints := strings.Join(errors.GetAllHints(planError(g, written)), "\n"); strings.Contains(hints, "nothing was committed") {
		t.Errorf("a written, rejected COMMITTED got the hint %q", hints)
	}
	refused := errors.Mark(errors.New("plan d is above pin s3"), protocol.ErrRejected)
	if hints := strings.Join(errors.GetAllHints(planError(g, refused)), "\n"); !strings.Contains(hints, "nothing was committed or deleted") {
		t.Errorf("a refusal before writing lacks 'nothing was committed or deleted': %q", hints)
	}
}
