package main

import (
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/events"
)

func TestFileProblem(t *testing.T) {
	for _, tc := range []struct {
		text string
		n    int
		want fileProblemKind
	}{
		{``, 0, problemEmpty},
		{" \n\t", 0, problemEmpty},
		{"\uFEFF\n", 0, problemEmpty},
		{`{`, 1, problemTruncated},
		{`{"planId":"ab`, 13, problemTruncated},
		{`{"planId":`, 10, problemTruncated},
		{`{"a":1`, 6, problemTruncated},
		{`[{"a":1},`, 9, problemTruncated},
		{`{"a":1}`, 0, problemNone},
		{`{"a":1} trailing`, 0, problemNone}, // the decoder says what is wrong
		{`{"a":1]`, 0, problemNone},
		{`{"a" 1}`, 0, problemNone},
		{`nope`, 0, problemNone},
		{`12`, 0, problemNone},
	} {
		n, got := fileProblem([]byte(tc.text))
		if got != tc.want || n != tc.n {
			t.Errorf("fileProblem(%q) = %d, %d; want %d, %d", tc.text, n, got, tc.n, tc.want)
		}
	}
}

// TestTruncatedFilesSayWhereTheyEnd cuts a real plan and a real markers file short and runs
// every command that reads them (issue 14 row 6). Each fails before contacting the cluster.
func TestTruncatedFilesSayWhereTheyEnd(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	plan, _ := opTestPlan(t, dir, "chk-1", "action-state", opTestID, events.Offsets{0: 40, 1: 30})
	whole := string(plan.Encode())
	marker := string(opMarker(events.Offsets{0: 40}).Encode())
	for _, cut := range []int{1, 20, len(whole) / 2, len(whole) - 2} {
		short := writeFile(t, dir, "short.plan.json", whole[:cut])
		for _, cmd := range [][]string{{"apply", short}, {"submit", short}} {
			code, _, stderr := runCLI(t, append([]string{"-b", "127.0.0.1:1", "--timeout", "2s"}, cmd...)...)
			opWantFailure(t, code, stderr, exitError,
				"Error: plan file "+short+": the file ends early (truncated?) at byte "+itoa(cut)+"\n",
				"Hint: the file was cut short")
		}
	}
	shortMarkers := writeFile(t, dir, "short.json", marker[:len(marker)-3])
	for _, cmd := range [][]string{
		{"plan", "--no-preview", "--recovery-point", "chk-1", "--markers", shortMarkers},
		{"validate", "--markers", shortMarkers},
	} {
		code, _, stderr := runCLI(t, append([]string{"-b", "127.0.0.1:1", "--timeout", "2s"}, cmd...)...)
		opWantFailure(t, code, stderr, exitError,
			"Error: markers file "+shortMarkers+": the file ends early (truncated?) at byte "+itoa(len(marker)-3)+"\n",
			"Hint: the file was cut short")
	}
	empty := writeFile(t, dir, "empty.plan.json", "\n")
	code, _, stderr := runCLI(t, "-b", "127.0.0.1:1", "--timeout", "2s", "apply", empty)
	opWantFailure(t, code, stderr, exitError, "Error: plan file "+empty+": the file is empty", "Hint:")
}

// TestStandardInputIsReadOnce: two --markers - would read standard input twice, the second
// time as an empty document (issue 14 row 9). Both commands that take markers refuse it as a
// usage error; one "-" reads standard input, and its errors say so.
func TestStandardInputIsReadOnce(t *testing.T) {
	clearEnv(t)
	marker := string(opMarker(events.Offsets{0: 40}).Encode())
	for _, cmd := range [][]string{
		{"plan", "--no-preview", "--recovery-point", "chk-1"},
		{"validate"},
	} {
		args := append(append([]string{"-b", "127.0.0.1:1", "--timeout", "2s"}, cmd...), "--markers", "-", "--markers", "-")
		code, stdout, stderr := opRunWithStdin(t, marker, args...)
		opWantFailure(t, code, stderr, exitUsage,
			"Error: --markers - is given 2 times: standard input can be read only once", "Hint: give --markers - once")
		if stdout != "" {
			t.Errorf("%s: stdout %q", cmd[0], stdout)
		}
		args = append(append([]string{"-b", "127.0.0.1:1", "--timeout", "2s"}, cmd...), "--markers", "-")
		code, _, stderr = opRunWithStdin(t, marker[:10], args...)
		opWantFailure(t, code, stderr, exitError, "markers file (standard input): the file ends early (truncated?) at byte 10")
	}
	// plan reads one marker from standard input and writes the plan.
	out := filepath.Join(t.TempDir(), "p.json")
	code, _, stderr := opRunWithStdin(t, marker, "plan", "--no-preview", "--recovery-point", "chk-1", "--markers", "-", "--out", out)
	if code != exitOK || !strings.Contains(stderr, "wrote plan") {
		t.Errorf("plan --markers - exit %d:\n%s", code, stderr)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestByteOrderMarkIsAccepted: a markers file saved by an editor that writes a UTF-8 byte order
// mark is read as the same markers (issue 14 row 9), by plan and by validate's reader.
func TestByteOrderMarkIsAccepted(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	marker := string(opMarker(events.Offsets{0: 40}).Encode())
	bom := writeFile(t, dir, "bom.json", "\uFEFF"+marker)
	plain := writeFile(t, dir, "plain.json", marker)
	plans := map[string]string{}
	for name, f := range map[string]string{"bom": bom, "plain": plain} {
		code, stdout, stderr := opRunWithStdin(t, "", "plan", "--no-preview", "--recovery-point", "chk-1", "--markers", f)
		if code != exitOK {
			t.Fatalf("%s: exit %d\n%s", name, code, stderr)
		}
		plans[name] = stdout
	}
	if plans["bom"] != plans["plain"] {
		t.Errorf("a byte order mark changed the plan:\n%s\n%s", plans["bom"], plans["plain"])
	}
	ms, _, err := readMarkerFiles([]string{bom}, strings.NewReader(""), io.Discard)
	if err != nil || len(ms) != 1 || ms[0].Offsets[0] != 40 {
		t.Errorf("readMarkerFiles: %v, %+v", err, ms)
	}
}
