package daemon

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/checkpoint/store"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
	"github.com/kcleanup/kcleanup/worker/httpauth"
)

// Daemon is one replica of the worker fleet (`kcleanup worker`). Replicas
// join one Kafka consumer group over the control topics they serve, and use
// it only to decide who acts: the replica that owns a control topic's single
// partition finishes every COMMITTED or DELETING operation on it with
// Cluster.Finish, exactly as apply does. Every replica keeps a read-only
// projection of every control topic it serves, for /v1/status, /v1/validate,
// readiness and metrics.
//
// Ownership is an optimisation, not a safety mechanism: a paused owner that
// wakes up after another replica took over can only repeat idempotent steps
// (docs/design.md §6).
type Daemon struct {
	cluster *worker.Cluster
	cfg     daemonConfig
	log     *slog.Logger
	metrics *metrics
	// registry serves /metrics (prometheus/client_golang).
	registry *prometheus.Registry

	// views holds one view per served control topic: fixed at New for
	// WithControlTopics, added as they are found for WithControlTopicRegex
	// (discover.go). served lists their topics: as given, or sorted.
	viewsMu      sync.RWMutex
	views        map[string]*view
	served       []string
	viewsStarted bool            // Run started reading: a new view starts at once
	notShaped    map[string]bool // matched by the regex but not control topics (logged once)
	viewsWG      sync.WaitGroup  // view readers and the loops beside them
	// reads bounds the background reads (view refreshes, owner passes) in
	// flight at once: a replica that starts with a thousand control topics
	// reads them a few at a time instead of all at once (docs/benchmarks.md,
	// B6). Validate requests do not wait for it.
	reads chan struct{}

	mu       sync.Mutex
	group    groupState               // whether the consumer group admitted this member
	owners   map[string]*owner        // control topics this replica owns now
	unowned  map[string]*unownedTopic // assigned, not owned: settings unread (retryOwn)
	stopping bool                     // shutdown began: take no new work, not ready
	wg       sync.WaitGroup           // runners
	runCtx   context.Context          // parent of runners and views; ends after they stopped

	groupDenied atomic.Pointer[string]             // why the group refused us (missing ACL); nil once assigned
	descriptors atomic.Pointer[string]             // protocol.DescriptorShortfall at the last check
	memory      atomic.Pointer[string]             // protocol.MemoryShortfall at the last check
	fleet       atomic.Pointer[report.FleetStatus] // the group as last described, for /v1/status
}

// daemonConfig holds the settings of a Daemon; Option functions set it.
type daemonConfig struct {
	group         string
	topics        []string
	pattern       string         // WithControlTopicRegex
	regex         *regexp.Regexp // compiled pattern, nil without
	discoverEvery time.Duration
	httpAddr      string
	pages         []pageConfig
	actor         string
	replica       string    // WithReplicaName: the fleet table's name for this replica
	startedAt     time.Time // when New configured it: the fleet table's "started"
	logger        *slog.Logger

	sessionTimeout    time.Duration
	heartbeatInterval time.Duration
	rebalanceTimeout  time.Duration

	pollInterval     time.Duration
	readTimeout      time.Duration
	readyWindow      time.Duration
	operationTimeout time.Duration
	backoffMin       time.Duration
	backoffMax       time.Duration
	blockedRetry     time.Duration
	grace            time.Duration
	bootstrap        string
	// tombstoneScanLimit bounds each pass of the tombstone watch (records).
	tombstoneScanLimit int64
	// restoreGrace: no deletion before this long after the mirror showed
	// the plan (protocol.RestoreGrace; 0: off).
	restoreGrace time.Duration
	// clockTolerance: a COMMITTED stamped further ahead of its broker time
	// is shown (status, metrics).
	clockTolerance time.Duration
	// rereadAfter: a projection showing a disputed conflict is read afresh
	// at most this often (protocol.RetractionGrace; tests shorten it).
	rereadAfter time.Duration
	// auth names the callers of the HTTP API (nil: nobody is authenticated,
	// so requests that act for a caller are refused).
	auth *httpauth.Authenticator
	// checkpointRoots are where POST /v1/validate may read a checkpoint
	// (--checkpoint-root; none: nowhere).
	checkpointRoots store.Roots
}

