package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"
)

// clearEnv unsets every KCLEANUP_* variable for the test, so the outer environment cannot change
// a result.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{envBootstrap, envControlTopic, envCommandConfig, envOutput, envTimeout, envRestoreGrace} {
		unsetEnv(t, k)
	}
}

// unsetEnv unsets k for the test (a blank value is a usage error, not "unset") and restores it
// after.
func unsetEnv(t *testing.T, k string) {
	t.Helper()
	t.Setenv(k, "") // registers the restore
	if err := os.Unsetenv(k); err != nil {
		t.Fatal(err)
	}
}

// runCLI runs the real kcleanup command line.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// runWith runs a root built by buildRoot with the given subcommands, in the real frame.
func runWith(t *testing.T, g *globalOptions, args []string, subcommands ...*cobra.Command) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = execute(context.Background(), buildRoot(g, subcommands...), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// probeCmd is a subcommand that records the resolved global options and returns err.
func probeCmd(g *globalOptions, got *globalOptions, err error) *cobra.Command {
	return &cobra.Command{
		Use: "probe",
		RunE: func(cmd *cobra.Command, _ []string) error {
			*got = *g
			return err
		},
	}
}

func TestExitCodes(t *testing.T) {
	clearEnv(t)
	for _, tc := range []struct {
		args     []string
		code     int
		inStderr string // a fragment the error message must contain
	}{
		{[]string{"version"}, exitOK, ""},
		{[]string{"-o", "json", "version"}, exitOK, ""},
		{[]string{"bogus"}, exitUsage, `unknown command "bogus" for "kcleanup"`},
		{[]string{"verson"}, exitUsage, `did you mean "version"?`},
		{[]string{"version", "--bogus"}, exitUsage, "unknown flag: --bogus"},
		{[]string{"--bogus", "version"}, exitUsage, "unknown flag: --bogus"},
		{[]string{"-x", "version"}, exitUsage, "unknown shorthand flag: 'x'"},
		{[]string{"version", "--output"}, exitUsage, "flag needs an argument"},
		{[]string{"-o", "xml", "version"}, exitUsage, `invalid --output "xml": allowed values are table and json`},
		{[]string{"version", "--output=yaml"}, exitUsage, "allowed values are table and json"},
		{[]string{"version", "--timeout", "abc"}, exitUsage, `invalid --timeout "abc"`},
		{[]string{"--timeout", "0s", "version"}, exitUsage, `invalid --timeout "0s"`},
		{[]string{"--timeout=-5s", "version"}, exitUsage, `invalid --timeout "-5s"`},
		{[]string{"--timeout", "30", "version"}, exitUsage, `invalid --timeout "30"`},
		{[]string{"-b", " , ", "version"}, exitUsage, "--bootstrap-server is empty"},
		{[]string{"version", "extra"}, exitUsage, `unknown command "extra" for "kcleanup version"`},
		{[]string{}, exitUsage, `missing command for "kcleanup"`},
		{[]string{"--help"}, exitOK, ""},
		{[]string{"help"}, exitOK, ""},
		{[]string{"version", "--help"}, exitOK, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			if tc.code == exitOK {
				if stderr != "" {
					t.Fatalf("stderr not empty on success:\n%s", stderr)
				}
				return
			}
			if !strings.Contains(stderr, "Error: ") || !strings.Contains(stderr, tc.inStderr) {
				t.Fatalf("stderr does not hold %q:\n%s", tc.inStderr, stderr)
			}
			if stdout != "" {
				t.Fatalf("stdout must hold results only, got:\n%s", stdout)
			}
		})
	}
}

func TestUsageErrorsPointToHelp(t *testing.T) {
	clearEnv(t)
	_, _, stderr := runCLI(t, "version", "--bogus")
	want := "Error: unknown flag: --bogus\nHint: run 'kcleanup version --help' for usage\n"
	if stderr != want {
		t.Fatalf("stderr:\n%q\nwant:\n%q", stderr, want)
	}
}

