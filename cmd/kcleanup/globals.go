package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/clientconfig"
	"github.com/kcleanup/kcleanup/protocol"
)

// outputFormat is the value of --output.
type outputFormat string

const (
	outputTable outputFormat = "table" // aligned text for people
	outputJSON  outputFormat = "json"  // one versioned JSON document on stdout, for programs
	outputHTML  outputFormat = "html"  // history only: the self-contained audit report
)

// Names of the global (persistent) flags and their environment fallbacks. A subcommand must not
// define a flag with one of these names or shorthands (-b, -o), except to reword one for itself
// with the same meaning (worker's --control-topic).
const (
	flagBootstrap     = "bootstrap-server"
	flagControlTopic  = "control-topic"
	flagCommandConfig = "command-config"
	flagOutput        = "output"
	flagTimeout       = "timeout"

	envBootstrap     = "KCLEANUP_BOOTSTRAP_SERVER"
	envControlTopic  = "KCLEANUP_CONTROL_TOPIC"
	envCommandConfig = "KCLEANUP_COMMAND_CONFIG"
	envOutput        = "KCLEANUP_OUTPUT"
	envTimeout       = "KCLEANUP_TIMEOUT"

	defaultBootstrap = "localhost:9092"
	defaultOutput    = outputTable
	defaultTimeout   = 30 * time.Second

	// noCommandConfig is how --command-config says "no file" over KCLEANUP_COMMAND_CONFIG: a
	// word an unset variable cannot produce (a blank value is a usage error). A file named
	// "none" is ./none.
	noCommandConfig = "none"

	// defaultClientID names kcleanup in broker logs and quotas unless client.id overrides it.
	defaultClientID = "kcleanup"
)

// globalOptions are the settings every command shares, resolved once per invocation from flags,
// then KCLEANUP_* environment variables, then defaults (in that order of precedence).
type globalOptions struct {
	bootstrapServers []string     // never empty after resolution
	controlTopic     string       // "" means: derive from the data topic (protocol.ControlTopicFor)
	commandConfig    string       // path of a Kafka client properties file, "" for none
	output           outputFormat // outputTable or outputJSON
	timeout          time.Duration

	stderr    io.Writer  // where the --command-config notes go; nil: nowhere
	notesOnce *sync.Once // the notes are printed once per invocation, however many clients it opens
	trace     *trace     // what this invocation's clients did (interrupt.go); nil: not traced
}

// addGlobalFlags declares the persistent flags on the root command. Their defaults are shown in
// --help, but the values are read only through resolveGlobals, which also consults the
// environment. They are strings (not pflag.Duration) so that a flag and its environment variable
// are parsed by the same code and fail with the same message.
func addGlobalFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringP(flagBootstrap, "b", defaultBootstrap,
		"Kafka bootstrap `servers`, comma-separated (env "+envBootstrap+")")
	f.String(flagControlTopic, "",
		"control `topic` (env "+envControlTopic+"; default: <data topic>.kcleanup)")
	f.String(flagCommandConfig, "",
		"Kafka client properties `file` for TLS and SASL, as Kafka's own tools take it; "+noCommandConfig+" for none (env "+envCommandConfig+")")
	f.StringP(flagOutput, "o", string(defaultOutput),
		"output `format`: table or json; history also html, the audit report (env "+envOutput+")")
	f.String(flagTimeout, defaultTimeout.String(),
		"how long to wait for the cluster, a Go `duration` such as 30s or 2m (env "+envTimeout+")")
	// --control-topic and --command-config are never blank: an unset shell variable
	// (--control-topic "$CT") must not silently turn into "the default control topic" or "no
	// TLS/SASL" (blankFlag). To drop an environment value, unset the variable.
}

// resolveGlobals reads the global flags of cmd (the command being run, which inherits the
// persistent flags) with their environment fallbacks. An invalid value is a usage error naming
// where it came from (the flag or the environment variable).
func resolveGlobals(cmd *cobra.Command) (globalOptions, error) {
	g := globalOptions{stderr: cmd.ErrOrStderr(), notesOnce: new(sync.Once), trace: new(trace)}

	raw, src, err := lookupSetting(cmd, flagBootstrap, envBootstrap, defaultBootstrap)
	if err != nil {
		return globalOptions{}, err
	}
	for _, s := range strings.Split(raw, ",") {
		if s = strings.TrimSpace(s); s != "" {
			g.bootstrapServers = append(g.bootstrapServers, s)
		}
	}
	if len(g.bootstrapServers) == 0 {
		return globalOptions{}, usageError(errors.WithHint(errors.Newf("%s is empty: give at least one host:port", src),
			"for example -b kafka-1:9092,kafka-2:9092"))
	}

	if g.controlTopic, _, err = lookupSetting(cmd, flagControlTopic, envControlTopic, ""); err != nil {
		return globalOptions{}, err
	}
	g.controlTopic = strings.TrimSpace(g.controlTopic)
	if g.commandConfig, _, err = lookupSetting(cmd, flagCommandConfig, envCommandConfig, ""); err != nil {
		return globalOptions{}, err
	}
	if g.commandConfig == noCommandConfig {
		g.commandConfig = ""
	}

	if raw, src, err = lookupSetting(cmd, flagOutput, envOutput, string(defaultOutput)); err != nil {
		return globalOptions{}, err
	}
	switch f := outputFormat(strings.ToLower(strings.TrimSpace(raw))); f {
	case outputTable, outputJSON:
		g.output = f
	case outputHTML:
		if cmd.Name() != "history" {
			return globalOptions{}, usageError(errors.WithHintf(errors.Newf(
				"invalid %s %q: only history writes html (the audit report)", src, raw),
				"give -o %s for people or -o %s for programs; `kcleanup history -o html > report.html` writes the report", outputTable, outputJSON))
		}
		g.output = f
	default:
		return globalOptions{}, usageError(errors.WithHintf(errors.Newf(
			"invalid %s %q: allowed values are %s and %s", src, raw, outputTable, outputJSON),
			"give -o %s for people or -o %s for programs", outputTable, outputJSON))
	}

	if raw, src, err = lookupSetting(cmd, flagTimeout, envTimeout, defaultTimeout.String()); err != nil {
		return globalOptions{}, err
	}
	d, err := time.ParseDuration(strings.TrimSpace(raw))
	if err != nil || d <= 0 {
		return globalOptions{}, usageError(errors.WithHint(
			errors.Newf("invalid %s %q: want a positive Go duration", src, raw),
			"examples: 500ms, 30s, 2m, 1h30m"))
	}
	g.timeout = d
	return g, nil
}

