package worker

import (
	"os"
	"syscall"
)

// Failpoint steps: KCLEANUP_FAILPOINT=<step> makes the process kill itself
// with SIGKILL when it reaches that step, so tests can crash an apply or a
// worker at the worst moments. Off unless set.
const (
	AfterCommitted     = "after-committed"
	AfterDeleting      = "after-deleting"
	AfterDeleteRecords = "after-delete-records"
)

// FailpointEnv is the environment variable that arms a failpoint.
const FailpointEnv = "KCLEANUP_FAILPOINT"

func failpoint(step string) {
	if os.Getenv(FailpointEnv) == step {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL cannot be caught; never return into the next step
	}
}
