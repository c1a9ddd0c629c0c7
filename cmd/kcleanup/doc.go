// Command kcleanup is the operator's CLI: plan, submit and apply cleanups of a Kafka topic's old
// prefix, check recovery points against the committed boundary, and run the workers.
//
// # Layout
//
//	main.go          main and run: execute the root command, print errors, map them to exit codes
//	exitcode.go      exit codes (0 ok, 1 error, 2 usage, 3 refused, 4 cannot tell, 130
//	                 interrupted: exitCodes, the one table), usageError, refusedError,
//	                 cannotTellError, printError
//	interrupt.go     explain: Ctrl-C, --timeout and an unreachable cluster in words, with what
//	                 the invocation wrote (trace, franz-go hooks)
//	root.go          the root command, the list of subcommands, the preflight every command gets
//	globals.go       global flags with KCLEANUP_* fallbacks → globalOptions → franz-go options
//	commandconfig.go --command-config: Kafka client properties → clientSecurity
//	properties.go    the java.util.Properties text format
//	jaas.go          sasl.jaas.config
//	security.go      clientSecurity → TLS config, SASL mechanism, kgo options
//	output.go        writeJSON (versioned) and newTable
//	input.go         files named on the command line: "-" once, empty and truncated files worded
//	markers.go       reading markers files (plan, validate)
//	findings.go      init's and doctor's findings in JSON (hints as a list)
//	clip.go          cutting writer-chosen text (keys, details) in views, saying its length
//	connect.go       globalOptions → worker.Cluster, caught-up projections, unreachable hints
//	version.go       the version command: the smallest complete example of a command
//
// The commands, one file each: init.go, doctor.go, plan.go, submit.go, apply.go, status.go,
// history.go, validate.go, worker.go, and demo.go (with demo_cluster.go, the embedded broker).
// They parse flags and print; the protocol itself lives in package worker.
//
// # Adding a command
//
// Write a builder in its own file, newXxxCmd(g *globalOptions) *cobra.Command, and add it to the
// AddCommand list in newRootCmd (root.go). Follow version.go:
//
//   - Flags are locals of the builder, parsed into a struct; RunE calls a plain function that
//     writes results to cmd.OutOrStdout() (in table form, or writeJSON when g.output is json) and
//     uses cmd.Context(), which Ctrl-C cancels. Never call os.Exit or write to os.Stdout.
//   - g is filled in before RunE runs: read it in RunE, not in the builder. Use g.kgoOpts() to
//     build a franz-go client and g.controlTopicOf(topic) for the control topic.
//   - Set Args (cobra.ExactArgs(1), ...) if the command takes positional arguments; without it,
//     any argument is rejected. Argument, flag and MarkFlagRequired errors become usage errors
//     (exit 2) by themselves: root.go installs the checks on every command of the tree. Wrap
//     other errors about the command line in usageError. Only the recovery gate (validate)
//     uses refusedError (exit 3) and cannotTellError (exit 4), from the verdict's class
//     (gate.Class); a refused plan or mirror is an error (exit 1), like everything else.
//     Every error a RunE returns then goes through globalOptions.explain (interrupt.go, installed
//     by root.go): Ctrl-C or SIGTERM makes it "interrupted" (exit 130) with what the invocation
//     wrote (a trace of its clients), a --timeout says whether the cluster answered throughout, stopped
//     answering (timeoutWords) or was never reached.
//   - Attach operator advice with errors.WithHint: it is printed as a "Hint:" line. Every error
//     an operator can fix has one: TestEveryCommandsBadInput (cli_test.go) runs every command
//     with bad input and fails for a command without a row or an error without a hint.
//   - A string flag given blank is a usage error before RunE (root.go, blankFlag), unless the
//     flag is marked with allowBlank because blank means something.
//   - Offsets are printed with events.Offsets.String ("0=40 1=30") in tables and messages, and
//     as {"0":40} in JSON; text a record's writer chose goes through clip in views.
//   - A JSON document that changes incompatibly gets a new schemaVersion and its schema in
//     docs/schema/ (TestJSONDocumentsMatchTheirSchemas validates the real output).
//   - Do not define flags named like the global ones (-b/--bootstrap-server, --control-topic,
//     --command-config, -o/--output, --timeout), except to reword one with the same meaning
//     (worker's --control-topic).
//
// # --command-config
//
// The file Kafka's own tools take (kafka-topics --command-config), read as java.util.Properties
// (properties.go) with Kafka's value trimming. Supported: security.protocol, sasl.mechanism
// (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), sasl.jaas.config (PlainLoginModule or
// ScramLoginModule), PEM trust and key stores (file or inline), host name verification on or off,
// client.id. Everything else is rejected with the file and line, rather than silently ignored;
// JKS/PKCS12 stores and encrypted keys are rejected with the openssl/keytool command that
// converts them. Two deliberate differences from Java: the file must be UTF-8 (Java reads
// ISO-8859-1), and a key set twice is an error (Java keeps the last).
//
// # Output contract
//
// Results go to stdout; errors ("Error: ..." then one "Hint: ..." line per hint) to stderr.
// A JSON document is one object whose first field is "schemaVersion" (1 unless the document
// changed incompatibly: history, init, doctor and validate are at 2); exit codes are listed in
// `kcleanup --help` and never renumbered.
package main