// lookupSetting applies the precedence flag > environment > default and reports where the value
// came from ("--output" or "KCLEANUP_OUTPUT=" ...), for error messages. An environment variable
// that is set but blank is a usage error, like a blank flag: in a pipeline it is almost always a
// variable that was never filled in (KCLEANUP_CONTROL_TOPIC=$CT), and reading it as "unset" would
// quietly put the default in the operator's place.
func lookupSetting(cmd *cobra.Command, flag, env, def string) (value, source string, err error) {
	if f := cmd.Flags().Lookup(flag); f != nil && f.Changed {
		return f.Value.String(), "--" + flag, nil
	}
	if v, ok := os.LookupEnv(env); ok {
		if strings.TrimSpace(v) == "" {
			return "", env, usageError(errors.WithHintf(errors.Newf("%s is set but blank", env),
				"give it a value, or unset it (unset %s) to use --%s or its default", env, flag))
		}
		return v, env, nil
	}
	return def, fmt.Sprintf("--%s (default)", flag), nil
}

// controlTopicOf returns the control topic to use for dataTopic: --control-topic if given,
// otherwise protocol.ControlTopicFor(dataTopic), the one place the naming convention lives. It
// refuses, as a usage error, an empty data topic and a control topic equal to the data topic:
// control records must never land in the data topic (docs/design.md §4).
func (g globalOptions) controlTopicOf(dataTopic string) (string, error) {
	if dataTopic == "" {
		return "", usageError(errors.New("the data topic is empty"))
	}
	if g.controlTopic == "" {
		return protocol.ControlTopicFor(dataTopic), nil
	}
	if g.controlTopic == dataTopic {
		return "", usageError(errors.WithHintf(
			errors.Newf("--control-topic %q is the data topic itself", g.controlTopic),
			"the control topic must be a separate, compacted, single-partition topic; omit --control-topic to use %q",
			protocol.ControlTopicFor(dataTopic)))
	}
	return g.controlTopic, nil
}

// testOpts are franz-go options every client of an invocation also takes: the tests count and
// read the requests a command sends with them (apply_requests_test.go). Nil outside tests.
var testOpts []kgo.Opt

// kgoOpts builds the franz-go client options every kcleanup client starts from: seed brokers,
// dial timeout, acks=all, and TLS/SASL from --command-config. The idempotent producer is
// franz-go's default and is deliberately left on (docs/design.md §4: writers use acks=all and
// idempotence). The command config file is read here, not in resolveGlobals, so that commands
// that never talk to Kafka (version) do not fail on it.
func (g globalOptions) kgoOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(g.bootstrapServers...),
		kgo.DialTimeout(g.timeout),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ClientID(defaultClientID),
	}
	if g.trace != nil {
		opts = append(opts, kgo.WithHooks(g.trace))
	}
	opts = append(opts, testOpts...)
	if g.commandConfig == "" {
		return opts, nil
	}
	sec, err := clientconfig.Load(g.commandConfig)
	if err != nil {
		return nil, commandConfigHint(err, g.commandConfig)
	}
	secOpts, err := sec.Opts() // its errors name the file and line already
	if err != nil {
		return nil, commandConfigHint(err, g.commandConfig)
	}
	if g.stderr != nil && g.notesOnce != nil {
		g.notesOnce.Do(func() {
			for _, n := range sec.Notes() {
				fmt.Fprintln(g.stderr, "Note: "+n)
			}
		})
	}
	// Appended last: a client.id in the file overrides the default.
	return append(opts, secOpts...), nil
}

// commandConfigHint gives an error about the --command-config file the operator's next step,
// unless the error already carries one.
func commandConfigHint(err error, path string) error {
	if len(errors.GetAllHints(err)) > 0 {
		return err
	}
	if errors.Is(err, fs.ErrNotExist) {
		return errors.WithHintf(err, "no file %s: give the path of the Kafka client properties file "+
			"(--command-config or %s), or neither for a cluster without TLS or SASL", path, envCommandConfig)
	}
	return errors.WithHintf(err, "fix %s: a Kafka client properties file as Kafka's own tools take it "+
		"(security.protocol, sasl.*, ssl.*), the same file kafka-topics.sh --command-config reads", path)
}
