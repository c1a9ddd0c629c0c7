package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/flinkgentest"
)

// plannable says whether Flink's State Processor API read markers that the marker rules of
// plan accept (one operator's, versioned, valid Kafka topic names): what plan --checkpoint
// must turn into exactly the plan events.BuildPlan makes of them.
func plannable(op flinkgentest.Operator) bool {
	if len(op.Markers) == 0 || len(op.Legacy) > 0 {
		return false
	}
	for _, m := range op.Markers {
		if m.Validate() != nil {
			return false
		}
	}
	return true
}

// TestPlanFromRealCheckpoints: for every checkpoint and savepoint real Flink jobs wrote, plan
// --checkpoint PATH writes the plan that Flink Agents' tool would for the same invocation: the
// recovery point is PATH exactly as given, the offsets the per-partition minimum over what
// Flink's own State Processor API reads, and so the same plan ID. The markers command's JSON
// gives the same plan through --markers, without the completeness warning.
func TestPlanFromRealCheckpoints(t *testing.T) {
	planned := 0
	for _, c := range flinkgentest.Cases(t) {
		for _, op := range c.Operators {
			t.Run(c.Name+"/"+op.UID, func(t *testing.T) {
				args := []string{"plan", "--no-preview", "--checkpoint", c.Path}
				if len(c.Operators) > 1 {
					args = append(args, "--operator-uid", op.UID)
				}
				code, stdout, stderr := opRunWithStdin(t, "", args...)
				if !plannable(op) {
					if code != exitError || stdout != "" {
						t.Fatalf("exit %d (want 1, no plan) for elements plan refuses:\n%s%s", code, stdout, stderr)
					}
					return
				}
				if code != exitOK || stderr != "" {
					t.Fatalf("exit %d\n%s", code, stderr)
				}
				got := opParsePlan(t, stdout)
				want, err := events.BuildPlan(c.Path, op.Markers)
				if err != nil {
					t.Fatal(err)
				}
				if got.PlanID != want.PlanID || got.SourceRecoveryPoint != c.Path {
					t.Fatalf("plan %s (recovery point %q), want %s from what Flink read:\n%s", got.PlanID, got.SourceRecoveryPoint, want.PlanID, stdout)
				}
				planned++

				// kcleanup markers -o json, then plan --markers: the same plan, checked complete.
				margs := append([]string{"markers", "-o", "json"}, args[2:]...)
				code, mjson, stderr := opRunWithStdin(t, "", margs...)
				if code != exitOK {
					t.Fatalf("markers: exit %d\n%s", code, stderr)
				}
				file := filepath.Join(t.TempDir(), "markers.json")
				if err := os.WriteFile(file, []byte(mjson), 0o644); err != nil {
					t.Fatal(err)
				}
				code, stdout, stderr = opRunWithStdin(t, "", "plan", "--no-preview", "--markers", file, "--recovery-point", c.Path)
				if code != exitOK || stderr != "" {
					t.Fatalf("plan --markers of markers' JSON: exit %d\n%s", code, stderr)
				}
				if p := opParsePlan(t, stdout); p.PlanID != want.PlanID {
					t.Fatalf("plan --markers gave %s, --checkpoint %s", p.PlanID, want.PlanID)
				}
				// Its table names the checkpoint, the operator and every subtask.
				code, table, stderr := opRunWithStdin(t, "", append([]string{"markers"}, args[2:]...)...)
				if code != exitOK || !strings.Contains(table, op.UIDHash) || !strings.Contains(table, "minimum") {
					t.Fatalf("markers table: exit %d\n%s%s", code, table, stderr)
				}
			})
		}
	}
	if planned == 0 {
		t.Fatal("no case gave a plan: the generator wrote nothing plan can read")
	}
}

