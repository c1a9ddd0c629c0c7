package main

// Helpers of the operator-command tests (init, doctor, plan, submit, apply). They run the real
// command line against the real broker of kafkatest.Bootstrap and read Kafka back with a client
// of their own, so that a test can prove what a command did (or did not do) to the cluster.

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/topicconfig"
	"github.com/kcleanup/kcleanup/worker"
)

// opTestTimeout bounds every wait of the helpers and is the --timeout the commands get.
const opTestTimeout = 30 * time.Second

// opEnv is one test's view of the real broker.
type opEnv struct {
	bootstrap string
	cl        *kgo.Client
	adm       *kadm.Client
}

// opTestEnv connects to the real broker; it skips under -short.
func opTestEnv(t *testing.T) *opEnv {
	t.Helper()
	clearEnv(t)
	addr := kafkatest.Bootstrap(t)
	cl := kafkatest.Client(t, addr)
	return &opEnv{bootstrap: addr, cl: cl, adm: kafkatest.Admin(t, cl)}
}

// opGoodDataConfigs are the data-topic settings of docs/design.md §2.
func opGoodDataConfigs() map[string]string {
	return map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1"}
}

// dataTopic creates a topic with the given configs and n records in each partition, and returns
// its name and topic ID.
func (e *opEnv) dataTopic(t *testing.T, partitions int32, n int, configs map[string]string) (string, string) {
	t.Helper()
	topic := kafkatest.NewTopic(t, e.cl, "optest", partitions, configs)
	// Commands create the default control topic; it goes with the data topic.
	t.Cleanup(func() { e.deleteTopic(t, protocol.ControlTopicFor(topic)) })
	for p := int32(0); p < partitions; p++ {
		kafkatest.Produce(t, e.cl, topic, p, n)
	}
	return topic, e.topicID(t, topic)
}

// governedTopic is dataTopic with its default control topic made as kcleanup init makes it: no
// other command creates a control topic (issue 35).
func (e *opEnv) governedTopic(t *testing.T, partitions int32, n int, configs map[string]string) (string, string) {
	t.Helper()
	topic, id := e.dataTopic(t, partitions, n, configs)
	e.initControlTopic(t, topic)
	return topic, id
}

// initControlTopic creates topic's default control topic with init's settings.
func (e *opEnv) initControlTopic(t *testing.T, topic string) {
	t.Helper()
	kafkatest.CreateTopic(t, e.cl, protocol.ControlTopicFor(topic), 1, topicconfig.CreateSettings())
}

func (e *opEnv) topicID(t *testing.T, topic string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTestTimeout)
	defer cancel()
	id, err := kafkatest.TopicIDUncached(ctx, e.cl, topic)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// run runs kcleanup with -b and --timeout set for the test broker.
func (e *opEnv) run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLI(t, append([]string{"-b", e.bootstrap, "--timeout", opTestTimeout.String()}, args...)...)
}

