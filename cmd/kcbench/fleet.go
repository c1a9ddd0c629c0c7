package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kcleanup/kcleanup/topicconfig"
)

// fleetWorkers is B6's fleet size: three replicas, as docs/deploy.md runs.
const fleetWorkers = 3

// fleet is B6: three `kcleanup worker --control-topic-regex` replicas serving
// many control topics (empty ones: the cost measured is a served control
// topic's, not its history's, which B1 and B5 measure). It measures the time
// from starting the replicas until every one is ready with every control
// topic read and each owned by exactly one replica; the heap each replica
// holds per control topic then; and, after one replica is killed (SIGKILL:
// it never leaves the group), the time until its share is owned by the
// survivors.
func (b *bencher) fleet(ctx context.Context) error {
	n := b.cfg.fleetTopics
	c := fmt.Sprintf("%d workers, %d control topics", fleetWorkers, n)
	b.logf("B6 fleet: %s by --control-topic-regex", c)
	prefix := b.prefix + "-fleet"
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%04d.kcleanup", prefix, i)
	}
	if err := b.createControlTopics(ctx, names); err != nil {
		return err
	}
	regex := "^" + regexp.QuoteMeta(prefix) + `-[0-9]+\.kcleanup$`
	group := prefix + "-group"

	began := time.Now()
	ws := make([]*workerProc, fleetWorkers)
	for i := range ws {
		w, err := b.startFleetWorker(regex, group, i)
		if err != nil {
			return err
		}
		ws[i] = w
	}
	defer func() {
		for _, w := range ws {
			if w != nil {
				w.stop()
			}
		}
	}()
	within := time.Duration(n)*50*time.Millisecond + 2*time.Minute
	if err := fleetSettled(ctx, ws, n, within); err != nil {
		return err
	}
	ready := time.Since(began)

	var heapMB, rssMB []float64
	victim, most := 0, -1
	for i, w := range ws {
		m, err := w.metrics()
		if err != nil {
			return err
		}
		heapMB = append(heapMB, m["go_memstats_heap_inuse_bytes"]/(1<<20))
		rssMB = append(rssMB, m["process_resident_memory_bytes"]/(1<<20))
		if owned := int(m["kcleanup_owned_partitions"]); owned > most {
			victim, most = i, owned
		}
	}
	maxHeap, maxRSS := maxOf(heapMB), maxOf(rssMB)
	b.logf("B6 fleet: ready after %s; heap in use %v MB, RSS %v MB; killing worker %d (owns %d)", ready.Round(time.Millisecond), heapMB, rssMB, victim, most)

	_ = ws[victim].cmd.Process.Kill()
	killedAt := time.Now()
	_, _ = ws[victim].cmd.Process.Wait()
	ws[victim].log.Close()
	ws = append(ws[:victim:victim], ws[victim+1:]...)
	if err := fleetSettled(ctx, ws, n, within); err != nil {
		return errors.Wrap(err, "after the kill")
	}
	failover := time.Since(killedAt)

	start := Row{Bench: "B6 fleet", Case: c, Subject: "start to ready: every control topic read and owned (3 processes)",
		PeakRSSMB: maxRSS, RateUnit: "control topics/s", Rate: float64(n) / ready.Seconds(),
		Extra: map[string]float64{"heapInUseMBMax": maxHeap, "heapPerControlTopicKB": maxHeap * 1024 / float64(n), "rssMBMax": maxRSS}}
	start.setRuns([]float64{ready.Seconds()})
	start.Note = fmt.Sprintf("each replica serves all %d: heap in use %.0f MB at most (%.0f KB per control topic, fixed costs included), RSS %.0f MB at most",
		n, maxHeap, maxHeap*1024/float64(n), maxRSS)
	fail := Row{Bench: "B6 fleet", Case: c, Subject: "failover: one replica SIGKILLed until its share is owned again",
		Extra: map[string]float64{"ownedByVictim": float64(most), "sessionTimeoutSeconds": failoverSession.Seconds()}}
	fail.setRuns([]float64{failover.Seconds()})
	fail.Ratios = []Ratio{{"session timeout", failover.Seconds() / failoverSession.Seconds()}}
	fail.Note = fmt.Sprintf("the killed replica owned %d control topics; session timeout %s", most, failoverSession)
	// Where the failover's time goes, from the survivors' own logs: the group
	// hands the share over (the first and last takeover after the kill), then
	// the new owners read what they took until kcbench sees them caught up.
	if first, last, taken := takeovers(ws, killedAt); taken > 0 {
		fail.Extra["firstTakeoverSeconds"], fail.Extra["lastTakeoverSeconds"] = first.Seconds(), last.Seconds()
		fail.Note += fmt.Sprintf("; survivors took %d control topics %s to %s after the kill (the group's detection and rebalance), all caught up and owned at %s",
			taken, formatSeconds(first.Seconds()), formatSeconds(last.Seconds()), formatSeconds(failover.Seconds()))
	}
	b.add(start, fail)
	// The thousand control topics would weigh on the benchmarks after.
	for _, w := range ws {
		w.stop()
	}
	ws = nil
	return b.drop(ctx, names...)
}

