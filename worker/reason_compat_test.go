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

// TestOldBuildDegradesOnReasons builds the fold of the last kcleanup before reasons (2d745ca)
// and folds a PLANNED without a reason (schema 1, as every writer before wrote it) and a
// COMMITTED with one (apply --reason, schema 5). The old build must read the COMMITTED as a
// newer schema and degrade (it commits and deletes nothing, its gate cannot tell), never
// reject it as malformed and fold a boundary below the one the log holds (docs/events.md,
// "Reasons").
func TestOldBuildDegradesOnReasons(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the fold of an old commit with go run (about 20 s); runs without -short")
	}
	plan := events.Plan{SourceRecoveryPoint: "chk-2", Topic: "action-state", TopicID: "AAECAwQFBgcICQoLDA0ODw", Offsets: events.Offsets{0: 150}}
	plan.PlanID = events.ComputePlanID(plan.SourceRecoveryPoint, plan.Topic, plan.TopicID, plan.Offsets)
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	planned := events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Planned, PlanID: plan.PlanID, Plan: plan, At: at, Actor: "ops/1"}
	committed := events.Envelope{SchemaVersion: events.ReasonSchemaVersion, Event: events.Committed, PlanID: plan.PlanID, Plan: plan,
		At: at.Add(time.Second), Actor: "ops/1", Reason: "reclaim disk", Boundary: plan.Offsets}
	var input strings.Builder
	for _, env := range []events.Envelope{planned, committed} {
		if err := env.Validate(); err != nil {
			t.Fatal(err)
		}
		k, v := env.Encode()
		fmt.Fprintf(&input, "%s %s\n", hex.EncodeToString(k), hex.EncodeToString(v))
	}
	const old = "2d745ca"
	dir := oldFold(t, old, "protocol")
	run := exec.Command("go", "run", "./oldfold")
	run.Dir = dir
	run.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	run.Stdin = strings.NewReader(input.String())
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("go run the fold of %s: %v\n%s", old, err, out)
	}
	if want := "0 accepted \n1 rejected newer-schema\ndegraded true pending 0\n"; string(out) != want {
		t.Fatalf("the fold of %s:\n%s\nwant:\n%s", old, out, want)
	}
}
