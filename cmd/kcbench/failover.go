package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/worker"
	"github.com/kcleanup/kcleanup/worker/daemon"
)

// failoverWorkers is how many `kcleanup worker` replicas B3 runs.
const failoverWorkers = 3

// failoverSession is the session timeout the workers are given: the
// default, passed explicitly so that the report names what was measured.
var failoverSession = daemon.DefaultSessionTimeout

// failover is B3: three worker processes; `apply --no-wait` commits a plan;
// the worker that owns the control topic is SIGKILLed the moment COMMITTED
// appears in the log; how long until a survivor appends APPLIED. Before each
// kill, the same with a healthy owner gives the time a failover adds.
func (b *bencher) failover(ctx context.Context) error {
	if !b.hasCommand(ctx, "worker") || !b.hasCommand(ctx, "apply") {
		b.note("B3: %s lacks the worker or apply command; failover not measured", b.cfg.kcleanup)
		return nil
	}
	trials := b.cfg.failoverTrials
	data := b.topic("failover")
	control := b.topic("failover.kcleanup")
	const partitions = 3
	topicID, err := createTopic(ctx, b.cl, data, partitions, b.dataTopicConfigs())
	if err != nil {
		return err
	}
	if _, err := createTopic(ctx, b.cl, control, 1, worker.ControlTopicConfigs(b.replication())); err != nil {
		return err
	}
	if err := produceData(ctx, b.cfg.bootstrap, data, partitions, 2*trials+1); err != nil {
		return err
	}
	ws := make([]*workerProc, failoverWorkers)
	for i := range ws {
		if ws[i], err = b.startWorker(control, i); err != nil {
			return err
		}
	}
	defer func() {
		for _, w := range ws {
			w.stop()
		}
	}()
	var healthy, takeover, sinceCommit []float64
	k := int64(0)
	for t := range trials {
		if _, err := settled(ctx, ws, 60*time.Second); err != nil {
			return err
		}
		// A healthy owner first: what COMMITTED → APPLIED costs without a failure.
		k++
		c, a, _, err := b.applyNoWait(ctx, control, data, topicID, partitions, k, nil)
		if err != nil {
			return errors.Wrapf(err, "trial %d, healthy owner", t+1)
		}
		healthy = append(healthy, a.Sub(c).Seconds())

		owner, err := settled(ctx, ws, 60*time.Second)
		if err != nil {
			return err
		}
		victim := ws[owner]
		k++
		var killedAt time.Time
		c, a, actor, err := b.applyNoWait(ctx, control, data, topicID, partitions, k, func() {
			_ = victim.cmd.Process.Signal(syscall.SIGKILL)
			killedAt = time.Now()
		})
		if err != nil {
			return errors.Wrapf(err, "trial %d, owner killed", t+1)
		}
		_, _ = victim.cmd.Process.Wait()
		victim.log.Close()
		if strings.HasSuffix(actor, "/"+strconv.Itoa(victim.cmd.Process.Pid)) {
			return errors.Newf("trial %d: the owner appended APPLIED before it was killed; the trial measured nothing", t+1)
		}
		takeover = append(takeover, a.Sub(killedAt).Seconds())
		sinceCommit = append(sinceCommit, a.Sub(c).Seconds())
		b.logf("B3 failover: trial %d of %d: owner killed, APPLIED by %s %s later", t+1, trials, actor,
			a.Sub(killedAt).Round(time.Millisecond))
		if ws[owner], err = b.startWorker(control, owner); err != nil {
			return err
		}
	}
	c := fmt.Sprintf("%d workers, session timeout %s", failoverWorkers, failoverSession)
	session := failoverSession.Seconds()
	h := Row{Bench: "B3 failover", Case: c, Subject: "healthy owner: COMMITTED → APPLIED"}
	h.setRuns(healthy)
	k1 := Row{Bench: "B3 failover", Case: c, Subject: "owner SIGKILLed at COMMITTED: kill → APPLIED by a survivor"}
	k1.setRuns(takeover)
	k1.Ratios = []Ratio{{"session timeout", k1.Median / session}, {"healthy owner", pairedRatio(sinceCommit, healthy)}}
	k1.Note = fmt.Sprintf("worst %.2f× the session timeout; COMMITTED → APPLIED median %s", k1.Worst/session,
		formatSeconds(median(sinceCommit)))
	b.add(h, k1)
	return b.drop(ctx, data, control)
}

