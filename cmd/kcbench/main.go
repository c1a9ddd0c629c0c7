package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/internal/repo"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		if err := runChildMode(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "kcbench child: %+v\n", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runMain(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "kcbench: %v\n", err)
		os.Exit(1)
	}
}

// config is what a run measures and against what.
type config struct {
	quick     bool
	bootstrap string
	kcleanup  string // path of the kcleanup binary
	root      string // repository root: Kafka's jars and version live under it
	out       string // folder of the JSON results
	only      map[string]bool
	runs      int  // runs per measured subject (medians over them)
	keep      bool // leave the topics on the broker, for a closer look

	replayRecords   int   // B1
	applySizes      []int // B2: partitions of each data topic
	failoverTrials  int   // B3
	planMarkers     int   // B4
	planPartitions  int   // B4
	growthSizes     []int // B5
	replayPlanParts int32 // partitions of the data topic the B1/B5 plans cover
	fleetTopics     int   // control topics the B6 fleet serves
	// B8: measured kills of `kcleanup apply` per case (with and without a mirror)
	mirrorKillTrials int
	followPoints     int // B10: completed checkpoints in the watched location
}

func (c config) wants(bench string) bool { return len(c.only) == 0 || c.only[bench] }

// brokers is how many broker addresses -bootstrap lists (3 with -cluster).
func (c config) brokers() int {
	if c.bootstrap == "" {
		return 0
	}
	return len(strings.Split(c.bootstrap, ","))
}

// benchName is a benchmark's name in the table: on more than one broker it says how many, so
// that a cluster run's rows stand apart from the single broker's (and its goals, which are the
// single broker's, read "not measured").
func (c config) benchName(bench string) string {
	if n := c.brokers(); n > 1 {
		return fmt.Sprintf("%s (%d brokers)", bench, n)
	}
	return bench
}

// sizes for `make bench` and `make bench-quick`. The quick run keeps every
// benchmark but shrinks its inputs, so it finishes in about two minutes.
func fullConfig() config {
	return config{runs: 5, replayRecords: 1_000_000, applySizes: []int{100, 1000, 10000}, failoverTrials: 10,
		planMarkers: 1000, planPartitions: 10000, growthSizes: []int{10_000, 100_000, 1_000_000}, replayPlanParts: 3, fleetTopics: 1000,
		mirrorKillTrials: 20, followPoints: 10000}
}

func quickConfig() config {
	return config{quick: true, runs: 3, replayRecords: 100_000, applySizes: []int{100, 1000}, failoverTrials: 3,
		planMarkers: 100, planPartitions: 10000, growthSizes: []int{10_000, 100_000}, replayPlanParts: 3, fleetTopics: 100,
		mirrorKillTrials: 4, followPoints: 10000}
}

func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kcbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "smaller inputs and fewer trials (make bench-quick)")
	bootstrap := fs.String("bootstrap", os.Getenv("KCLEANUP_TEST_BOOTSTRAP"), "Kafka broker host:port (env KCLEANUP_TEST_BOOTSTRAP)")
	kcleanup := fs.String("kcleanup", "bin/kcleanup", "the kcleanup binary to measure")
	out := fs.String("out", "bench-results", "folder for the JSON results")
	only := fs.String("only", "", "comma-separated subset of B1,B2,B3,B4,B5,B6,B7,B8,B9,B10")
	runs := fs.Int("runs", 0, "runs per subject (default 5, quick 3)")
	applySizes := fs.String("apply-sizes", "", "comma-separated partitions of B2's data topics (default 100,1000,10000; quick 100,1000)")
	keep := fs.Bool("keep", false, "do not delete the topics the run created (to profile against them)")
	cluster := fs.Bool("cluster", false, "measure on the three-broker development cluster ($KCLEANUP_TEST_CLUSTER/bootstrap; make bench-cluster)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kcbench [flags]   (normally: make bench, make bench-quick)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := fullConfig()
	if *quick {
		cfg = quickConfig()
	}
	if *runs > 0 {
		cfg.runs = *runs
	}
	cfg.bootstrap, cfg.out, cfg.keep = *bootstrap, *out, *keep
	if *cluster {
		dir := os.Getenv("KCLEANUP_TEST_CLUSTER")
		b, err := os.ReadFile(filepath.Join(dir, "bootstrap"))
		if dir == "" || err != nil {
			return errors.WithHint(errors.Newf("-cluster: no three-broker cluster at KCLEANUP_TEST_CLUSTER=%q", dir),
				"run `make bench-cluster` (starts the cluster if needed), or cmd/kafkadev/kafka.sh test --brokers 3 ./bin/kcbench -cluster")
		}
		cfg.bootstrap = strings.TrimSpace(string(b))
	}
	if *applySizes != "" {
		cfg.applySizes = nil
		for _, f := range strings.Split(*applySizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				return errors.Newf("-apply-sizes: %q is not a number of partitions", f)
			}
			cfg.applySizes = append(cfg.applySizes, n)
		}
	}
	cfg.only = map[string]bool{}
	for _, b := range strings.Split(*only, ",") {
		if b = strings.ToUpper(strings.TrimSpace(b)); b != "" {
			cfg.only[b] = true
		}
	}
	root, err := repo.Root()
	if err != nil {
		return err
	}
	cfg.root = root
	if cfg.kcleanup, err = filepath.Abs(*kcleanup); err != nil {
		return err
	}
	if cfg.bootstrap == "" && (cfg.wants("B1") || cfg.wants("B2") || cfg.wants("B3") || cfg.wants("B6") || cfg.wants("B7") || cfg.wants("B8")) {
		return errors.WithHint(errors.New("no broker: B1, B2, B3, B6, B7 and B8 need a real Kafka broker"),
			"run `make bench` (starts one if needed), or pass -bootstrap host:port, or -only B4,B5,B9,B10")
	}
	return bench(ctx, cfg, stdout, stderr)
}

