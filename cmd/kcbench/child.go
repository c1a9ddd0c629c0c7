package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// Child modes: `kcbench child MODE FLAGS` runs one measured subject in a
// process of its own and prints a childResult line. The parent measures the
// process (wall time, peak RSS); the child measures its own section, without
// process start-up.
//
//	read    -bootstrap B -topic T          floor of B1: bare franz-go read to the end
//	project -bootstrap B -topic T          B1 as a library: worker.Cluster.Project
//	delete  -bootstrap B -plan F           floor of B2: DeleteRecords + list start offsets
//	apply   -bootstrap B -control-topic C -plan F   B2 as a library: Cluster.Apply
//	growth  -records N -runs R [-profile F] [-audit] B5: fold of pre-encoded records in process
//	plan    -markers M -partitions P -runs R        B4: events.BuildPlan
//	checkpoint -path P -uid U                      B9 as a library: store.Open + checkpoint.Read
func runChildMode(args []string) error {
	if len(args) == 0 {
		return errors.New("child: missing mode")
	}
	fs := flag.NewFlagSet("child "+args[0], flag.ContinueOnError)
	bootstrap := fs.String("bootstrap", "", "broker")
	topic := fs.String("topic", "", "topic")
	control := fs.String("control-topic", "", "control topic")
	planFile := fs.String("plan", "", "plan file")
	records := fs.Int("records", 0, "records")
	runs := fs.Int("runs", 3, "runs")
	profile := fs.String("profile", "", "heap profile path")
	markers := fs.Int("markers", 0, "markers")
	partitions := fs.Int("partitions", 0, "partitions")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the child here")
	audit := fs.Bool("audit", false, "growth: keep the per-record audit, as history's projection does")
	cpPath := fs.String("path", "", "checkpoint: a checkpoint directory or its _metadata; follow: the watched location")
	uid := fs.String("uid", "", "checkpoint: the marker operator's uid")
	points := fs.Int("points", 0, "follow: the checkpoints laid out under -path")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var res childResult
	var err error
	switch args[0] {
	case "read":
		res, err = childRead(ctx, *bootstrap, *topic)
	case "project":
		res, err = childProject(ctx, *bootstrap, *topic)
	case "delete":
		res, err = childDelete(ctx, *bootstrap, *planFile)
	case "apply":
		res, err = childApply(ctx, *bootstrap, *control, *planFile)
	case "growth":
		res, err = childGrowth(*records, *runs, *profile, *audit)
	case "plan":
		res, err = childPlan(*markers, *partitions, *runs)
	case "checkpoint":
		res, err = childCheckpoint(ctx, *cpPath, *uid)
	case "follow":
		res, err = childFollow(ctx, *cpPath, *points, *runs)
	default:
		return errors.Newf("child: unknown mode %q", args[0])
	}
	if err != nil {
		return err
	}
	res["maxRssMB"] = selfMaxRSSMB()
	return printChild(res)
}

// childRead is the floor of B1: what any franz-go consumer must do to read a
// partition to its end (connect, list the end offset, fetch until there).
func childRead(ctx context.Context, bootstrap, topic string) (childResult, error) {
	began := time.Now()
	cl, err := kgo.NewClient(seeds(bootstrap),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, errors.Wrap(err, "list end offset")
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || end.Err != nil {
		return nil, errors.Newf("list end offset of %s: %v", topic, end.Err)
	}
	var n, next int64
	for next < end.Offset {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil && !kerr.IsRetriable(ferr) {
			return nil, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			next = r.Offset + 1
		})
	}
	return childResult{"seconds": time.Since(began).Seconds(), "records": float64(n)}, nil
}

// childProject is B1 through the library: a fresh projection read to its end.
func childProject(ctx context.Context, bootstrap, topic string) (childResult, error) {
	began := time.Now()
	c, err := worker.Connect(seeds(bootstrap))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	p, err := c.Project(ctx, topic)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	took := time.Since(began)
	// Counted, not exported: Operations() would build every operation's
	// exported form and add it to this process's peak RSS (B1's row).
	ops := 0
	for _, n := range p.State.OperationCounts() {
		ops += n
	}
	res := childResult{
		"seconds":    took.Seconds(),
		"records":    float64(p.Next),
		"operations": float64(ops),
		"rejected":   float64(len(p.State.Rejected())),
	}
	res["heapMB"] = heapAfterGC()
	runtime.KeepAlive(p)
	return res, nil
}