// opTestPlan builds a plan for topic and writes it to a new file in dir; it returns the plan and
// the file's path.
func opTestPlan(t *testing.T, dir, recoveryPoint, topic, id string, offsets events.Offsets) (events.Plan, string) {
	t.Helper()
	plan, err := events.BuildPlan(recoveryPoint, []events.Marker{{Topic: topic, TopicID: id, Offsets: offsets}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, recoveryPoint+".plan.json")
	if err := os.WriteFile(path, plan.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	return plan, path
}

// opTestMarkers writes markers (one object, or an array when more than one) to dir/name.
func opTestMarkers(t *testing.T, dir, name string, ms ...events.Marker) string {
	t.Helper()
	var b bytes.Buffer
	if len(ms) != 1 {
		b.WriteByte('[')
	}
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(m.Encode())
	}
	if len(ms) != 1 {
		b.WriteByte(']')
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// logStarts lists the log-start offset of every partition of topic.
func (e *opEnv) logStarts(t *testing.T, topic string) events.Offsets {
	t.Helper()
	return e.listed(t, topic, e.adm.ListStartOffsets)
}

func (e *opEnv) endOffsets(t *testing.T, topic string) events.Offsets {
	t.Helper()
	return e.listed(t, topic, e.adm.ListEndOffsets)
}

func (e *opEnv) listed(t *testing.T, topic string, list func(context.Context, ...string) (kadm.ListedOffsets, error)) events.Offsets {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTestTimeout)
	defer cancel()
	lo, err := list(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	out := events.Offsets{}
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("list offsets of %s-%d: %v", o.Topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out
}

// deleteRecordsTo moves log starts with a DeleteRecords of the test's own.
func (e *opEnv) deleteRecordsTo(t *testing.T, topic string, to events.Offsets) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTestTimeout)
	defer cancel()
	offs := kadm.Offsets{}
	for p, o := range to {
		offs.AddOffset(topic, p, o, -1)
	}
	resp, err := e.adm.DeleteRecords(ctx, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("delete records of %s: %v", topic, err)
	}
}

// deleteTopic deletes a topic if it exists.
func (e *opEnv) deleteTopic(t *testing.T, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTestTimeout)
	defer cancel()
	resp, err := e.adm.DeleteTopic(ctx, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("delete topic %s: %v", topic, err)
	}
}

// setTopicConfig sets one topic config and waits until the broker reports it: a broker
// applies a change a moment after it acknowledges it.
func (e *opEnv) setTopicConfig(t *testing.T, topic, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTestTimeout)
	defer cancel()
	resp, err := e.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: kadm.StringPtr(value)}}, topic)
	if err == nil {
		var r kadm.AlterConfigsResponse
		if r, err = resp.On(topic, nil); err == nil {
			err = r.Err
		}
	}
	if err != nil {
		t.Fatalf("set %s=%s on %s: %v", key, value, topic, err)
	}
	for {
		rcs, err := e.adm.DescribeTopicConfigs(ctx, topic)
		if err == nil {
			if rc, err := rcs.On(topic, nil); err == nil {
				for _, c := range rc.Configs {
					if c.Key == key && c.MaybeValue() == value {
						return
					}
				}
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("%s=%s on %s not visible", key, value, topic)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// recreate deletes topic and creates it again under the same name: a new incarnation with a
// new topic ID. The topic's original cleanup deletes the new one.
func (e *opEnv) recreate(t *testing.T, topic string, partitions int32, configs map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTestTimeout)
	defer cancel()
	if _, err := e.adm.DeleteTopic(ctx, topic); err != nil {
		t.Fatalf("delete %s: %v", topic, err)
	}
	cfgs := map[string]*string{}
	for k, v := range configs {
		cfgs[k] = kadm.StringPtr(v)
	}
	for { // the name is taken until the deletion completes
		resp, err := e.adm.CreateTopic(ctx, partitions, -1, cfgs, topic)
		if err == nil {
			err = resp.Err
		}
		if err == nil {
			break
		}
		if !errors.Is(err, kerr.TopicAlreadyExists) || ctx.Err() != nil {
			t.Fatalf("recreate %s: %v", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for { // until every partition has a leader and accepts writes
		lo, err := e.adm.ListEndOffsets(ctx, topic)
		if err == nil && lo.Error() == nil && len(lo[topic]) == int(partitions) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("recreated %s has no leaders: %v", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cluster connects to the test broker for the rest of the test, with a context bounded by
// opTestTimeout.
func (e *opEnv) cluster(t *testing.T) (*worker.Cluster, context.Context) {
	t.Helper()
	c, err := worker.Connect(kgo.SeedBrokers(e.bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), opTestTimeout)
	t.Cleanup(cancel)
	return c, ctx
}

// status is the projection of a control topic as kcleanup status would show it.
func (e *opEnv) status(t *testing.T, control string) report.Status {
	t.Helper()
	c, ctx := e.cluster(t)
	proj, err := c.Project(ctx, control)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	return report.StatusOf(proj.Source())
}

// opControlRecord is one record of a control topic, as read raw.
type opControlRecord struct {
	Offset int64
	Key    string
	Event  events.Event // "" when the key does not parse
	Value  []byte
}

// controlRecords reads a whole control topic raw, without the projector: what is on the log. A
// missing topic reads as nil, exists=false.
func (e *opEnv) controlRecords(t *testing.T, control string) (recs []opControlRecord, exists bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTestTimeout)
	defer cancel()
	ends, err := e.adm.ListEndOffsets(ctx, control)
	if err != nil {
		t.Fatal(err)
	}
	end, ok := ends.Lookup(control, 0)
	if !ok || errors.Is(end.Err, kerr.UnknownTopicOrPartition) {
		return nil, false
	}
	if end.Err != nil {
		t.Fatal(end.Err)
	}
	if end.Offset == 0 {
		return nil, true
	}
	cl := kafkatest.Client(t, e.bootstrap,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{control: {0: kgo.NewOffset().AtStart()}}))
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read control topic %s: %v", control, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			rec := opControlRecord{Offset: r.Offset, Key: string(r.Key), Value: r.Value}
			if _, ev, err := events.ParseKey(r.Key); err == nil {
				rec.Event = ev
			}
			recs = append(recs, rec)
		})
		if n := len(recs); n > 0 && recs[n-1].Offset+1 >= end.Offset {
			return recs, true
		}
	}
}

// count counts the records of one event.
func opCountEvents(recs []opControlRecord, ev events.Event) int {
	n := 0
	for _, r := range recs {
		if r.Event == ev {
			n++
		}
	}
	return n
}

// opSnapshot is what a refused command must leave exactly as it was.
type opSnapshot struct {
	logStart      events.Offsets
	controlExists bool
	controlEnd    int
	committed     int
}

func (e *opEnv) snapshot(t *testing.T, topic, control string) opSnapshot {
	t.Helper()
	recs, exists := e.controlRecords(t, control)
	return opSnapshot{logStart: e.logStarts(t, topic), controlExists: exists, controlEnd: len(recs),
		committed: opCountEvents(recs, events.Committed)}
}

// assertUnchanged fails unless the data topic's log starts and the control topic (its
// existence and every record) are as in before.
func (e *opEnv) assertUnchanged(t *testing.T, topic, control string, before opSnapshot) {
	t.Helper()
	after := e.snapshot(t, topic, control)
	if !after.logStart.Equal(before.logStart) {
		t.Errorf("log starts of %s changed: %v, was %v", topic, after.logStart, before.logStart)
	}
	if after.controlExists != before.controlExists {
		t.Errorf("control topic %s: exists=%v, was %v", control, after.controlExists, before.controlExists)
	}
	if after.controlEnd != before.controlEnd || after.committed != before.committed {
		t.Errorf("control topic %s: %d records (%d COMMITTED), was %d (%d COMMITTED)",
			control, after.controlEnd, after.committed, before.controlEnd, before.committed)
	}
}

// opWantFailure checks the exit code and that stderr holds every fragment.
func opWantFailure(t *testing.T, code int, stderr string, wantCode int, fragments ...string) {
	t.Helper()
	if code != wantCode {
		t.Errorf("exit code %d, want %d; stderr:\n%s", code, wantCode, stderr)
	}
	for _, f := range fragments {
		if !strings.Contains(stderr, f) {
			t.Errorf("stderr lacks %q:\n%s", f, stderr)
		}
	}
}

// opSilentListener accepts TCP connections and never answers: a broker that hangs. It returns
// its address; it stops when the test ends.
func opSilentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// opTestBinary builds kcleanup once per test binary, for tests that need real processes.
func opTestBinary(t *testing.T) string {
	t.Helper()
	opBinary.once.Do(func() {
		dir, err := os.MkdirTemp("", "kcleanup-optest-")
		if err != nil {
			opBinary.err = err
			return
		}
		opBinary.dir = dir
		opBinary.path = filepath.Join(dir, "kcleanup")
		out, err := exec.Command("go", "build", "-o", opBinary.path, ".").CombinedOutput()
		if err != nil {
			opBinary.err = errors.Newf("go build: %v\n%s", err, out)
		}
	})
	if opBinary.err != nil {
		t.Fatal(opBinary.err)
	}
	return opBinary.path
}

var opBinary struct {
	once      sync.Once
	dir, path string
	err       error
}

// removeOpBinary deletes the binary built by opTestBinary; TestMain calls it.
func removeOpBinary() {
	if opBinary.dir != "" {
		_ = os.RemoveAll(opBinary.dir)
	}
}

// opProcess is a finished kcleanup process.
type opProcess struct {
	code           int
	stdout, stderr string
}

// runProcess runs the built binary with -b and --timeout for the test broker.
func (e *opEnv) runProcess(t *testing.T, env []string, args ...string) opProcess {
	t.Helper()
	cmd := exec.Command(opTestBinary(t), append([]string{"-b", e.bootstrap, "--timeout", opTestTimeout.String()}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	p := opProcess{stdout: out.String(), stderr: errOut.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		p.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run kcleanup: %v", err)
	}
	return p
}
