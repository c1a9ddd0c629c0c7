package workertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/worker"
)

// PlanFile writes the plan of one marker (topic and ID, offsets) to a file of the test's and
// returns the plan and the file, for `kcleanup apply FILE`.
func PlanFile(t testing.TB, rp, topic, id string, offs events.Offsets) (events.Plan, string) {
	t.Helper()
	p := MustPlan(t, rp, topic, id, offs)
	file := filepath.Join(t.TempDir(), p.PlanID+".plan.json")
	if err := os.WriteFile(file, p.Encode(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, file
}

// MarkersFile writes a recovery point's marker to a file of the test's and returns the file,
// for `kcleanup validate --markers FILE`.
func MarkersFile(t testing.TB, topic, id string, offs events.Offsets) string {
	t.Helper()
	m := events.Marker{Topic: topic, TopicID: id, Offsets: offs}
	file := filepath.Join(t.TempDir(), fmt.Sprintf("markers-%s.json", offs))
	if err := os.WriteFile(file, m.Encode(), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// Operation reads a control topic afresh and returns a plan's state and the log start its
// APPLIED verified (zero values when the control topic does not hold it).
func Operation(t testing.TB, c *worker.Cluster, ctl, planID string) (fsm.State, events.Offsets) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	proj, err := c.Project(ctx, ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	op, _ := proj.State.Operation(planID)
	return op.State, op.LogStart
}

// CleanEnv is this process's environment without its KCLEANUP_ variables (a test's settings,
// never a child's) and its Go memory settings (a child's are the test's choice, in extra), and
// extra.
func CleanEnv(extra ...string) []string {
	return append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "KCLEANUP_") || strings.HasPrefix(kv, "GOMEMLIMIT=") || strings.HasPrefix(kv, "GOGC=")
	}), extra...)
}