func readPlan(path string) (events.Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return events.Plan{}, err
	}
	return events.ParsePlan(data)
}

// childDelete is the floor of B2: one DeleteRecords request for every
// partition and one ListOffsets to see that it took. Nothing else: no
// checks, no control topic.
func childDelete(ctx context.Context, bootstrap, planFile string) (childResult, error) {
	plan, err := readPlan(planFile)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	cl, err := kgo.NewClient(seeds(bootstrap))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	to := kadm.Offsets{}
	for p, o := range plan.Offsets {
		to.AddOffset(plan.Topic, p, o, -1)
	}
	resp, err := adm.DeleteRecords(ctx, to)
	if err != nil {
		return nil, errors.Wrap(err, "delete records")
	}
	if err := resp.Error(); err != nil {
		return nil, errors.Wrap(err, "delete records")
	}
	starts, err := adm.ListStartOffsets(ctx, plan.Topic)
	if err != nil {
		return nil, errors.Wrap(err, "list start offsets")
	}
	took := time.Since(began)
	for p, o := range plan.Offsets {
		got, ok := starts.Lookup(plan.Topic, p)
		if !ok || got.Err != nil || got.Offset < o {
			return nil, errors.Newf("%s-%d: log start %d (err %v), wanted ≥ %d", plan.Topic, p, got.Offset, got.Err, o)
		}
	}
	return childResult{"seconds": took.Seconds(), "partitions": float64(len(plan.Offsets))}, nil
}

// childApply is B2 through the library: the whole protocol of Cluster.Apply
// on a fresh projection, as `kcleanup apply` runs it minus the CLI.
func childApply(ctx context.Context, bootstrap, control, planFile string) (childResult, error) {
	plan, err := readPlan(planFile)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	// Every client the library makes from the cluster's options (readers,
	// the mirror's transactional writers) carries the hook: what an apply
	// costs in requests, connections and clients, free of the machine's load.
	count := &wireCounter{}
	c, err := worker.Connect(seeds(bootstrap), kgo.WithHooks(count))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	p, err := c.Project(ctx, control)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	res := childResult{"step project": time.Since(began).Seconds()}
	defer count.report(res)
	// Time each step of the protocol: from the previous step's report to
	// this one's (Observe is called as each step completes).
	last := time.Now()
	observe := func(pr protocol.Progress) {
		now := time.Now()
		res["step "+pr.Step] += now.Sub(last).Seconds()
		last = now
	}
	// And the time of each kind of protocol step executed (a mirror's reads
	// and writes among them), summed over the run.
	took := func(kind string, d time.Duration) { res["took "+kind] += d.Seconds(); res["count "+kind]++ }
	out, err := c.Apply(ctx, p, plan, worker.Options{Actor: "kcbench/apply", Observe: observe, StepTook: took})
	if err != nil {
		return nil, err
	}
	if out.State != fsm.Applied {
		return nil, errors.Newf("plan %s ended %s, not APPLIED", plan.PlanID, out.State)
	}
	res["seconds"] = time.Since(began).Seconds()
	return res, nil
}

// wireCounter counts what a child's clients send: clients made, broker
// connections opened, requests written (by API).
type wireCounter struct {
	clients, connections, requests atomic.Int64
	mu                             sync.Mutex
	byKey                          map[int16]int
}

func (w *wireCounter) OnNewClient(*kgo.Client) { w.clients.Add(1) }

func (w *wireCounter) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		w.connections.Add(1)
	}
}

func (w *wireCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	w.requests.Add(1)
	w.mu.Lock()
	if w.byKey == nil {
		w.byKey = map[int16]int{}
	}
	w.byKey[key]++
	w.mu.Unlock()
}

// report adds the counts to a child's result.
func (w *wireCounter) report(res childResult) {
	res["clients"], res["connections"], res["requests"] = float64(w.clients.Load()), float64(w.connections.Load()), float64(w.requests.Load())
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, n := range w.byKey {
		res["requests "+kmsg.NameForKey(k)] = float64(n)
	}
}

// growthBatch is about one fetch of B1's reader (1 MB of 600-byte records).
const growthBatch = 2000