func TestHelpListsExitCodes(t *testing.T) {
	clearEnv(t)
	code, stdout, _ := runCLI(t, "--help")
	if code != exitOK {
		t.Fatalf("exit code %d", code)
	}
	for _, line := range []string{
		"Exit codes:",
		"0  success",
		"1  error",
		"2  usage",
		"3  refused: kcleanup validate only",
		"130  interrupted",
		"4  cannot tell",
		"--bootstrap-server", "--control-topic", "--command-config", "--output", "--timeout",
		envBootstrap, envControlTopic, envCommandConfig, envOutput, envTimeout,
	} {
		if !strings.Contains(stdout, line) {
			t.Errorf("--help does not mention %q", line)
		}
	}
}

func TestMissingCommandPrintsUsageToStderr(t *testing.T) {
	clearEnv(t)
	code, stdout, stderr := runCLI(t)
	if code != exitUsage || stdout != "" {
		t.Fatalf("code %d stdout %q", code, stdout)
	}
	if !strings.Contains(stderr, "Available Commands:") || !strings.Contains(stderr, "Error: missing command for \"kcleanup\"\nHint: ") {
		t.Fatalf("stderr:\n%s", stderr)
	}
}

func TestGlobalFlagsBeforeAndAfterTheCommand(t *testing.T) {
	clearEnv(t)
	want := globalOptions{
		bootstrapServers: []string{"h1:9092", "h2:9093"},
		controlTopic:     "ctl",
		commandConfig:    "client.properties",
		output:           outputJSON,
		timeout:          5 * time.Second,
	}
	for _, args := range [][]string{
		{"-b", "h1:9092,h2:9093", "--control-topic", "ctl", "--command-config", "client.properties", "-o", "json", "--timeout", "5s", "probe"},
		{"probe", "--bootstrap-server=h1:9092, h2:9093", "--control-topic=ctl", "--command-config=client.properties", "--output=json", "--timeout=5s"},
		{"--bootstrap-server", "h1:9092,,h2:9093,", "-o", "JSON", "probe", "--control-topic", "ctl", "--timeout", "5000ms", "--command-config", "client.properties"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			g := &globalOptions{}
			var got globalOptions
			code, _, stderr := runWith(t, g, args, probeCmd(g, &got, nil))
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			assertGlobals(t, got, want)
		})
	}
}

func assertGlobals(t *testing.T, got, want globalOptions) {
	t.Helper()
	if strings.Join(got.bootstrapServers, "|") != strings.Join(want.bootstrapServers, "|") ||
		got.controlTopic != want.controlTopic || got.commandConfig != want.commandConfig ||
		got.output != want.output || got.timeout != want.timeout {
		t.Fatalf("globals\n got %+v\nwant %+v", got, want)
	}
}

func TestEnvironmentFallbackAndPrecedence(t *testing.T) {
	defaults := globalOptions{bootstrapServers: []string{"localhost:9092"}, output: outputTable, timeout: 30 * time.Second}
	fromEnv := globalOptions{
		bootstrapServers: []string{"e1:9092", "e2:9092"}, controlTopic: "env-ctl", commandConfig: "env.properties",
		output: outputJSON, timeout: 2 * time.Minute,
	}
	allEnv := map[string]string{
		envBootstrap: "e1:9092,e2:9092", envControlTopic: "env-ctl", envCommandConfig: "env.properties",
		envOutput: "json", envTimeout: "2m",
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want globalOptions
	}{
		{"defaults", nil, []string{"probe"}, defaults},
		{"environment", allEnv, []string{"probe"}, fromEnv},
		{"--command-config none drops the environment's file", allEnv, []string{"probe", "--command-config", "none"},
			globalOptions{bootstrapServers: []string{"e1:9092", "e2:9092"}, controlTopic: "env-ctl", output: outputJSON, timeout: 2 * time.Minute}},
		{"flags beat environment", allEnv,
			[]string{"probe", "-b", "f:1", "--control-topic", "f-ctl", "--command-config", "f.properties", "-o", "table", "--timeout", "7s"},
			globalOptions{bootstrapServers: []string{"f:1"}, controlTopic: "f-ctl", commandConfig: "f.properties", output: outputTable, timeout: 7 * time.Second}},
		{"flag equal to the default still beats environment", allEnv, []string{"-o", "table", "-b", "localhost:9092", "probe"},
			globalOptions{bootstrapServers: []string{"localhost:9092"}, controlTopic: "env-ctl", commandConfig: "env.properties", output: outputTable, timeout: 2 * time.Minute}},
		{"a flag hides an invalid environment value", map[string]string{envOutput: "xml", envTimeout: "soon"}, []string{"probe", "-o", "json", "--timeout", "1s"},
			globalOptions{bootstrapServers: []string{"localhost:9092"}, output: outputJSON, timeout: time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			g := &globalOptions{}
			var got globalOptions
			code, _, stderr := runWith(t, g, tc.args, probeCmd(g, &got, nil))
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			assertGlobals(t, got, tc.want)
		})
	}
}

