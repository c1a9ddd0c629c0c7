package worker

import (
	"os"
	"syscall"

	"github.com/kcleanup/kcleanup/projector/flinkagents"
)

// Failpoint steps: KCLEANUP_FAILPOINT=<step> makes the process kill itself
// with SIGKILL when it reaches that step, so tests can crash an apply or a
// worker at the worst moments. KCLEANUP_FAILPOINT=<step>:stop makes it stop
// itself with SIGSTOP there instead (a frozen process, resumed by SIGCONT),
// to test what a paused owner does when it wakes up. Off unless set.
const (
	AfterCommitted     = "after-committed"
	AfterDeleting      = "after-deleting"
	AfterDeleteRecords = "after-delete-records"
	// The mirror's COMMITTED, and its APPLIED, committed to the mirror
	// topic (docs/flink-agents.md, "The mirror").
	AfterMirrorCommitted = "after-mirror-committed"
	AfterMirrorApplied   = "after-mirror-applied"
	// Inside a mirror transaction: the record written, not yet committed
	// (any mirror record; the second only the APPLIED one). The process
	// dies holding the transaction open: the mirror stays held until
	// the next kcleanup writer fences it (docs/design.md §11).
	InMirrorTransaction        = "in-mirror-transaction"
	InMirrorAppliedTransaction = "in-mirror-applied-transaction"
)

// Failpoints lists every failpoint step, in the order an operation reaches
// them, for help texts and the test that keeps docs/deploy.md complete.
func Failpoints() []string {
	return []string{AfterCommitted, AfterMirrorCommitted, InMirrorTransaction, InMirrorAppliedTransaction, AfterDeleting, AfterDeleteRecords, AfterMirrorApplied}
}

// mirrorFailpoint is the failpoint of a mirror record written with status.
func mirrorFailpoint(status flinkagents.Status) string {
	if status == flinkagents.Applied {
		return AfterMirrorApplied
	}
	return AfterMirrorCommitted
}

// FailpointEnv is the environment variable that arms a failpoint.
const FailpointEnv = "KCLEANUP_FAILPOINT"

// FailpointStop is the suffix that turns a failpoint's SIGKILL into SIGSTOP.
const FailpointStop = ":stop"

func failpoint(step string) {
	switch os.Getenv(FailpointEnv) {
	case step:
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL cannot be caught; never return into the next step
	case step + FailpointStop:
		// Returns when the process is continued (SIGCONT).
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	}
}