// childGrowth is B5: it folds n pre-encoded records into a fresh projection
// runs times, and reports the fold's rate, what the projection retains once
// folded (live heap after GC, input excluded) and what allocates it.
func childGrowth(n, runs int, profilePath string, audit bool) (childResult, error) {
	var opts []projector.Option
	if audit {
		opts = append(opts, projector.KeepAudit())
	}
	if n <= 0 || runs <= 0 {
		return nil, errors.New("growth: -records and -runs must be positive")
	}
	recs := newControlLog("action-state", benchTopicID, 3).Records(n)
	base := heapAfterGC()
	res := childResult{}
	var s *projector.State
	var ms0, ms1 runtime.MemStats
	for i := range runs {
		s = nil
		runtime.GC()
		runtime.ReadMemStats(&ms0)
		began := time.Now()
		s = projector.New(opts...)
		// As a worker's reader folds: each fetch-sized batch decoded on
		// every core, then folded in offset order without verdict texts.
		decoders := projector.NewDecoders(runtime.GOMAXPROCS(0))
		for lo := 0; lo < len(recs); lo += growthBatch {
			for _, d := range decoders.DecodeAll(recs[lo:min(lo+growthBatch, len(recs))]) {
				s.StepDecodedLean(d)
			}
		}
		took := time.Since(began)
		runtime.ReadMemStats(&ms1)
		res[fmt.Sprintf("seconds.%d", i)] = took.Seconds()
		res["allocsPerRecord"] = float64(ms1.Mallocs-ms0.Mallocs) / float64(n)
		res["allocBytesPerRecord"] = float64(ms1.TotalAlloc-ms0.TotalAlloc) / float64(n)
	}
	if got := len(s.Rejected()); got != 0 {
		return nil, errors.Newf("growth: %d of %d generated records were rejected", got, n)
	}
	retained := heapAfterGC() - base
	res["retainedMB"] = retained
	res["retainedBytesPerRecord"] = retained * (1 << 20) / float64(n)
	res["inputMB"] = base
	if profilePath != "" {
		runtime.GC() // the heap profile is as of the last completed GC cycle
		f, err := os.Create(profilePath)
		if err != nil {
			return nil, err
		}
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		for site, share := range topHeapSites(6) {
			res["heapShare "+site] = share
		}
	}
	runtime.KeepAlive(s)
	runtime.KeepAlive(recs)
	return res, nil
}

// topHeapSites returns the share of in-use heap of the functions that
// allocated it (the innermost frame outside the runtime), for the k largest,
// leaving out kcbench's own input generation.
func topHeapSites(k int) map[string]float64 {
	runtime.GC()
	runtime.GC() // MemProfile lags up to two cycles
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, false)
	for {
		recs = make([]runtime.MemProfileRecord, n+50)
		var ok bool
		if n, ok = runtime.MemProfile(recs, false); ok {
			recs = recs[:n]
			break
		}
	}
	bySite := map[string]int64{}
	var total int64
	for _, r := range recs {
		site, input := "", false
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			name := f.Function
			if strings.HasPrefix(name, "main.(*controlLog)") {
				input = true // kcbench's generator: the input, not the projection
				break
			}
			if site == "" && !strings.HasPrefix(name, "runtime.") && !strings.HasPrefix(name, "internal/") {
				site = shortFunc(name)
			}
			if !more {
				break
			}
		}
		if input || site == "" || strings.HasPrefix(site, "main.") {
			continue
		}
		b := unsampled(r)
		bySite[site] += b
		total += b
	}
	type kv struct {
		site  string
		bytes int64
	}
	var all []kv
	for s, b := range bySite {
		all = append(all, kv{s, b})
	}
	slices.SortFunc(all, func(a, b kv) int { return int(b.bytes - a.bytes) })
	out := map[string]float64{}
	for i := 0; i < len(all) && i < k && total > 0; i++ {
		out[all[i].site] = float64(all[i].bytes) / float64(total)
	}
	return out
}

// unsampled estimates the in-use bytes a sampled profile record stands for,
// as pprof does: an allocation of average size s is sampled with probability
// 1-exp(-s/rate), so small allocations count for many more than were sampled.
func unsampled(r runtime.MemProfileRecord) int64 {
	n, b := r.InUseObjects(), r.InUseBytes()
	rate := runtime.MemProfileRate
	if n == 0 || rate <= 1 {
		return b
	}
	avg := float64(b) / float64(n)
	return int64(float64(b) / (1 - math.Exp(-avg/float64(rate))))
}

// shortFunc drops the module path: "github.com/x/y/projector.(*State).Step"
// becomes "projector.(*State).Step".
func shortFunc(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		return name[i+1:]
	}
	return name
}