// bench runs the selected benchmarks, prints the table and writes the JSON.
// A benchmark that fails is reported and the others still run.
func bench(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	rep := &Report{Version: reportVersion, Started: time.Now().UTC(), Mode: "full"}
	if cfg.quick {
		rep.Mode = "quick"
	}
	rep.Machine = machine(kafkaVersion(cfg.root), cfg.bootstrap)
	rep.Machine.LoadStart = loadAverage()
	rep.Commit = gitCommit(ctx, cfg.root)
	b := &bencher{cfg: cfg, rep: rep, log: stderr,
		prefix: fmt.Sprintf("kcbench-%d", time.Now().Unix())}
	if cfg.bootstrap != "" {
		cl, err := kgo.NewClient(seeds(cfg.bootstrap))
		if err != nil {
			return err
		}
		defer cl.Close()
		b.cl = cl
	}
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "kcbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b.tmp = tmp
	defer b.cleanup()

	b.logf("kcbench %s on %s", rep.Mode, rep.Machine)
	suites := []struct {
		name string
		run  func(context.Context) error
	}{
		// B6 before the longer broker benchmarks: a run stopped at its
		// deadline still has the fleet's figures.
		{"B4", b.plan}, {"B5", b.growth}, {"B6", b.fleet}, {"B1", b.replay}, {"B2", b.apply}, {"B3", b.failover}, {"B7", b.validate}, {"B8", b.mirrorKill},
		{"B9", b.checkpointRead}, {"B10", b.follow},
	}
	for _, s := range suites {
		if !cfg.wants(s.name) {
			continue
		}
		began := time.Now()
		if err := s.run(ctx); err != nil {
			rep.Failures = append(rep.Failures, fmt.Sprintf("%s: %v", s.name, err))
			b.logf("%s FAILED: %v", s.name, err)
		}
		b.logf("%s done in %s", s.name, time.Since(began).Round(time.Second))
		if ctx.Err() != nil {
			break
		}
	}
	rep.Seconds = time.Since(rep.Started).Seconds()
	rep.Machine.LoadEnd = loadAverage()
	rep.Goals = rep.goals()
	fmt.Fprintf(stdout, "kcbench %s, %s, commit %s, %s\n", rep.Mode, rep.Started.Format(time.RFC3339), rep.Commit, rep.Machine)
	if err := rep.WriteTable(stdout); err != nil {
		return err
	}
	path, err := rep.WriteJSON(cfg.out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%s in all)\n", path, time.Duration(rep.Seconds*float64(time.Second)).Round(time.Second))
	if len(rep.Failures) > 0 {
		return errors.Newf("%d benchmark(s) failed", len(rep.Failures))
	}
	return nil
}

// bencher carries what every benchmark needs.
type bencher struct {
	cfg    config
	rep    *Report
	log    io.Writer
	cl     *kgo.Client // admin and producing; nil without a broker
	prefix string      // of every topic this run creates
	tmp    string      // plan and offsets files
	topics []string    // to delete at the end
	procs  []*os.Process
}

func (b *bencher) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func (b *bencher) add(rows ...Row) {
	for _, r := range rows {
		r.Bench = b.cfg.benchName(r.Bench)
		b.rep.Rows = append(b.rep.Rows, r)
	}
}

func (b *bencher) note(format string, args ...any) {
	b.rep.Notes = append(b.rep.Notes, fmt.Sprintf(format, args...))
}

// topic names a topic of this run and remembers to delete it.
func (b *bencher) topic(name string) string {
	t := b.prefix + "-" + name
	b.topics = append(b.topics, t)
	return t
}

// cleanup stops every process this run started and deletes its topics.
func (b *bencher) cleanup() {
	for _, p := range b.procs {
		_ = p.Kill()
		_, _ = p.Wait()
	}
	b.procs = nil
	if b.cfg.keep && len(b.topics) > 0 {
		b.logf("kept topics (-keep): %s", strings.Join(b.topics, " "))
		return
	}
	if b.cl != nil && len(b.topics) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := deleteTopics(ctx, b.cl, b.topics...); err != nil {
			b.logf("cleanup: %v", err)
		}
		b.topics = nil
	}
}

// drop deletes a benchmark's topics when it is done with them, to free the
// broker for the next one; with -keep it leaves them for a closer look.
func (b *bencher) drop(ctx context.Context, topics ...string) error {
	if b.cfg.keep {
		return nil
	}
	return deleteTopics(ctx, b.cl, topics...)
}

// gitCommit names the commit of the working tree, "+dirty" when it has
// uncommitted changes; "unknown" without git.
func gitCommit(ctx context.Context, root string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	commit := strings.TrimSpace(string(out))
	if st, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		commit += "+dirty"
	}
	return commit
}

// kafkaVersion is the Apache Kafka version cmd/kafkadev pins.
func kafkaVersion(root string) string {
	data, err := os.ReadFile(filepath.Join(root, "cmd", "kafkadev", "pom.xml"))
	if err != nil {
		return "unknown"
	}
	s := string(data)
	i := strings.Index(s, "<kafka.version>")
	j := strings.Index(s, "</kafka.version>")
	if i < 0 || j < i {
		return "unknown"
	}
	return s[i+len("<kafka.version>") : j]
}