// Defaults of a Daemon. The group timings make failover take about the
// session timeout plus a heartbeat: 6 s is the smallest session timeout a
// broker accepts by default (group.min.session.timeout.ms).
const (
	DefaultSessionTimeout    = 6 * time.Second
	DefaultHeartbeatInterval = 1 * time.Second
	DefaultRebalanceTimeout  = 10 * time.Second
	DefaultPollInterval      = 500 * time.Millisecond
	DefaultReadyWindow       = 5 * time.Second
	DefaultBackoffMin        = 500 * time.Millisecond
	DefaultBackoffMax        = 30 * time.Second
	DefaultBlockedRetry      = 2 * time.Minute
	DefaultShutdownGrace     = 5 * time.Second
	DefaultOperationTimeout  = time.Minute
	DefaultReadTimeout       = 10 * time.Second
)

// Option configures a Daemon.
type Option func(*daemonConfig)

// WithGroup sets the consumer group. Default: GroupFor(first control topic).
func WithGroup(group string) Option { return func(c *daemonConfig) { c.group = group } }

// WithControlTopics adds control topics to serve; at least one is required.
func WithControlTopics(topics ...string) Option {
	return func(c *daemonConfig) { c.topics = append(c.topics, topics...) }
}

// WithControlTopicRegex serves every control topic whose name matches the
// regular expression (Go syntax, matched anywhere in the name: anchor it
// with ^ and $), those created later too, found within the discovery
// interval (WithDiscoveryInterval). The consumer group spreads them over the
// replicas. It replaces WithControlTopics.
func WithControlTopicRegex(pattern string) Option {
	return func(c *daemonConfig) { c.pattern = pattern }
}

// WithDiscoveryInterval sets how often a replica serving control topics by
// a regular expression lists the cluster's topics for new ones.
func WithDiscoveryInterval(d time.Duration) Option {
	return func(c *daemonConfig) { c.discoverEvery = orDefault(d, c.discoverEvery) }
}

// WithLogger sets the structured logger. Default: slog.Default().
func WithLogger(l *slog.Logger) Option { return func(c *daemonConfig) { c.logger = l } }

// WithHTTPAddr makes Run serve Handler on addr ("host:port"; port 0 picks
// one, logged as "http listening"). Default: no HTTP server.
func WithHTTPAddr(addr string) Option { return func(c *daemonConfig) { c.httpAddr = addr } }

// WithHTTPAuth authenticates the HTTP API's callers (worker/httpauth): a
// request that makes the worker write or read on a caller's behalf needs
// one; the read-only endpoints too when the configuration protects reads.
// It also makes the server speak TLS when a certificate is configured.
// Default: no caller is authenticated, and such requests are refused (403).
func WithHTTPAuth(a *httpauth.Authenticator) Option { return func(c *daemonConfig) { c.auth = a } }

// WithCheckpointRoots lets POST /v1/validate read checkpoints under roots
// (and nowhere else: every file a checkpoint names is held to them too).
// Default: none, and a request naming a checkpoint is refused (403).
func WithCheckpointRoots(roots store.Roots) Option {
	return func(c *daemonConfig) { c.checkpointRoots = roots }
}

// WithPage serves, next to the API, the handler page(d) builds on the
// daemon for each of patterns (http.ServeMux patterns such as "GET /{$}").
// The console uses it: it renders only d.WorkerStatus(), what /v1/status
// serves. Patterns with a method and a path, not a catch-all "/", keep the
// API's answer to a wrong method (405 with Allow) from becoming the page's 404.
func WithPage(page func(d *Daemon) http.Handler, patterns ...string) Option {
	return func(c *daemonConfig) { c.pages = append(c.pages, pageConfig{patterns, page}) }
}