// childPlan is B4: events.BuildPlan over m markers of p partitions each,
// then events.ParseMarkers reading the same markers from one JSON array (a
// markers file), which `kcleanup plan` does first. For each: every run's
// time, allocations and bytes allocated, and the peak heap above the input
// during the first run.
func childPlan(m, p, runs int) (childResult, error) {
	if m <= 0 || p <= 0 || runs <= 0 {
		return nil, errors.New("plan: -markers, -partitions and -runs must be positive")
	}
	ms := benchMarkers(m, p)
	res := childResult{}
	base := heapAfterGC()
	res["inputMB"] = base
	err := measureRuns(res, "", runs, func() error {
		plan, err := events.BuildPlan("chk-bench", ms)
		if err == nil && len(plan.Offsets) != p {
			err = errors.Newf("plan: %d partitions, want %d", len(plan.Offsets), p)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	res["peakAboveInputMB"] -= base

	doc := []byte{'['}
	for i, mk := range ms {
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = append(doc, mk.Encode()...)
	}
	doc = append(doc, ']')
	ms = nil
	base = heapAfterGC()
	res["parseInputMB"] = float64(len(doc)) / (1 << 20)
	err = measureRuns(res, "parse ", runs, func() error {
		got, err := events.ParseMarkers(doc)
		if err == nil && len(got) != m {
			err = errors.Newf("parse: %d markers, want %d", len(got), m)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	res["parse peakAboveInputMB"] -= base

	// What kcleanup plan does with a markers file: read the markers into
	// a PlanBuilder (PlanBuilder.AddMarkers), never holding them all.
	base = heapAfterGC()
	err = measureRuns(res, "stream ", runs, func() error {
		pb, err := events.NewPlanBuilder("chk-bench")
		if err != nil {
			return err
		}
		if _, err := pb.AddMarkers(doc); err != nil {
			return err
		}
		plan, err := pb.Plan()
		if err == nil && len(plan.Offsets) != p {
			err = errors.Newf("stream: %d partitions, want %d", len(plan.Offsets), p)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	res["stream peakAboveInputMB"] -= base
	runtime.KeepAlive(doc)
	return res, nil
}

// measureRuns times f runs times into res[prefix+"seconds.N"], with the
// allocations and bytes allocated of one run and, during the first run, the
// peak heap (res[prefix+"peakAboveInputMB"], absolute: the caller subtracts
// its input).
func measureRuns(res childResult, prefix string, runs int, f func() error) error {
	var ms0, ms1 runtime.MemStats
	for i := range runs {
		runtime.GC()
		runtime.ReadMemStats(&ms0)
		var stop func() float64
		if i == 0 {
			stop = samplePeakHeap()
		}
		began := time.Now()
		err := f()
		took := time.Since(began)
		if stop != nil {
			res[prefix+"peakAboveInputMB"] = stop()
		}
		runtime.ReadMemStats(&ms1)
		if err != nil {
			return err
		}
		res[fmt.Sprintf("%sseconds.%d", prefix, i)] = took.Seconds()
		res[prefix+"allocs"] = float64(ms1.Mallocs - ms0.Mallocs)
		res[prefix+"allocMB"] = float64(ms1.TotalAlloc-ms0.TotalAlloc) / (1 << 20)
	}
	return nil
}

// samplePeakHeap samples the heap every 5 ms until the returned function is
// called, which returns the largest heap seen, in MB.
func samplePeakHeap() func() float64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() float64 {
		close(stop)
		wg.Wait()
		return float64(peak.Load()) / (1 << 20)
	}
}

// benchMarkers returns m markers over p partitions with offsets that differ
// between markers, so every partition's minimum comes from some marker.
func benchMarkers(m, p int) []events.Marker {
	out := make([]events.Marker, m)
	for i := range out {
		o := make(events.Offsets, p)
		for j := range p {
			o[int32(j)] = int64(1_000_000 + (i*7919+j*104729)%100_000)
		}
		out[i] = events.Marker{Topic: "action-state", TopicID: benchTopicID, Offsets: o}
	}
	return out
}

// benchTopicID is a valid topic ID for in-process benchmarks, whose data
// topic exists only in the records.
const benchTopicID = "AAECAwQFBgcICQoLDA0ODw"

// runsOf collects the per-run values "key.0", "key.1", ... of a child result.
func runsOf(res childResult, key string) []float64 {
	var out []float64
	for i := 0; ; i++ {
		v, ok := res[fmt.Sprintf("%s.%d", key, i)]
		if !ok {
			return out
		}
		out = append(out, v)
	}
}
