package main

import (
	"io"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"

	"github.com/kcleanup/kcleanup/checkpoint/store"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
	"github.com/kcleanup/kcleanup/worker/console"
	"github.com/kcleanup/kcleanup/worker/daemon"
	"github.com/kcleanup/kcleanup/worker/httpauth"
)

// Flags of `kcleanup worker` and their environment fallbacks (flag > environment > default).
const (
	flagWorkerTopics    = "control-topics"
	flagWorkerRegex     = "control-topic-regex"
	flagWorkerDiscover  = "discovery-interval"
	flagWorkerGroup     = "group"
	flagWorkerHTTPAddr  = "http-addr"
	flagWorkerLogFormat = "log-format"
	flagWorkerLogLevel  = "log-level"
	flagWorkerSession   = "session-timeout"
	flagWorkerHeartbeat = "heartbeat-interval"
	flagWorkerBlocked   = "blocked-retry"
	flagWorkerReplica   = "replica-name"
	flagWorkerTombstone = "tombstone-scan-limit"
	flagWorkerTLSCert   = "http-tls-cert-file"
	flagWorkerTLSKey    = "http-tls-key-file"
	flagWorkerClientCA  = "http-client-ca-file"
	flagWorkerTokens    = "http-token-file"
	flagWorkerProtect   = "http-protect-reads"
	flagWorkerCkptRoot  = "checkpoint-root"

	envWorkerTopics    = "KCLEANUP_CONTROL_TOPICS"
	envWorkerRegex     = "KCLEANUP_CONTROL_TOPIC_REGEX"
	envWorkerGroup     = "KCLEANUP_GROUP"
	envWorkerHTTPAddr  = "KCLEANUP_HTTP_ADDR"
	envWorkerLogFormat = "KCLEANUP_LOG_FORMAT"
	envWorkerLogLevel  = "KCLEANUP_LOG_LEVEL"
	envWorkerReplica   = "KCLEANUP_REPLICA_NAME"
	envWorkerTLSCert   = "KCLEANUP_HTTP_TLS_CERT_FILE"
	envWorkerTLSKey    = "KCLEANUP_HTTP_TLS_KEY_FILE"
	envWorkerClientCA  = "KCLEANUP_HTTP_CLIENT_CA_FILE"
	envWorkerTokens    = "KCLEANUP_HTTP_TOKEN_FILE"

	// defaultHTTPAddr listens on every interface, so that Kubernetes probes and Prometheus
	// reach it. Without --http-token-file or --http-client-ca-file the API only reads: a
	// request that would write for its caller (?pinFor=) is refused.
	defaultHTTPAddr = ":9308"
)

// workerOptions is the parsed command line of `kcleanup worker`.
type workerOptions struct {
	topics       []string
	regex        string
	discover     time.Duration
	group        string
	httpAddr     string
	replica      string // "" is the hostname
	logFormat    string
	logLevel     slog.Level
	session      time.Duration
	heartbeat    time.Duration
	blockedRetry time.Duration
	// tombstoneScanLimit bounds each pass of the owners' tombstone watch (0: no limit).
	tombstoneScanLimit int64
	// restoreGrace is --restore-grace (0: the attachment's alone).
	restoreGrace time.Duration
	// clockTolerance is --clock-tolerance.
	clockTolerance time.Duration
	// auth is who may call the HTTP API for what (worker/httpauth).
	auth httpauth.Config
	// checkpointRoots are where POST /v1/validate may read checkpoints (none: nowhere).
	checkpointRoots store.Roots
}

func newWorkerCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a worker replica: finish every committed cleanup, serve status, validation and metrics",
		Long: `worker runs one replica of the worker fleet until SIGTERM or Ctrl-C.

Replicas join one Kafka consumer group over the control topics they serve. The replica that owns
a control topic finishes every operation left COMMITTED or DELETING on it (an interrupted apply,
or apply --no-wait): DELETING, DeleteRecords, verification, APPLIED, exactly as apply does. When it
dies, another replica takes over within about the session timeout. Every replica serves, on
--http-addr:

  GET  /             the operator console: boundary, operations, rejected records, live
  GET  /healthz      200 while the process runs
  GET  /readyz       200 when every served control topic was read to its end in the last 5s
  GET  /metrics      Prometheus text format
  GET  /v1/status    the status of every served control topic (?controlTopic= for one)
  POST /v1/validate  markers in; 200 allowed, 409 refused, 400 bad input, 503 cannot tell

Checkpoints: /v1/validate also takes {"checkpoint":"PATH"} (with "operatorUid" or
"operatorUidHash" when needed) and reads the checkpoint itself, only under the --checkpoint-root
locations (none by default: 403), with the worker's own file and S3 credentials.

Callers: ?pinFor= on /v1/validate makes the worker append a pin with its own Kafka credentials,
and a checkpoint request makes it read files or a bucket, so both are served only to a caller
the worker can name: a bearer token of --http-token-file
(Kubernetes' static token file: "token,user" lines; re-read when it changes) or a client
certificate signed by --http-client-ca-file (mutual TLS; needs --http-tls-cert-file and
--http-tls-key-file, which also make the API speak HTTPS). Without either it answers 403. The
other endpoints are open unless --http-protect-reads; /healthz and /readyz always are.

Control topics: --control-topic for one, or --control-topics a,b (repeatable) for several; all
replicas of a group must serve the same set. The default group is kcleanup-worker.<first control
topic>. Or --control-topic-regex RE for every control topic whose name matches RE (Go syntax,
matched anywhere in the name: anchor it), those created later too (found within
--discovery-interval, no restart); the group spreads them over the replicas, and its default
name is kcleanup-worker.regex.<RE>. On SIGTERM the replica stops taking work, lets the step in flight end (at most 5s),
leaves the group so another replica takes over at once, and exits 0.

With a Flink Agents mirror attached, the owner deletes nothing for a plan until the restore grace
the mirror's attachment carries (kcleanup mirror grace) has passed since the mirror's COMMITTED of
it was acknowledged: a restore that passed the job's check on the mirror just before has that long
to replay. --restore-grace D (or KCLEANUP_RESTORE_GRACE) may only lengthen it. The owner retries
the operation then and serves everything else meanwhile; /v1/status lists the wait (restoreGrace).

Nothing above a pin is deleted until the pin has expired by the broker's clock too (the broker's
time of the control records, message.timestamp.type=LogAppendTime), whatever "at" a writer
stamped on the COMMITTED; /v1/status lists such holds (pinHolds), and COMMITTED records stamped
more than --clock-tolerance ahead of the broker (clockAhead, kcleanup_clock_ahead_commits).

Testing aid: KCLEANUP_FAILPOINT=<step> makes the process kill itself with SIGKILL at that step
of an operation, <step>:stop freezes it with SIGSTOP (docs/deploy.md, "Testing aid: failpoints").
Never set it in production. Steps (after-committed is apply's alone):
  ` + strings.Join(worker.Failpoints(), ", "),
		Example: `  kcleanup worker -b kafka:9092 --control-topic action-state.kcleanup
  kcleanup worker -b kafka:9092 --control-topics orders.kcleanup,payments.kcleanup --log-format json
  kcleanup worker -b kafka:9092 --control-topic-regex '^.*\.kcleanup$'`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := parseWorkerFlags(cmd, *g)
			if err != nil {
				return err
			}
			return runWorker(cmd, *g, o)
		},
	}
	f := cmd.Flags()
	// The global --control-topic, with words that fit a worker: it serves control topics and
	// has no data topic to derive one from. A local flag of the same name shadows the global
	// one in parsing and in --help; resolveGlobals reads it as the global one.
	f.String(flagControlTopic, "", "control `topic` to serve (env "+envControlTopic+"); --control-topics for several")
	f.StringSlice(flagWorkerTopics, nil,
		"control `topics` to serve, comma-separated or repeated; adds to --control-topic (env "+envWorkerTopics+")")
	f.String(flagWorkerRegex, "",
		"serve every control topic whose name matches this Go regular `expression`, those created later too; instead of --control-topic(s) (env "+envWorkerRegex+")")
	f.Duration(flagWorkerDiscover, daemon.DefaultDiscoveryInterval, "with --"+flagWorkerRegex+": how often to look for new control topics")
	f.String(flagWorkerGroup, "",
		"consumer `group` of the fleet (env "+envWorkerGroup+"; default kcleanup-worker.<first control topic>)")
	f.String(flagWorkerHTTPAddr, defaultHTTPAddr,
		"`host:port` of the HTTP API, probes and metrics; empty disables it (env "+envWorkerHTTPAddr+")")
	allowBlank(f, flagWorkerHTTPAddr)
	f.String(flagWorkerReplica, "",
		"`name` of this replica in every replica's fleet table (/v1/status, the console): its pod name, or host:port (env "+envWorkerReplica+"; default the hostname)")
	f.String(flagWorkerLogFormat, "text", "log `format` on stderr: text or json (env "+envWorkerLogFormat+")")
	f.String(flagWorkerLogLevel, "info", "log `level`: debug, info, warn or error (env "+envWorkerLogLevel+")")
	f.Duration(flagWorkerSession, daemon.DefaultSessionTimeout,
		"consumer-group session timeout: how long a dead owner keeps its control topics (at least the broker's group.min.session.timeout.ms)")
	f.Duration(flagWorkerHeartbeat, daemon.DefaultHeartbeatInterval, "consumer-group heartbeat interval (below a third of the session timeout)")
	f.Duration(flagWorkerBlocked, daemon.DefaultBlockedRetry,
		"how long an operation blocked for a cause an operator must remove waits before the next attempt")
	f.Int64(flagWorkerTombstone, worker.DefaultTombstoneScanLimit,
		"the most data `records` one pass of an owner's tombstone watch above the boundary reads (0: no limit); the next pass reads on, and nothing is deleted until it has read to the end")
	addRestoreGraceFlag(f)
	f.Duration(flagClockTolerance, report.DefaultAheadTolerance,
		"show a COMMITTED whose \"at\" runs further than this ahead of the time the broker appended it (/v1/status clockAhead, kcleanup_clock_ahead_commits)")
	f.String(flagWorkerTokens, "", "bearer tokens of the HTTP API's callers: a `file` of \"token,user\" lines (env "+envWorkerTokens+")")
	f.String(flagWorkerTLSCert, "", "serve the HTTP API over TLS with this PEM certificate `file` (env "+envWorkerTLSCert+")")
	f.String(flagWorkerTLSKey, "", "the PEM private key `file` of --"+flagWorkerTLSCert+" (env "+envWorkerTLSKey+")")
	f.String(flagWorkerClientCA, "", "authenticate callers by client certificates signed by the CA in this PEM `file` (mutual TLS; env "+envWorkerClientCA+")")
	f.StringArray(flagWorkerCkptRoot, nil, "a `location` under which POST /v1/validate may read a checkpoint named in a request, and the owner may list and read the locations a retention policy watches (repeatable: an absolute directory, file:///dir, s3://bucket or s3://bucket/prefix; none by default: such requests are refused, and a policy is blocked)")
	f.Bool(flagWorkerProtect, false, "the read-only endpoints (status, validation, console, metrics) need an authenticated caller too; the probes stay open")
	return cmd
}