// TestCheckpointSpellings: the recovery point is PATH as given, so two spellings of one
// savepoint (its directory, its _metadata) give two plan IDs, as with Flink Agents' tool
// (docs/operator-guide.md says so); --recovery-point names it once for both.
func TestCheckpointSpellings(t *testing.T) {
	c, op := firstPlannable(t)
	ids := map[string]string{}
	for _, p := range []string{c.Path, filepath.Join(c.Path, "_metadata"), "file://" + c.Path} {
		code, stdout, stderr := opRunWithStdin(t, "", "plan", "--no-preview", "--checkpoint", p, "--operator-uid", op.UID)
		if code != exitOK {
			t.Fatalf("%s: exit %d\n%s", p, code, stderr)
		}
		pl := opParsePlan(t, stdout)
		if pl.SourceRecoveryPoint != p {
			t.Fatalf("recovery point %q, want %q", pl.SourceRecoveryPoint, p)
		}
		ids[pl.PlanID] = p
		code, stdout, _ = opRunWithStdin(t, "", "plan", "--no-preview", "--checkpoint", p, "--operator-uid", op.UID, "--recovery-point", "sp-7")
		if code != exitOK || opParsePlan(t, stdout).SourceRecoveryPoint != "sp-7" {
			t.Fatalf("--recovery-point: exit %d\n%s", code, stdout)
		}
	}
	if len(ids) != 3 {
		t.Fatalf("three spellings gave %d plan IDs", len(ids))
	}
}

// TestBadCheckpoints: a damaged, missing or ambiguous checkpoint is exit 1 for plan, pin and
// markers and exit 4 (cannot tell) for validate, with a message that names the file and what
// to do; nothing is written, and no cluster is asked.
func TestBadCheckpoints(t *testing.T) {
	c, op := firstPlannable(t)
	cut := t.TempDir()
	copyDir(t, c.Path, cut)
	meta := filepath.Join(cut, "_metadata")
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(meta, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		path string
		want string
	}{
		"truncated": {cut, "_metadata"},
		"missing":   {filepath.Join(cut, "no-such-chk"), "does not exist"},
		"empty dir": {t.TempDir(), "without _metadata"},
	} {
		t.Run(name, func(t *testing.T) {
			for _, cmd := range [][]string{
				{"plan", "--no-preview", "--checkpoint", tc.path},
				{"markers", "--checkpoint", tc.path},
				{"validate", "-b", "127.0.0.1:1", "--checkpoint", tc.path},
				{"pin", "-b", "127.0.0.1:1", "--checkpoint", tc.path, "--for", "1h", "--reason", "drill"},
			} {
				code, stdout, stderr := opRunWithStdin(t, "", cmd...)
				want := exitError
				if cmd[0] == "validate" {
					want = exitCannotTell
				}
				if code != want || !strings.Contains(stderr, tc.want) || strings.Contains(stdout, `"planId"`) {
					t.Errorf("%s: exit %d (want %d), stderr without %q:\n%s%s", cmd[0], code, want, tc.want, stdout, stderr)
				}
			}
		})
	}
	// validate -o json: the verdict document, cannot tell, checkpoint-unreadable.
	code, stdout, _ := opRunWithStdin(t, "", "validate", "-o", "json", "-b", "127.0.0.1:1", "--checkpoint", cut)
	if code != exitCannotTell || !strings.Contains(stdout, `"reason": "checkpoint-unreadable"`) || !strings.Contains(stdout, `"allowed": false`) {
		t.Fatalf("validate -o json: exit %d\n%s", code, stdout)
	}
	_ = op
}

// TestCheckpointFlagsAreUsage: the flags' combinations a typo makes are usage errors (exit 2).
func TestCheckpointFlagsAreUsage(t *testing.T) {
	for _, args := range [][]string{
		{"plan", "--checkpoint", "/x", "--markers", "m.json"},
		{"plan", "--recovery-point", "x"},
		{"plan", "--markers", "m.json"}, // no --recovery-point
		{"plan", "--markers", "m.json", "--recovery-point", "x", "--operator-uid", "u"},
		{"plan", "--checkpoint", "/x", "--operator-uid", "u", "--operator-uid-hash", "00"},
		{"validate", "--checkpoint", " "},
		{"markers"},
		{"pin", "--reason", "r", "--for", "1h"},
	} {
		if code, _, stderr := opRunWithStdin(t, "", args...); code != exitUsage {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, stderr)
		}
	}
}

func firstPlannable(t *testing.T) (flinkgentest.Case, flinkgentest.Operator) {
	t.Helper()
	for _, c := range flinkgentest.Cases(t) {
		for _, op := range c.Operators {
			if plannable(op) {
				return c, op
			}
		}
	}
	t.Fatal("no plannable case in the generator's output")
	return flinkgentest.Case{}, flinkgentest.Operator{}
}

// copyDir copies a checkpoint directory (files only, one level) for a test to damage.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