// pageConfig is one WithPage.
type pageConfig struct {
	patterns []string
	page     func(d *Daemon) http.Handler
}

// WithReplicaName names this replica in the fleet every replica describes
// (/v1/status fleet.members[].replica, the console's fleet table): a pod
// name, or the address operators reach it at. Default: the hostname. It
// travels in the group member's client ID (MemberClientID), the one field
// of a member the group coordinator shows everyone.
func WithReplicaName(name string) Option { return func(c *daemonConfig) { c.replica = name } }

// WithActor names this replica in the control records it writes. Default:
// "worker/" + Actor().
func WithActor(actor string) Option { return func(c *daemonConfig) { c.actor = actor } }

// WithGroupTimings overrides the consumer-group session timeout, heartbeat
// interval and rebalance timeout (zero keeps a default).
func WithGroupTimings(session, heartbeat, rebalance time.Duration) Option {
	return func(c *daemonConfig) {
		c.sessionTimeout = orDefault(session, c.sessionTimeout)
		c.heartbeatInterval = orDefault(heartbeat, c.heartbeatInterval)
		c.rebalanceTimeout = orDefault(rebalance, c.rebalanceTimeout)
	}
}

// WithPollInterval sets how often a projection looks for new control records.
func WithPollInterval(d time.Duration) Option {
	return func(c *daemonConfig) { c.pollInterval = orDefault(d, c.pollInterval) }
}

// WithReadyWindow sets how recently every served control topic must have
// been read to its end for /readyz to answer 200.
func WithReadyWindow(d time.Duration) Option {
	return func(c *daemonConfig) { c.readyWindow = orDefault(d, c.readyWindow) }
}

// WithBackoff sets the capped exponential backoff of transient failures.
func WithBackoff(min, max time.Duration) Option {
	return func(c *daemonConfig) {
		c.backoffMin, c.backoffMax = orDefault(min, c.backoffMin), orDefault(max, c.backoffMax)
	}
}

// WithBlockedRetry sets how long a blocked operation waits before the next
// attempt (its cause may have gone away).
func WithBlockedRetry(d time.Duration) Option {
	return func(c *daemonConfig) { c.blockedRetry = orDefault(d, c.blockedRetry) }
}

// WithShutdownGrace bounds how long a step in flight may run on after
// shutdown or a revocation began; after it the step is abandoned (safe:
// every step is idempotent).
func WithShutdownGrace(d time.Duration) Option {
	return func(c *daemonConfig) { c.grace = orDefault(d, c.grace) }
}

// WithOperationTimeout bounds one attempt to finish one operation.
func WithOperationTimeout(d time.Duration) Option {
	return func(c *daemonConfig) { c.operationTimeout = orDefault(d, c.operationTimeout) }
}

// WithReadTimeout bounds one read of a control topic to its end; a read that
// does not finish in time leaves the view not caught up (it resumes where it
// stopped).
func WithReadTimeout(d time.Duration) Option {
	return func(c *daemonConfig) { c.readTimeout = orDefault(d, c.readTimeout) }
}

// WithBootstrap is quoted in operator hints (the exact commands to run).
func WithBootstrap(servers string) Option {
	return func(c *daemonConfig) { c.bootstrap = servers }
}

func orDefault(v, def time.Duration) time.Duration {
	if v > 0 {
		return v
	}
	return def
}

// HeartbeatHint is the fix for a heartbeat interval at or above the
// session timeout: Kafka's advice is at most a third of it.
func HeartbeatHint(session time.Duration) string {
	return fmt.Sprintf("give --heartbeat-interval at most a third of --session-timeout (%s for --session-timeout=%s), or raise --session-timeout",
		max(session/3, time.Millisecond).Round(time.Millisecond), session)
}

// maxConcurrentReads is the size of Daemon.reads.
const maxConcurrentReads = 16