// --clock-tolerance, on worker, status and doctor.
const flagClockTolerance = "clock-tolerance"

// parseWorkerFlags resolves the worker's flags with their environment fallbacks. Every problem
// is a usage error.
func parseWorkerFlags(cmd *cobra.Command, g globalOptions) (workerOptions, error) {
	var o workerOptions
	if g.controlTopic != "" {
		o.topics = append(o.topics, g.controlTopic)
	}
	// A string slice prints as "[a,b]", so lookupSetting is asked only for the environment.
	raw, _, err := lookupSetting(cmd, flagWorkerTopics, envWorkerTopics, "")
	if err != nil {
		return o, err
	}
	if cmd.Flags().Changed(flagWorkerTopics) {
		list, _ := cmd.Flags().GetStringSlice(flagWorkerTopics)
		raw = strings.Join(list, ",")
	}
	for _, t := range strings.Split(raw, ",") {
		if t = strings.TrimSpace(t); t != "" {
			o.topics = append(o.topics, t)
		}
	}
	if o.regex, _, err = lookupSetting(cmd, flagWorkerRegex, envWorkerRegex, ""); err != nil {
		return o, err
	}
	o.discover, _ = cmd.Flags().GetDuration(flagWorkerDiscover)
	switch {
	case o.regex != "" && len(o.topics) > 0:
		return o, usageError(errors.WithHint(errors.Newf("control topics are given both by name (%s) and by --%s %q", strings.Join(o.topics, ","), flagWorkerRegex, o.regex),
			"give --control-topic(s) or --"+flagWorkerRegex+", not both: the expression can match the named topics too"))
	case o.regex != "":
		if _, err := regexp.Compile(o.regex); err != nil {
			return o, usageError(errors.WithHint(errors.Newf("invalid --%s %q: %v", flagWorkerRegex, o.regex, err),
				`give a Go regular expression (RE2 syntax), for example '^.*\.kcleanup$' for every topic ending in .kcleanup`))
		}
		if o.discover <= 0 {
			return o, usageError(errors.Newf("invalid --%s %s: want a positive duration", flagWorkerDiscover, o.discover))
		}
	case len(o.topics) == 0:
		return o, usageError(errors.WithHint(errors.New("no control topic to serve"),
			"give --control-topic <topic>, --control-topics a,b for several, or --"+flagWorkerRegex+" RE for every matching one"))
	}
	if o.group, _, err = lookupSetting(cmd, flagWorkerGroup, envWorkerGroup, ""); err != nil {
		return o, err
	}
	o.group = strings.TrimSpace(o.group)
	if o.httpAddr, _, err = lookupSetting(cmd, flagWorkerHTTPAddr, envWorkerHTTPAddr, defaultHTTPAddr); err != nil {
		return o, err
	}
	var src string
	if o.replica, src, err = lookupSetting(cmd, flagWorkerReplica, envWorkerReplica, ""); err != nil {
		return o, err
	}
	if err := daemon.CheckReplicaName(o.replica); o.replica != "" && err != nil {
		return o, usageError(errors.Wrapf(err, "invalid %s", src))
	}

	raw, src, err = lookupSetting(cmd, flagWorkerLogFormat, envWorkerLogFormat, "text")
	if err != nil {
		return o, err
	}
	switch o.logFormat = strings.ToLower(strings.TrimSpace(raw)); o.logFormat {
	case "text", "json":
	default:
		return o, usageError(errors.WithHint(errors.Newf("invalid %s %q: allowed values are text and json", src, raw),
			"text for people, json for a log collector"))
	}
	if raw, src, err = lookupSetting(cmd, flagWorkerLogLevel, envWorkerLogLevel, "info"); err != nil {
		return o, err
	}
	if err := o.logLevel.UnmarshalText([]byte(strings.TrimSpace(raw))); err != nil {
		return o, usageError(errors.WithHint(errors.Newf("invalid %s %q: allowed values are debug, info, warn and error", src, raw),
			"for example --log-level info (the default)"))
	}
	o.session, _ = cmd.Flags().GetDuration(flagWorkerSession)
	o.heartbeat, _ = cmd.Flags().GetDuration(flagWorkerHeartbeat)
	o.blockedRetry, _ = cmd.Flags().GetDuration(flagWorkerBlocked)
	for name, d := range map[string]time.Duration{flagWorkerSession: o.session, flagWorkerHeartbeat: o.heartbeat, flagWorkerBlocked: o.blockedRetry} {
		if d <= 0 {
			return o, usageError(errors.Newf("invalid --%s %s: want a positive duration", name, d))
		}
	}
	if o.tombstoneScanLimit, _ = cmd.Flags().GetInt64(flagWorkerTombstone); o.tombstoneScanLimit < 0 {
		return o, usageError(errors.Newf("invalid --%s %d: want a number of records, or 0 for no limit", flagWorkerTombstone, o.tombstoneScanLimit))
	}
	if o.restoreGrace, err = restoreGrace(cmd); err != nil {
		return o, err
	}
	if o.clockTolerance, _ = cmd.Flags().GetDuration(flagClockTolerance); o.clockTolerance < 0 {
		return o, usageError(errors.Newf("invalid --%s %s: negative", flagClockTolerance, o.clockTolerance))
	}
	for _, s := range []struct {
		flag, env string
		to        *string
	}{{flagWorkerTokens, envWorkerTokens, &o.auth.TokenFile}, {flagWorkerTLSCert, envWorkerTLSCert, &o.auth.CertFile},
		{flagWorkerTLSKey, envWorkerTLSKey, &o.auth.KeyFile}, {flagWorkerClientCA, envWorkerClientCA, &o.auth.ClientCAFile}} {
		if *s.to, _, err = lookupSetting(cmd, s.flag, s.env, ""); err != nil {
			return o, err
		}
	}
	o.auth.ProtectReads, _ = cmd.Flags().GetBool(flagWorkerProtect)
	roots, _ := cmd.Flags().GetStringArray(flagWorkerCkptRoot)
	if o.checkpointRoots, err = store.ParseRoots(roots); err != nil {
		return o, usageError(errors.WithHint(err, "give an absolute directory, file:///dir, s3://bucket or s3://bucket/prefix"))
	}
	if err := o.auth.Check(); err != nil {
		return o, usageError(err)
	}
	if o.heartbeat >= o.session {
		// Checked before connecting: the group would evict the member
		// between two heartbeats, and it would own nothing.
		return o, usageError(errors.WithHint(errors.Newf("--%s %s must be below --%s %s",
			flagWorkerHeartbeat, o.heartbeat, flagWorkerSession, o.session), daemon.HeartbeatHint(o.session)))
	}
	return o, nil
}

