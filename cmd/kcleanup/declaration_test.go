package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/events"
)

// TestTombstonesDeclareNoneAndWithdraw: the operator's declaration through the CLI, on the real
// broker: declare-none writes it (since the data topic's end by default), status and history
// show it with who and why, it lets a first plan whose range holds a tombstone through only when
// it covers that range (--since start: the operator's explicit word), and withdraw ends it.
func TestTombstonesDeclareNoneAndWithdraw(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.tombstoneTopic(t) // a tombstone at 0@100; ends 0=121 1=121
	dir := t.TempDir()
	if code, stdout, stderr := e.run(t, "init", "--topic", topic); code != 0 {
		t.Fatalf("init: exit %d\n%s%s", code, stdout, stderr)
	}
	markers := opTestMarkers(t, dir, "m.json", events.Marker{Topic: topic, TopicID: id, Offsets: events.Offsets{0: 50, 1: 60}})
	n := 0
	plan := func() (int, string) {
		n++
		code, stdout, stderr := e.run(t, "plan", "--markers", markers, "--recovery-point", "C1", "--out", fmt.Sprintf("%s/C1-%d.plan.json", dir, n))
		return code, stdout + stderr
	}

	code, stdout, stderr := e.run(t, "tombstones", "declare-none", "--topic", topic, "--reason", "cleanup mode rejects tombstones")
	if code != 0 || !strings.Contains(stdout, "since") || !strings.Contains(stdout, "0=121") || !strings.Contains(stdout, "in force") {
		t.Fatalf("declare-none: exit %d\n%s%s", code, stdout, stderr)
	}
	// Declared from the end only: the plan's range below it is still read, and the tombstone found.
	if code, out := plan(); code != 1 || !strings.Contains(out, "a tombstone (null value) at offset 100") {
		t.Fatalf("plan under a declaration from the end: exit %d, want 1 naming the tombstone\n%s", code, out)
	}
	code, stdout, stderr = e.run(t, "tombstones", "declare-none", "--topic", topic, "--since", "start", "--reason", "the operator vouches for the old records")
	if code != 0 || !strings.Contains(stdout, "0=0") {
		t.Fatalf("declare-none --since start: exit %d\n%s%s", code, stdout, stderr)
	}
	// Covered: the rule reads nothing, and takes the operator's word.
	if code, out := plan(); code != 0 {
		t.Fatalf("plan under a declaration from the start: exit %d, want 0\n%s", code, out)
	}
	code, stdout, stderr = e.run(t, "doctor", "--topic", topic)
	if !strings.Contains(stdout, "not read for tombstones: the no-tombstones declaration") || strings.Contains(stdout, "no tombstone (null value) from") {
		t.Fatalf("doctor under the declaration: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = e.run(t, "status", "--topic", topic)
	if code != 0 || !strings.Contains(stdout, "no-tombstones declaration:") || !strings.Contains(stdout, "the operator vouches for the old records") {
		t.Fatalf("status: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = e.run(t, "-o", "json", "status", "--topic", topic)
	if code != 0 || !strings.Contains(stdout, `"noTombstones"`) || !strings.Contains(stdout, `"inForce": true`) {
		t.Fatalf("status -o json: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = e.run(t, "tombstones", "withdraw", "--topic", topic, "--reason", "release 43 emits tombstones")
	if code != 0 || !strings.Contains(stdout, "withdrawn at offset") || !strings.Contains(stdout, "release 43 emits tombstones") {
		t.Fatalf("withdraw: exit %d\n%s%s", code, stdout, stderr)
	}
	// Withdrawn: the scan is back, and finds the tombstone.
	if code, out := plan(); code != 1 || !strings.Contains(out, "a tombstone (null value) at offset 100") {
		t.Fatalf("plan after the withdrawal: exit %d, want 1\n%s", code, out)
	}
	code, stdout, stderr = e.run(t, "history", "--topic", topic)
	for _, want := range []string{"NO_TOMBSTONES_DECLARED", "NO_TOMBSTONES_WITHDRAWN", "release 43 emits tombstones"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("history does not say %q: exit %d\n%s%s", want, code, stdout, stderr)
		}
	}
}