// readSlot waits for a background read slot; false when ctx ended first.
func (d *Daemon) readSlot(ctx context.Context) bool {
	select {
	case d.reads <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (d *Daemon) releaseRead() { <-d.reads }

// GroupForRegex is the default consumer group of a fleet that serves the
// control topics matching pattern.
func GroupForRegex(pattern string) string { return "kcleanup-worker.regex." + pattern }

// GroupFor is the default consumer group of a fleet whose first control
// topic is controlTopic.
func GroupFor(controlTopic string) string { return "kcleanup-worker." + controlTopic }

// ErrConfig marks an invalid Daemon configuration.
var ErrConfig = errors.New("invalid worker configuration")

// WithTombstoneScanLimit bounds how many data records one pass of an
// owner's tombstone watch reads (default worker.DefaultTombstoneScanLimit;
// 0: no limit; the next pass reads on, and nothing is deleted until the
// watch has read to the end).
func WithTombstoneScanLimit(records int64) Option {
	return func(c *daemonConfig) {
		if records >= 0 {
			c.tombstoneScanLimit = records
		}
	}
}

// WithRestoreGrace sets this replica's own restore grace (--restore-grace):
// it may only lengthen the grace the mirror's attachment carries, which
// every owner waits out anyway (protocol.MirrorGrace): no DeleteRecords for
// a plan before the grace has passed since the mirror's record of it was
// acknowledged (protocol.RestoreGrace). The owner does not hold the
// operation meanwhile: it retries it when the grace is out, and serves
// everything else. Default 0: the attachment's alone.
func WithRestoreGrace(d time.Duration) Option {
	return func(c *daemonConfig) { c.restoreGrace = d }
}

// WithClockTolerance sets how far a COMMITTED's "at" may run ahead of the
// time the broker appended it before /v1/status and the metrics show it
// (--clock-tolerance; default report.DefaultAheadTolerance).
func WithClockTolerance(d time.Duration) Option {
	return func(c *daemonConfig) { c.clockTolerance = d }
}

// New configures a replica. It connects to nothing until Run.
func New(c *worker.Cluster, opts ...Option) (*Daemon, error) {
	cfg := daemonConfig{
		sessionTimeout:    DefaultSessionTimeout,
		heartbeatInterval: DefaultHeartbeatInterval,
		rebalanceTimeout:  DefaultRebalanceTimeout,
		pollInterval:      DefaultPollInterval,
		discoverEvery:     DefaultDiscoveryInterval,
		readTimeout:       DefaultReadTimeout,
		readyWindow:       DefaultReadyWindow,
		operationTimeout:  DefaultOperationTimeout,
		backoffMin:        DefaultBackoffMin,
		backoffMax:        DefaultBackoffMax,
		blockedRetry:      DefaultBlockedRetry,
		rereadAfter:       protocol.RetractionGrace,
		grace:             DefaultShutdownGrace,

		tombstoneScanLimit: worker.DefaultTombstoneScanLimit,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.replica == "" {
		cfg.replica = hostname()
	}
	cfg.startedAt = time.Now().UTC().Truncate(time.Second)
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.pattern != "" {
		cfg.regex = regexp.MustCompile(cfg.pattern) // check compiled it
	}
	if cfg.group == "" && cfg.regex != nil {
		cfg.group = GroupForRegex(cfg.pattern)
	} else if cfg.group == "" {
		cfg.group = GroupFor(cfg.topics[0])
	}
	if cfg.actor == "" {
		cfg.actor = "worker/" + worker.Actor()
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	d := &Daemon{
		cluster: c,
		cfg:     cfg,
		log:     cfg.logger,
		metrics: newMetrics(),
		views:   map[string]*view{},
		reads:   make(chan struct{}, maxConcurrentReads),
		owners:  map[string]*owner{},
	}
	for _, t := range cfg.topics {
		d.views[t] = newView(d, t)
	}
	d.served = slices.Clone(cfg.topics) // in the order given; found by regex: sorted
	d.registry = d.metrics.registry(d, cfg.topics)
	return d, nil
}

func (cfg daemonConfig) check() error {
	bad := func(format string, args ...any) error {
		return errors.Mark(errors.Newf(format, args...), ErrConfig)
	}
	if cfg.pattern != "" {
		if len(cfg.topics) > 0 {
			return errors.WithHint(bad("control topics are given both by name (%v) and by regular expression (%q)", cfg.topics, cfg.pattern),
				"give --control-topic(s) or --control-topic-regex, not both: the expression can match the named topics too")
		}
		if _, err := regexp.Compile(cfg.pattern); err != nil {
			return errors.WithHint(bad("control topic regex %q does not compile: %v", cfg.pattern, err),
				"give a Go regular expression (RE2 syntax), such as '^.*\\.kcleanup$' for every topic ending in .kcleanup")
		}
	} else if len(cfg.topics) == 0 {
		return errors.WithHint(bad("no control topic to serve"), "give --control-topic once per control topic, or --control-topic-regex")
	}
	seen := map[string]bool{}
	for _, t := range cfg.topics {
		if strings.TrimSpace(t) == "" || t != strings.TrimSpace(t) {
			return bad("control topic %q is not a topic name", t)
		}
		if seen[t] {
			return bad("control topic %q is given twice", t)
		}
		seen[t] = true
	}
	if err := CheckReplicaName(cfg.replica); err != nil {
		return errors.Mark(err, ErrConfig)
	}
	if cfg.heartbeatInterval >= cfg.sessionTimeout {
		return errors.WithHint(bad("heartbeat interval %s must be below the session timeout %s: the group coordinator would evict the member between two heartbeats",
			cfg.heartbeatInterval, cfg.sessionTimeout), HeartbeatHint(cfg.sessionTimeout))
	}
	if cfg.grace >= cfg.rebalanceTimeout {
		// A revocation waits up to the grace inside the rebalance.
		return bad("shutdown grace %s must be below the rebalance timeout %s", cfg.grace, cfg.rebalanceTimeout)
	}
	if cfg.backoffMin > cfg.backoffMax {
		return bad("backoff minimum %s is above its maximum %s", cfg.backoffMin, cfg.backoffMax)
	}
	if cfg.clockTolerance < 0 {
		return bad("clock tolerance %s is negative", cfg.clockTolerance)
	}
	if cfg.restoreGrace < 0 || cfg.restoreGrace > protocol.MaxRestoreGrace {
		return bad("restore grace %s is outside 0 to %s", cfg.restoreGrace, protocol.MaxRestoreGrace)
	}
	return nil
}

// Group returns the consumer group the replica joins.
func (d *Daemon) Group() string { return d.cfg.group }

// ControlTopics returns the control topics the replica serves now, sorted:
// those named at New, or those found so far by its regular expression.
func (d *Daemon) ControlTopics() []string { return d.servedTopics() }

// Run serves until ctx ends, then shuts down in order: stop taking work,
// let each step in flight end (at most the shutdown grace), leave the group
// so another replica takes over at once, stop reading, stop serving HTTP. A
// shutdown is not an error: Run returns nil after it. It returns an error
// only when it cannot start.
func (d *Daemon) Run(ctx context.Context) error {
	// Views, runners and HTTP outlive ctx until shutdown has drained them.
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()
	d.mu.Lock()
	d.runCtx = runCtx
	d.mu.Unlock()

	for _, t := range d.cfg.topics {
		if err := d.view(t).open(); err != nil {
			d.closeViews()
			return err
		}
	}
	if d.cfg.regex != nil {
		d.discoverOnce(ctx) // the views there are before joining; more come later
	}
	var srv *http.Server
	if d.cfg.httpAddr != "" {
		ln, err := net.Listen("tcp", d.cfg.httpAddr)
		if err != nil {
			d.closeViews()
			return errors.WithHint(errors.Wrapf(err, "listen on %s", d.cfg.httpAddr),
				"choose another --http-addr, or stop the process that uses it")
		}
		srv = &http.Server{Handler: d.Handler(), ReadHeaderTimeout: 10 * time.Second}
		scheme := "http"
		tlsConfig, err := d.cfg.auth.ServerTLS()
		if err != nil {
			_ = ln.Close()
			d.closeViews()
			return err
		}
		if tlsConfig != nil {
			ln, scheme = tls.NewListener(ln, tlsConfig), "https"
		}
		d.log.Info("http listening", "addr", ln.Addr().String(), "scheme", scheme,
			"authenticated_callers", d.cfg.auth.Config().Enabled(), "protect_reads", d.cfg.auth.Config().ProtectReads)
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				d.log.Error("http server stopped", errAttr(err))
			}
		}()
	}
	member, err := d.joinGroup()
	if err != nil {
		d.closeViews()
		if srv != nil {
			_ = srv.Close()
		}
		return err
	}
	d.log.Info("worker started", "group", d.cfg.group, "control_topics", d.servedTopics(), "control_topic_regex", d.cfg.pattern,
		"actor", d.cfg.actor, "session_timeout", d.cfg.sessionTimeout.String(), "heartbeat_interval", d.cfg.heartbeatInterval.String())

	viewsDone := &d.viewsWG
	d.viewsMu.Lock()
	d.viewsStarted = true
	for _, v := range d.views {
		viewsDone.Add(1)
		go func() { defer viewsDone.Done(); v.run(runCtx) }()
	}
	d.viewsMu.Unlock()
	memberDone := make(chan struct{})
	go func() { defer close(memberDone); d.pollMember(runCtx, member) }()
	viewsDone.Add(1)
	go func() { defer viewsDone.Done(); d.describeFleet(runCtx, member) }()
	if d.cfg.regex != nil {
		viewsDone.Add(1)
		go func() { defer viewsDone.Done(); d.discover(runCtx) }()
	}
	viewsDone.Add(1)
	go func() { defer viewsDone.Done(); d.watchEnds(runCtx) }()

	<-ctx.Done()
	d.log.Info("shutting down: no new work; steps in flight may finish", "grace", d.cfg.grace.String())
	d.mu.Lock()
	d.stopping = true
	owned := make([]string, 0, len(d.owners))
	for t := range d.owners {
		owned = append(owned, t)
	}
	d.mu.Unlock()
	for _, t := range owned {
		d.disown(t, d.cfg.grace, "shutdown")
	}
	// Leave the group explicitly so that the coordinator reassigns our
	// partitions now instead of after the session timeout.
	leaveCtx, cancel := context.WithTimeout(context.Background(), d.cfg.sessionTimeout)
	if err := member.LeaveGroupContext(leaveCtx); err != nil {
		d.log.Warn("leave consumer group", "group", d.cfg.group, errAttr(err))
	} else {
		d.log.Info("left consumer group", "group", d.cfg.group)
	}
	cancel()
	stopRun()
	member.Close()
	<-memberDone
	viewsDone.Wait()
	d.wg.Wait()
	d.closeViews()
	if srv != nil {
		shutCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = srv.Shutdown(shutCtx)
		cancel()
	}
	d.log.Info("worker stopped")
	return nil
}

func (d *Daemon) closeViews() {
	for _, v := range d.allViews() {
		v.close()
	}
}

// joinGroup creates the consumer-group member. It never fetches: fetching of
// every control topic is paused, because each owner reads with a projection
// of its own; the group only says who owns which control topic. franz-go
// runs the group (joins, heartbeats, rebalances) in the background whether
// or not the client polls; pollMember only reports the errors it injects.
func (d *Daemon) joinGroup() (*kgo.Client, error) {
	subscribe := []kgo.Opt{kgo.ConsumeTopics(d.cfg.topics...)}
	if d.cfg.regex != nil {
		// franz-go matches the expression against every topic on each
		// metadata refresh: as often as discovery lists them.
		subscribe = []kgo.Opt{kgo.ConsumeRegex(), kgo.ConsumeTopics(d.cfg.pattern),
			kgo.MetadataMinAge(min(d.cfg.discoverEvery, 5*time.Second)), kgo.MetadataMaxAge(d.cfg.discoverEvery)}
	}
	opts := append(d.cluster.ConnOpts(), subscribe...)
	opts = append(opts,
		kgo.ConsumerGroup(d.cfg.group),
		// Who this member is, for every replica's fleet table: the client
		// ID is what the coordinator describes for every member.
		kgo.ClientID(MemberClientID(d.cfg.replica, d.cfg.startedAt)),
		kgo.SessionTimeout(d.cfg.sessionTimeout),
		kgo.HeartbeatInterval(d.cfg.heartbeatInterval),
		kgo.RebalanceTimeout(d.cfg.rebalanceTimeout),
		// Nothing is consumed, so nothing is committed: no OffsetCommit ACL.
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(d.assigned),
		kgo.OnPartitionsRevoked(d.revoked),
		kgo.OnPartitionsLost(d.lost),
	)
	member, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, errors.Wrap(err, "create consumer-group member")
	}
	member.PauseFetchTopics(d.cfg.topics...) // topics found by regex: paused as assigned
	return member, nil
}

// pollMember polls the paused member until ctx ends, to surface group errors
// (authorization, unknown topic) in the log.
func (d *Daemon) pollMember(ctx context.Context, member *kgo.Client) {
	last := ""
	for ctx.Err() == nil {
		fs := member.PollFetches(ctx)
		if fs.IsClientClosed() || ctx.Err() != nil {
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, kerr.GroupAuthorizationFailed) {
				named := d.cluster.GroupDenied(err, d.cfg.group).Error()
				d.groupDenied.Store(&named)
				d.groupRefused(err, named)
				err = errors.New(named)
			} else if gs := (*kgo.ErrGroupSession)(nil); errors.As(err, &gs) {
				d.groupRefused(err, "")
			}
			if msg := err.Error(); msg != last {
				last = msg
				d.log.Warn("consumer group", "group", d.cfg.group, "topic", topic, "partition", p, errAttr(err))
			}
		})
		// A poll returns at once only with errors or stray records; do not spin.
		sleep(ctx, d.cfg.pollInterval)
	}
}

