package worker

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
)

// TestOldBuildsDegradeOnPinEvents builds the fold and protocol of two
// older kcleanups from git (b3c7933, before the mirror events; ec7cd77,
// the last before pins) and folds a control log with this build's pin
// events in it: a PINNED, a COMMITTED above it (which this build rejects),
// an UNPINNED. Each old build must degrade (newer schema) and its protocol
// block the pending operation, so that it deletes nothing: never skip the
// pin and delete what it protects (docs/events.md, "Pin events").
func TestOldBuildsDegradeOnPinEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the fold and protocol of two old commits with go run (about 40 s); runs without -short")
	}
	plan := events.Plan{SourceRecoveryPoint: "chk-2", Topic: "action-state", TopicID: "AAECAwQFBgcICQoLDA0ODw", Offsets: events.Offsets{0: 150}}
	plan.PlanID = events.ComputePlanID(plan.SourceRecoveryPoint, plan.Topic, plan.TopicID, plan.Offsets)
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	pin := events.NewPin("sp-7", plan.Topic, plan.TopicID, events.Offsets{0: 100}, time.Time{}, "rollback point", at, "t")
	commit := events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Committed, PlanID: plan.PlanID, Plan: plan, At: at.Add(time.Second), Actor: "t", Boundary: plan.Offsets}
	var input strings.Builder
	for _, env := range []events.Envelope{pin, commit, events.NewUnpin(pin.Pin.PinID, "done", at.Add(2*time.Second), "t")} {
		if err := env.Validate(); err != nil {
			t.Fatal(err)
		}
		k, v := env.Encode()
		fmt.Fprintf(&input, "%s %s\n", hex.EncodeToString(k), hex.EncodeToString(v))
	}
	for _, old := range []struct{ commit, protocol string }{{"b3c7933", "worker/protocol"}, {"ec7cd77", "protocol"}} {
		t.Run(old.commit, func(t *testing.T) {
			dir := oldFold(t, old.commit, old.protocol)
			run := exec.Command("go", "run", "./oldfold")
			run.Dir = dir
			run.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
			run.Stdin = strings.NewReader(input.String())
			out, err := run.CombinedOutput()
			if err != nil {
				t.Fatalf("go run the fold of %s: %v\n%s", old.commit, err, out)
			}
			// The old build accepts the COMMITTED (it cannot know the pin), but
			// it is degraded, and its worker blocks instead of deleting.
			want := "0 rejected newer-schema\n1 accepted \n2 rejected newer-schema\ndegraded true pending 1\nfinish blocked\n"
			if string(out) != want {
				t.Fatalf("the fold of %s:\n%s\nwant:\n%s", old.commit, out, want)
			}
		})
	}
}

// oldFold extracts events, fsm, projector and the protocol package of
// commit from git into a temporary module with a main that folds
// "<hex key> <hex value>" lines and prints each verdict, whether it is
// degraded, and the step its worker would take for the pending operation.
func oldFold(t *testing.T, commit, protocolPath string) string {
	t.Helper()
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v (this test reads commit %s from the repository's history)", err, commit)
	}
	dir := t.TempDir()
	archive := exec.Command("git", "-C", strings.TrimSpace(string(root)), "archive", "--format=tar", commit, "go.mod", "go.sum", "events", "fsm", "projector", protocolPath)
	var tarball bytes.Buffer
	archive.Stdout, archive.Stderr = &tarball, os.Stderr
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v (a shallow clone lacks it: git fetch --unshallow)", commit, err)
	}
	untar := exec.Command("tar", "-x", "-C", dir)
	untar.Stdin = &tarball
	if out, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	if err := os.MkdirAll(filepath.Join(dir, "oldfold"), 0o755); err != nil {
		t.Fatal(err)
	}
	main := `package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/` + protocolPath + `"
)

func main() {
	s := projector.New()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	for off := int64(0); in.Scan(); off++ {
		k, v, _ := strings.Cut(in.Text(), " ")
		key, _ := hex.DecodeString(k)
		value, _ := hex.DecodeString(v)
		verdict := s.Step(projector.Record{Offset: off, Key: key, Value: value})
		fmt.Printf("%d %s %s\n", off, verdict.Outcome, verdict.Reason)
	}
	degraded, _ := s.Degraded()
	fmt.Printf("degraded %v pending %d\n", degraded, len(s.Pending()))
	for _, op := range s.Pending() {
		run := protocol.NewFinish(op.PlanID, protocol.Config{ControlTopic: "ctl"})
		step := run.Next(s, protocol.Report{}) // CatchUp
		step = run.Next(s, protocol.Report{})
		fmt.Printf("finish %s\n", step.Kind)
	}
}
`
	if err := os.WriteFile(filepath.Join(dir, "oldfold", "main.go"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