func TestInvalidEnvironmentIsAUsageErrorNamingTheVariable(t *testing.T) {
	for _, tc := range []struct{ env, value, want string }{
		{envOutput, "xml", `invalid KCLEANUP_OUTPUT "xml": allowed values are table and json`},
		{envTimeout, "soon", `invalid KCLEANUP_TIMEOUT "soon": want a positive Go duration`},
		{envTimeout, "-1s", `invalid KCLEANUP_TIMEOUT "-1s"`},
		{envBootstrap, ",", "KCLEANUP_BOOTSTRAP_SERVER is empty"},
		// Set but blank: an unset pipeline variable, never "unset" (issue 20 item 1).
		{envBootstrap, "", "KCLEANUP_BOOTSTRAP_SERVER is set but blank"},
		{envControlTopic, "", "KCLEANUP_CONTROL_TOPIC is set but blank"},
		{envControlTopic, " ", "KCLEANUP_CONTROL_TOPIC is set but blank"},
		{envCommandConfig, "", "KCLEANUP_COMMAND_CONFIG is set but blank"},
		{envOutput, "", "KCLEANUP_OUTPUT is set but blank"},
		{envTimeout, "", "KCLEANUP_TIMEOUT is set but blank"},
	} {
		t.Run(tc.env+"="+tc.value, func(t *testing.T) {
			clearEnv(t)
			t.Setenv(tc.env, tc.value)
			code, _, stderr := runCLI(t, "version")
			if code != exitUsage || !strings.Contains(stderr, "Error: "+tc.want) {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
		})
	}
}

func TestErrorPrintingAndExitCodeMapping(t *testing.T) {
	clearEnv(t)
	hinted := errors.WithHint(errors.WithHint(errors.New("boom"), "first hint"), "second hint")
	for _, tc := range []struct {
		name   string
		err    error
		code   int
		stderr string
	}{
		{"plain error", errors.New("boom"), exitError, "Error: boom\n"},
		{"hints in the order attached", hinted, exitError, "Error: boom\nHint: first hint\nHint: second hint\n"},
		{"wrapped keeps hints", errors.Wrap(hinted, "apply plan"), exitError, "Error: apply plan: boom\nHint: first hint\nHint: second hint\n"},
		{"multi-line message and hint are indented", errors.WithHint(errors.New("line one\nline two"), "do this\nthen that"), exitError,
			"Error: line one\n       line two\nHint: do this\n      then that\n"},
		{"usage from RunE", usageError(errors.New("need --plan")), exitUsage, "Error: need --plan\n"},
		{"refused", refusedError(errors.WithHint(errors.New("offset 100 is below the boundary 150"), "use a newer checkpoint")), exitRefused,
			"Error: offset 100 is below the boundary 150\nHint: use a newer checkpoint\n"},
		{"refusal survives wrapping", errors.Wrap(refusedError(errors.New("no")), "validate"), exitRefused, "Error: validate: no\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &globalOptions{}
			var got globalOptions
			code, stdout, stderr := runWith(t, g, []string{"probe"}, probeCmd(g, &got, tc.err))
			if code != tc.code || stderr != tc.stderr || stdout != "" {
				t.Fatalf("exit %d (want %d)\nstderr %q\n  want %q\nstdout %q", code, tc.code, stderr, tc.stderr, stdout)
			}
		})
	}
}

func TestExitCodeOf(t *testing.T) {
	base := errors.New("x")
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{base, exitError},
		{usageError(base), exitUsage},
		{refusedError(base), exitRefused},
		{errors.Wrap(usageError(base), "w"), exitUsage},
		{usageError(refusedError(base)), exitUsage}, // never got as far as validation
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
	if usageError(nil) != nil || refusedError(nil) != nil {
		t.Fatal("marking nil must give nil")
	}
	if usageError(base).Error() != "x" || refusedError(base).Error() != "x" {
		t.Fatal("marking must not change the message")
	}
}