// applyNoWait runs `kcleanup apply --no-wait` for a plan that moves every
// partition to k and watches the control topic: when COMMITTED appears it
// calls onCommit (nil: nothing), then it waits for APPLIED. It returns when
// each was seen and the actor of APPLIED.
func (b *bencher) applyNoWait(ctx context.Context, control, data, topicID string, partitions int, k int64,
	onCommit func()) (committed, applied time.Time, actor string, err error) {
	path, err := b.writePlan(data, topicID, partitions, k)
	if err != nil {
		return committed, applied, "", err
	}
	plan, err := readPlan(path)
	if err != nil {
		return committed, applied, "", err
	}
	seen, stop, err := b.tail(ctx, control, plan.PlanID)
	if err != nil {
		return committed, applied, "", err
	}
	defer stop()
	done := make(chan error, 1)
	go func() {
		_, err := run(ctx, nil, b.cfg.kcleanup, "apply", path, "--no-wait", "-b", b.cfg.bootstrap,
			"--control-topic", control, "--timeout", "1m")
		done <- err
	}()
	deadline := time.After(3 * time.Minute)
	applyDone := false
	for applied.IsZero() || !applyDone {
		select {
		case ev := <-seen:
			switch ev.event {
			case events.Committed:
				if committed.IsZero() {
					committed = ev.at
					if onCommit != nil {
						onCommit()
					}
				}
			case events.Applied:
				applied, actor = ev.at, ev.actor
			}
		case err := <-done:
			if err != nil {
				return committed, applied, "", err
			}
			applyDone = true
		case <-deadline:
			return committed, applied, "", errors.Newf("plan %s: no APPLIED within 3 minutes (committed %v)", plan.PlanID, !committed.IsZero())
		case <-ctx.Done():
			return committed, applied, "", ctx.Err()
		}
	}
	return committed, applied, actor, nil
}

// seenEvent is a control record of the watched plan, when it was read.
type seenEvent struct {
	event events.Event
	actor string
	at    time.Time
}

// tail reads a control topic from its current end and reports the records
// of one plan as soon as they are read.
func (b *bencher) tail(ctx context.Context, control, planID string) (<-chan seenEvent, func(), error) {
	ends, err := kadm.NewClient(b.cl).ListEndOffsets(ctx, control)
	if err != nil {
		return nil, nil, err
	}
	end, ok := ends.Lookup(control, 0)
	if !ok || end.Err != nil {
		return nil, nil, errors.Newf("end offset of %s: %v", control, end.Err)
	}
	cl, err := kgo.NewClient(seeds(b.cfg.bootstrap),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{control: {0: kgo.NewOffset().At(end.Offset)}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return nil, nil, err
	}
	out := make(chan seenEvent, 16)
	tctx, cancel := context.WithCancel(ctx)
	go func() {
		for tctx.Err() == nil {
			fs := cl.PollFetches(tctx)
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				id, ev, err := events.ParseKey(r.Key)
				if err != nil || id != planID {
					return
				}
				env, err := events.Decode(r.Key, r.Value)
				if err != nil {
					return
				}
				select {
				case out <- seenEvent{event: ev, actor: env.Actor, at: now}:
				case <-tctx.Done():
				}
			})
		}
	}()
	return out, func() { cancel(); cl.Close() }, nil
}

// workerProc is one `kcleanup worker` process.
type workerProc struct {
	cmd  *exec.Cmd
	addr string // of its HTTP API
	log  *os.File
}

// startWorker starts replica i with an HTTP address of its own.
func (b *bencher) startWorker(control string, i int) (*workerProc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(b.tmp, fmt.Sprintf("worker-%d-%d.log", i, time.Now().UnixNano())))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(b.cfg.kcleanup, "worker", "-b", b.cfg.bootstrap, "--control-topic", control,
		"--http-addr", addr, "--log-format", "json", "--session-timeout", failoverSession.String())
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, errors.Wrap(err, "start kcleanup worker")
	}
	b.procs = append(b.procs, cmd.Process)
	return &workerProc{cmd: cmd, addr: addr, log: logf}, nil
}

// stop ends a worker with SIGTERM (it leaves the group) and waits for it.
func (w *workerProc) stop() {
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _, _ = w.cmd.Process.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = w.cmd.Process.Kill()
		<-done
	}
	w.log.Close()
}

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// settled waits until every worker is ready and exactly one owns the control
// partition, and stays so for a second; it returns the owner's index.
func settled(ctx context.Context, ws []*workerProc, within time.Duration) (int, error) {
	deadline := time.Now().Add(within)
	owner, since := -1, time.Time{}
	for {
		now, o := time.Now(), stableOwner(ws)
		if o < 0 || o != owner {
			owner, since = o, now
		} else if now.Sub(since) >= time.Second {
			return owner, nil
		}
		if now.After(deadline) {
			return -1, errors.Newf("workers did not settle on one owner within %s (see their logs)", within)
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stableOwner is the index of the only worker owning the control partition
// when all are ready; -1 otherwise.
func stableOwner(ws []*workerProc) int {
	owner := -1
	for i, w := range ws {
		if !w.ready() {
			return -1
		}
		switch w.owned() {
		case 0:
		case 1:
			if owner >= 0 {
				return -1
			}
			owner = i
		default:
			return -1
		}
	}
	return owner
}

var httpClient = &http.Client{Timeout: 2 * time.Second}

func (w *workerProc) ready() bool {
	resp, err := httpClient.Get("http://" + w.addr + "/readyz")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// owned is the worker's kcleanup_owned_partitions gauge; -1 when unknown.
func (w *workerProc) owned() int {
	resp, err := httpClient.Get("http://" + w.addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	return ownedPartitions(resp.Body)
}

// ownedPartitions reads the kcleanup_owned_partitions sample of a
// Prometheus text exposition; -1 when absent.
func ownedPartitions(r io.Reader) int {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "kcleanup_owned_partitions "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return -1
			}
			return int(f)
		}
	}
	return -1
}