// createControlTopics creates the control topics, many per request, with
// the settings kcleanup init gives them.
func (b *bencher) createControlTopics(ctx context.Context, names []string) error {
	adm := kadm.NewClient(b.cl)
	configs := map[string]*string{}
	for k, v := range topicconfig.CreateSettings() {
		configs[k] = kadm.StringPtr(v)
	}
	for lo := 0; lo < len(names); lo += 100 {
		batch := names[lo:min(lo+100, len(names))]
		rs, err := adm.CreateTopics(ctx, 1, -1, configs, batch...)
		if err != nil {
			return errors.Wrap(err, "create control topics")
		}
		for _, r := range rs {
			if r.Err != nil {
				return errors.Wrapf(r.Err, "create control topic %s", r.Topic)
			}
		}
		b.topics = append(b.topics, batch...)
	}
	for _, name := range names {
		if _, err := waitForLeaders(ctx, b.cl, name, 1); err != nil {
			return err
		}
	}
	return nil
}

// startFleetWorker starts replica i of a fleet that serves control topics by
// regex, finding new ones every 2 s.
func (b *bencher) startFleetWorker(regex, group string, i int) (*workerProc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(b.tmp, fmt.Sprintf("fleet-worker-%d-%d.log", i, time.Now().UnixNano())))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(b.cfg.kcleanup, "worker", "-b", b.cfg.bootstrap, "--control-topic-regex", regex, "--group", group,
		"--discovery-interval", "2s", "--http-addr", addr, "--log-format", "json", "--session-timeout", failoverSession.String())
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, errors.Wrap(err, "start kcleanup worker")
	}
	b.procs = append(b.procs, cmd.Process)
	return &workerProc{cmd: cmd, addr: addr, log: logf}, nil
}

// fleetSettled waits until every worker is ready, reports all n control
// topics caught up, and the workers own n partitions between them.
func fleetSettled(ctx context.Context, ws []*workerProc, n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		owned, ok := 0, true
		for _, w := range ws {
			m, err := w.metrics()
			if err != nil || !w.ready() || int(m["caughtUpControlTopics"]) != n {
				ok = false
				break
			}
			owned += int(m["kcleanup_owned_partitions"])
		}
		if ok && owned == n {
			return nil
		}
		if time.Now().After(deadline) {
			var state []string
			for i, w := range ws {
				m, err := w.metrics()
				state = append(state, fmt.Sprintf("worker %d: ready %v, %d caught up, %d owned (%v)", i, w.ready(), int(m["caughtUpControlTopics"]), int(m["kcleanup_owned_partitions"]), err))
			}
			return errors.Newf("the fleet did not serve and own all %d control topics within %s: %s", n, within, strings.Join(state, "; "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// metrics reads the worker's unlabelled samples, and counts the control
// topics it reports caught up as "caughtUpControlTopics".
func (w *workerProc) metrics() (map[string]float64, error) {
	resp, err := httpClient.Get("http://" + w.addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return parseMetrics(resp.Body)
}

func parseMetrics(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		if strings.HasPrefix(name, "kcleanup_projection_caught_up{") {
			if v == 1 {
				out["caughtUpControlTopics"]++
			}
			continue
		}
		if !strings.Contains(name, "{") {
			out[name] = v
		}
	}
	return out, sc.Err()
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// takeovers reads the survivors' JSON logs for "took ownership of control
// topic" after since: how long after it the first and the last came, and
// how many.
func takeovers(ws []*workerProc, since time.Time) (first, last time.Duration, n int) {
	for _, w := range ws {
		data, err := os.ReadFile(w.log.Name())
		if err != nil {
			continue
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			var l struct {
				Time time.Time `json:"time"`
				Msg  string    `json:"msg"`
			}
			if json.Unmarshal(line, &l) != nil || l.Msg != "took ownership of control topic" || !l.Time.After(since) {
				continue
			}
			d := l.Time.Sub(since)
			if n == 0 || d < first {
				first = d
			}
			last = max(last, d)
			n++
		}
	}
	return first, last, n
}
