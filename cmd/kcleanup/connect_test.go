package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
)

// TestRefusedConnectionFailsAtOnce: with nothing listening at the bootstrap address, every
// command that talks to Kafka fails at once with the connection hint, as doctor always did,
// instead of waiting out --timeout (issue 35 item 6: status, validate and apply waited 30 s).
// validate says "cannot tell" (exit 4). The bound (10 s of a 30 s --timeout) is the behaviour,
// not a speed claim.
func TestRefusedConnectionFailsAtOnce(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	_, plan := opTestPlan(t, dir, "chk-1", "action-state", "oBnTyPS2TqmC9ctLrPFH6w", events.Offsets{0: 50})
	markers := opTestMarkers(t, dir, "m.json", events.Marker{Topic: "action-state", TopicID: "oBnTyPS2TqmC9ctLrPFH6w", Offsets: events.Offsets{0: 50}})
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"status", "--topic", "action-state"}, exitError},
		{[]string{"validate", "--markers", markers}, exitCannotTell},
		{[]string{"apply", plan}, exitError},
		{[]string{"submit", plan}, exitError},
		{[]string{"history", "--topic", "action-state"}, exitError},
		{[]string{"pin", "--markers", markers, "--recovery-point", "chk-1", "--reason", "r", "--for", "1d"}, exitError},
		{[]string{"init", "--topic", "action-state"}, exitError},
		{[]string{"doctor", "--topic", "action-state"}, exitError},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			t.Parallel()
			began := time.Now()
			code, _, stderr := runCLI(t, append([]string{"-b", "127.0.0.1:1", "--timeout", "30s"}, tc.args...)...)
			took := time.Since(began)
			t.Logf("%s: exit %d after %s", tc.args[0], code, took.Round(time.Millisecond))
			if took > 10*time.Second {
				t.Errorf("took %s against a refused connection with --timeout 30s: it waited instead of failing at once", took)
			}
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			if !strings.Contains(stderr, "Hint: could not connect to 127.0.0.1:1") {
				t.Errorf("stderr lacks the connection hint:\n%s", stderr)
			}
		})
	}
}

// TestMissingCAFileIsNamed: a --command-config whose ssl.truststore.location names a file that
// does not exist says that file is missing, not the properties file (issue 35 item 5: the hint
// said "no file client.properties" of a file that was there).
func TestMissingCAFileIsNamed(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	ca := dir + "/no-such-ca.pem"
	props := writeFile(t, dir, "client.properties", "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location="+ca+"\n")
	code, _, stderr := runCLI(t, "-b", "127.0.0.1:1", "status", "--topic", "t", "--command-config", props)
	if code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	if want := "Hint: there is no file " + ca + ": fix ssl.truststore.location in " + props; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	if strings.Contains(stderr, "no file "+props) {
		t.Errorf("the hint says the properties file is missing; it is the CA file:\n%s", stderr)
	}
}