// newLogger writes structured logs to w (stderr: stdout is for results).
func newLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	ho := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, ho))
	}
	return slog.New(slog.NewTextHandler(w, ho))
}

// runWorker runs the daemon until the command's context ends (SIGTERM, Ctrl-C). A shutdown
// is a success: exit 0.
func runWorker(cmd *cobra.Command, g globalOptions, o workerOptions) error {
	log := newLogger(cmd.ErrOrStderr(), o.logFormat, o.logLevel)
	auth, err := httpauth.New(o.auth)
	if err != nil {
		return err
	}
	c, err := g.connectLazy()
	if err != nil {
		return err
	}
	defer c.Close()
	serve := daemon.WithControlTopics(o.topics...)
	if o.regex != "" {
		serve = daemon.WithControlTopicRegex(o.regex)
	}
	opts := []daemon.Option{
		serve,
		daemon.WithDiscoveryInterval(o.discover),
		daemon.WithGroup(o.group),
		daemon.WithHTTPAddr(o.httpAddr),
		daemon.WithHTTPAuth(auth),
		daemon.WithCheckpointRoots(o.checkpointRoots),
		daemon.WithReplicaName(o.replica),
		console.Mount(), // the operator console at /
		daemon.WithLogger(log),
		daemon.WithGroupTimings(o.session, o.heartbeat, 0),
		daemon.WithBlockedRetry(o.blockedRetry),
		daemon.WithTombstoneScanLimit(o.tombstoneScanLimit),
		daemon.WithRestoreGrace(o.restoreGrace),
		daemon.WithClockTolerance(o.clockTolerance),
		daemon.WithBootstrap(g.bootstrap()),
	}
	d, err := daemon.New(c, opts...)
	if errors.Is(err, daemon.ErrConfig) {
		return usageError(err)
	}
	if err != nil {
		return err
	}
	return d.Run(cmd.Context())
}
