package worker

import (
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
)

// TestOldBuildsDegradeOnRetentionEvents folds, with the fold and protocol of
// 2d745ca (the last build before retention events), a control log holding a
// RETENTION_SET, the COMMITTED of a plan the policy made, and a
// RETENTION_CLEARED: the old build must degrade (newer schema) and block the
// pending operation rather than skip the policy's records, exactly as for
// pins (docs/events.md, "Retention events").
func TestOldBuildsDegradeOnRetentionEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the fold and protocol of an old commit with go run (about 20 s); runs without -short")
	}
	plan := events.Plan{SourceRecoveryPoint: "/c/job/chk-2", Topic: "action-state", TopicID: "AAECAwQFBgcICQoLDA0ODw", Offsets: events.Offsets{0: 150}}
	plan.PlanID = events.ComputePlanID(plan.SourceRecoveryPoint, plan.Topic, plan.TopicID, plan.Offsets)
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	set := events.NewRetentionSet(events.Retention{Topic: plan.Topic, Watch: []string{"/c"}, Every: time.Minute, Reason: "follow the job"}, at, "ops")
	commit := events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Committed, PlanID: plan.PlanID, Plan: plan, At: at.Add(time.Second), Actor: "retention@0 via w", Boundary: plan.Offsets}
	var input strings.Builder
	for _, env := range []events.Envelope{set, commit, events.NewRetentionClear(plan.Topic, "done", at.Add(2*time.Second), "ops")} {
		if err := env.Validate(); err != nil {
			t.Fatal(err)
		}
		k, v := env.Encode()
		fmt.Fprintf(&input, "%s %s\n", hex.EncodeToString(k), hex.EncodeToString(v))
	}
	dir := oldFold(t, "2d745ca", "protocol")
	run := exec.Command("go", "run", "./oldfold")
	run.Dir = dir
	run.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	run.Stdin = strings.NewReader(input.String())
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("go run the fold of 2d745ca: %v\n%s", err, out)
	}
	want := "0 rejected newer-schema\n1 accepted \n2 rejected newer-schema\ndegraded true pending 1\nfinish blocked\n"
	if string(out) != want {
		t.Fatalf("the fold of 2d745ca:\n%s\nwant:\n%s", out, want)
	}
}