func TestArgsAndRequiredFlagsAreUsageErrors(t *testing.T) {
	clearEnv(t)
	newCmd := func() *cobra.Command {
		c := &cobra.Command{
			Use:  "take TOPIC",
			Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				_, err := cmd.OutOrStdout().Write([]byte("took " + args[0] + "\n"))
				return err
			},
		}
		c.Flags().String("plan", "", "plan file")
		_ = c.MarkFlagRequired("plan")
		c.Flags().Bool("a", false, "")
		c.Flags().Bool("z", false, "")
		c.MarkFlagsMutuallyExclusive("a", "z")
		return c
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"take", "t", "--plan", "p"}, exitOK, "took t\n"},
		{[]string{"take", "--plan", "p"}, exitUsage, "accepts 1 arg(s), received 0"},
		{[]string{"take", "t", "u", "--plan", "p"}, exitUsage, "accepts 1 arg(s), received 2"},
		{[]string{"take", "t"}, exitUsage, `required flag(s) "plan" not set`},
		{[]string{"take", "t", "--plan", "p", "--a", "--z"}, exitUsage, "[a z] were all set"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runWith(t, &globalOptions{}, tc.args, newCmd())
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, stderr)
			}
			if code == exitOK {
				if stdout != tc.want {
					t.Fatalf("stdout %q", stdout)
				}
				return
			}
			if !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "Hint: run 'kcleanup take --help' for usage") {
				t.Fatalf("stderr:\n%s", stderr)
			}
		})
	}
}

func TestGroupCommands(t *testing.T) {
	clearEnv(t)
	newGroup := func() *cobra.Command {
		grp := &cobra.Command{Use: "grp", Short: "a group"}
		grp.AddCommand(&cobra.Command{Use: "leaf", RunE: func(*cobra.Command, []string) error { return nil }})
		return grp
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"grp", "leaf"}, exitOK, ""},
		{[]string{"grp"}, exitUsage, `missing command for "kcleanup grp"`},
		{[]string{"grp", "lef"}, exitUsage, `unknown command "lef" for "kcleanup grp"`},
		{[]string{"grp", "leaf", "more"}, exitUsage, `unknown command "more" for "kcleanup grp leaf"`},
	} {
		code, _, stderr := runWith(t, &globalOptions{}, tc.args, newGroup())
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d (want %d), stderr:\n%s", tc.args, code, tc.code, stderr)
		}
	}
}

func TestPanicIsAnInternalErrorNotAUsageError(t *testing.T) {
	clearEnv(t)
	boom := &cobra.Command{Use: "boom", RunE: func(*cobra.Command, []string) error { panic("kaboom") }}
	code, _, stderr := runWith(t, &globalOptions{}, []string{"boom"}, boom)
	if code != exitError || !strings.HasPrefix(stderr, "Error: internal error") || !strings.Contains(stderr, "kaboom") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

func TestCommandsGetTheContext(t *testing.T) {
	clearEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var sawErr error
	c := &cobra.Command{Use: "wait", RunE: func(cmd *cobra.Command, _ []string) error {
		sawErr = cmd.Context().Err()
		return sawErr
	}}
	var out, errOut bytes.Buffer
	code := execute(ctx, buildRoot(&globalOptions{}, c), []string{"wait"}, &out, &errOut)
	// A command stopped by Ctrl-C is "interrupted", exit 130 (interrupt.go).
	if !errors.Is(sawErr, context.Canceled) || code != exitInterrupted || !strings.HasPrefix(errOut.String(), "Error: interrupted") {
		t.Fatalf("command saw %v, exit %d, stderr:\n%s", sawErr, code, errOut.String())
	}
}

func TestVersionCommand(t *testing.T) {
	clearEnv(t)
	code, stdout, stderr := runCLI(t, "version")
	if code != exitOK || stderr != "" || !strings.HasPrefix(stdout, "version ") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	code, stdout, _ = runCLI(t, "version", "-o", "json")
	var doc map[string]any
	if err := json.Unmarshal([]byte(stdout), &doc); code != exitOK || err != nil {
		t.Fatalf("exit %d, %v:\n%s", code, err, stdout)
	}
	if doc["schemaVersion"] != 1.0 || doc["version"] == "" || doc["goVersion"] == "" {
		t.Fatalf("version JSON: %s", stdout)
	}
}
