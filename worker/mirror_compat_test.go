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

// oldBuild is the last commit of main before the mirror events existed.
const oldBuild = "b3c7933"

// TestOldBuildDegradesOnMirrorEvents builds the fold of kcleanup at
// oldBuild (its events, fsm and projector packages, from git) and folds a
// control log with this build's mirror events in it: the old build must
// degrade (newer schema), and its protocol (worker/protocol at oldBuild)
// block the pending operation, so that it commits and deletes nothing, never
// skip the records and delete without the mirror (docs/events.md, "Mirror
// events").
func TestOldBuildDegradesOnMirrorEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the fold and protocol of commit " + oldBuild + " with go run (about 20 s); runs without -short")
	}
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v (this test reads commit %s from the repository's history)", err, oldBuild)
	}
	dir := t.TempDir()
	archive := exec.Command("git", "-C", strings.TrimSpace(string(root)), "archive", "--format=tar", oldBuild, "go.mod", "go.sum", "events", "fsm", "projector", "worker/protocol")
	var tarball bytes.Buffer
	archive.Stdout, archive.Stderr = &tarball, os.Stderr
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v (a shallow clone lacks it: git fetch --unshallow)", oldBuild, err)
	}
	untar := exec.Command("tar", "-x", "-C", dir)
	untar.Stdin = &tarball
	if out, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	if err := os.MkdirAll(filepath.Join(dir, "oldfold"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The old fold reads "<hex key> <hex value>" lines and prints each
	// verdict's outcome and reason, whether it is degraded, and the step
	// its worker would take to finish the pending operation.
	main := `package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/worker/protocol" // where the old build kept it
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
		// What the old worker would do next for the pending operation.
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

	plan := events.Plan{SourceRecoveryPoint: "chk-1", Topic: "action-state", TopicID: "AAECAwQFBgcICQoLDA0ODw", Offsets: events.Offsets{0: 10}}
	plan.PlanID = events.ComputePlanID(plan.SourceRecoveryPoint, plan.Topic, plan.TopicID, plan.Offsets)
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	commit := events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Committed, PlanID: plan.PlanID, Plan: plan, At: at, Actor: "t", Boundary: plan.Offsets}
	mirror := events.Mirror{Topic: "action-state.flink", TopicID: "AAECAwQFBgcICQoLDA0OEA", Reason: "test"}
	var input strings.Builder
	for _, env := range []events.Envelope{
		events.NewMirrorEvent(events.MirrorAttached, mirror, at, "t"),
		commit,
		events.NewMirrorEvent(events.MirrorDetached, mirror, at, "t"),
	} {
		if err := env.Validate(); err != nil {
			t.Fatal(err)
		}
		k, v := env.Encode()
		fmt.Fprintf(&input, "%s %s\n", hex.EncodeToString(k), hex.EncodeToString(v))
	}
	run := exec.Command("go", "run", "./oldfold")
	run.Dir = dir
	run.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	run.Stdin = strings.NewReader(input.String())
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("go run the fold of %s: %v\n%s", oldBuild, err, out)
	}
	want := "0 rejected newer-schema\n1 accepted \n2 rejected newer-schema\ndegraded true pending 1\nfinish blocked\n"
	if string(out) != want {
		t.Fatalf("the fold of %s:\n%s\nwant:\n%s", oldBuild, out, want)
	}
}
