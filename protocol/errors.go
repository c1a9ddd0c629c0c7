package protocol

import (
	"strings"

	"github.com/cockroachdb/errors"
)

// The classes of a run that ends without success. Package worker re-exports
// them; callers match them with errors.Is.
var (
	// ErrSuperseded: a concurrent commit raised the boundary above this plan.
	ErrSuperseded = errors.New("plan was superseded by a concurrent commit")
	// ErrBlocked: a condition that retrying will not fix until an operator
	// acts (topic recreated, policy changed, authorization denied, a plan
	// offset the topic does not have).
	ErrBlocked = errors.New("operation is blocked")
	// ErrRejected: the live cluster or the control topic refuses the plan.
	ErrRejected = errors.New("plan rejected")
	// ErrPinned: the plan is above a pinned recovery point (a kind of
	// ErrRejected: every error marked with it is marked ErrRejected too).
	ErrPinned = errors.New("plan is above a pinned recovery point")
	// ErrCommitRejected: a COMMITTED was written and the log rejected it (a
	// kind of ErrRejected). Unlike every other refusal a record was written,
	// so no message may say "nothing was committed".
	ErrCommitRejected = errors.New("a written COMMITTED was rejected")
	// ErrDegraded: the control topic holds records from a newer kcleanup.
	ErrDegraded = errors.New("projection is degraded")
)

// findingsError turns blocking findings into one error with a hint each,
// marked ErrRejected; nil when nothing blocks.
func findingsError(fs []Finding) error {
	block := Blocking(fs)
	if len(block) == 0 {
		return nil
	}
	var lines []string
	for _, f := range block {
		lines = append(lines, f.Subject+": "+f.Message)
	}
	err := errors.Mark(errors.Newf("%s", strings.Join(lines, "\n")), ErrRejected)
	for _, f := range block {
		if f.Hint != "" {
			err = errors.WithHint(err, f.Hint)
		}
	}
	return err
}

// FindingsError is findingsError for callers outside the protocol (init,
// doctor's control-topic checks).
func FindingsError(fs []Finding) error { return findingsError(fs) }