// assigned, revoked and lost run on franz-go's group goroutine; they must
// not call LeaveGroup or Close.
func (d *Daemon) assigned(_ context.Context, member *kgo.Client, m map[string][]int32) {
	d.groupAdmitted()        // franz-go calls this after every join, even with nothing new
	d.groupDenied.Store(nil) // the group let us in
	if d.cfg.regex != nil {
		// Before fetching starts (it does once this returns): the member
		// never fetches, views read with readers of their own.
		member.PauseFetchTopics(slices.Collect(maps.Keys(m))...)
	}
	for topic, ps := range m {
		if slices.Contains(ps, 0) {
			d.own(topic)
		}
	}
}

// revoked lets the step in flight finish (bounded by the grace, which must
// stay below the rebalance timeout): the rebalance waits for it, so in the
// steady state at most one replica acts on a control topic.
func (d *Daemon) revoked(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	for topic := range m {
		d.forgetUnowned(topic)
		d.disown(topic, d.cfg.grace, "revoked")
	}
}

// lost means another replica may already own the topic: abandon at once.
func (d *Daemon) lost(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	for topic := range m {
		d.forgetUnowned(topic)
		d.disown(topic, 0, "lost")
	}
}

// sleep waits for d or until ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// errAttr logs an error by its message: slog's text handler would print
// cockroachdb errors with %+v, stack traces included.
func errAttr(err error) slog.Attr {
	if err == nil {
		return slog.String("err", "")
	}
	return slog.String("err", err.Error())
}
