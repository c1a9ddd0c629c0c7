package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// opOpenTransaction leaves a transaction open on control (a record produced, never committed):
// its last stable offset stays below the high watermark, so no read of it can finish. The
// transaction is aborted at the end of the test.
func (e *opEnv) opOpenTransaction(t *testing.T, control string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTestTimeout)
	defer cancel()
	tx := kafkatest.Client(t, e.bootstrap, kgo.TransactionalID("optest-open-"+control))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, &kgo.Record{Topic: control, Key: []byte("open-transaction")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTestTimeout)
		defer cancel()
		_ = tx.EndTransaction(ctx, kgo.TryAbort)
	})
}

// TestATimeoutIsNotAnUnreachableCluster: a command the cluster answered but that did not finish
// within --timeout (here an apply paused after its DELETING, as a VM pause or a long GC would,
// until the deadline of that phase passed) says so, to raise --timeout, and what it wrote; never "no answer
// from … check the address". A cluster that never answers (a listener that accepts and stays
// silent) still gets that. The built binary, a real broker.
func TestATimeoutIsNotAnUnreachableCluster(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.dataTopic(t, 2, 100, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	if code, _, stderr := e.run(t, "init", "--topic", topic); code != exitOK {
		t.Fatalf("init: exit %d\n%s", code, stderr)
	}
	plan, path := opTestPlan(t, t.TempDir(), "chk-1", topic, id, events.Offsets{0: 30, 1: 20})
	const timeout = 3 * time.Second
	apply, stderr := e.opStartProcess(t, []string{worker.FailpointEnv + "=" + worker.AfterDeleting + worker.FailpointStop},
		"--timeout", timeout.String(), "apply", path)
	opAwait(t, "apply stops after DELETING", func() bool { return opStopped(apply.Process.Pid) })
	started := time.Now()
	opAwait(t, "its --timeout has passed", func() bool { return time.Since(started) > timeout })
	if err := apply.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	code := opExitCode(t, apply)
	opWantFailure(t, code, stderr.String(), exitError, "did not finish within --timeout 3s", "Hint: raise --timeout",
		"COMMITTED of plan "+plan.PlanID[:12], "DELETING of plan "+plan.PlanID[:12], "of "+control, "sent no DeleteRecords")
	if strings.Contains(stderr.String(), "no answer from") {
		t.Errorf("a cluster that answered is called unreachable:\n%s", stderr)
	}

	silent := opSilentListener(t)
	code, _, errText := runCLI(t, "-b", silent, "--timeout", "2s", "status", "--topic", topic)
	opWantFailure(t, code, errText, exitError, "no answer from "+silent+" within --timeout 2s")
}

// TestAPartitionIsNotASlowCommand: a command the cluster answered at first and then never
// again (a network partition, here a black hole in the process's own sockets: bytes written
// vanish, nothing is read) says the cluster stopped answering, names the broker and what was
// written, and does not tell the operator to raise --timeout nor that the cluster answered but
// the command needed longer (issue 33); a bootstrap that accepts TCP and never answers (never
// reached) still says "no answer from". The real broker, the command in process. With
// silentAfter at an hour (a deadline after any answer read as a slow command, as before), both
// partitioned cases fail: their hint says "raise --timeout".
func TestAPartitionIsNotASlowCommand(t *testing.T) {
	e := opTestEnv(t)
	// Each case its own data topic, control topic and plan: an apply cut off leaves its plan
	// COMMITTED, which the next apply of it would resume rather than write.
	fresh := func(t *testing.T) (topic, control string, plan events.Plan, path string) {
		topic, id := e.dataTopic(t, 2, 100, opGoodDataConfigs())
		if code, _, stderr := e.run(t, "init", "--topic", topic); code != exitOK {
			t.Fatalf("init: exit %d\n%s", code, stderr)
		}
		plan, path = opTestPlan(t, t.TempDir(), "chk-1", topic, id, events.Offsets{0: 30, 1: 20})
		return topic, protocol.ControlTopicFor(topic), plan, path
	}
	const timeout = 3 * time.Second
	for _, tc := range []struct {
		name string
		// args, the hook that begins the partition (nil: blackHole.onKey does), and what the
		// error must say beside the words of a cluster that stopped answering.
		setup func(t *testing.T, h *blackHole) (args []string, cut kgo.Hook, want []string)
	}{
		{"status, after the first answer", func(t *testing.T, h *blackHole) ([]string, kgo.Hook, []string) {
			topic, _, _, _ := fresh(t)
			return []string{"status", "--topic", topic}, cutAfterAnswer{h}, []string{"nothing was written to Kafka"}
		}},
		// franz-go's idempotent producer never abandons a record in flight: before
		// worker.produceWithin this apply was still waiting after 150 s.
		{"apply, as its DELETING is sent", func(t *testing.T, h *blackHole) ([]string, kgo.Hook, []string) {
			_, control, plan, path := fresh(t)
			return []string{"apply", path}, cutBefore{h, plan.PlanID + "/" + string(events.Deleting)},
				[]string{"COMMITTED of plan " + plan.PlanID[:12], "of " + control, "no acknowledgement (the record may still be appended)", "sent no DeleteRecords"}
		}},
		{"apply, at its DeleteRecords", func(t *testing.T, h *blackHole) ([]string, kgo.Hook, []string) {
			_, control, plan, path := fresh(t)
			h.onKey = int16(kmsg.DeleteRecords)
			return []string{"apply", path}, nil,
				[]string{"COMMITTED of plan " + plan.PlanID[:12], "DELETING of plan " + plan.PlanID[:12], "of " + control, "sent DeleteRecords"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &blackHole{}
			args, cut, want := tc.setup(t, h)
			testOpts = []kgo.Opt{kgo.Dialer(h.dial)}
			if cut != nil {
				testOpts = append(testOpts, kgo.WithHooks(cut))
			}
			defer func() { testOpts = nil }()
			began := time.Now()
			code, _, stderr := runCLI(t, append([]string{"-b", e.bootstrap, "--timeout", timeout.String()}, args...)...)
			t.Logf("exit %d after %s, partitioned for its last %s:\n%s", code, time.Since(began).Round(time.Millisecond), h.since().Round(time.Millisecond), stderr)
			if h.cutAt.Load() == 0 {
				t.Fatalf("the partition never began:\n%s", stderr)
			}
			opWantFailure(t, code, stderr, exitError, append([]string{"did not finish within --timeout 3s: the cluster stopped answering",
				"Hint: the cluster answered at first, then a request got no answer from ", "a network partition or a broker that hangs"}, want...)...)
			for _, never := range []string{"raise --timeout", "the cluster answered, but", "within --timeout 3s: check the address"} {
				if strings.Contains(stderr, never) {
					t.Errorf("a cluster that stopped answering is worded %q:\n%s", never, stderr)
				}
			}
		})
	}

	topic, _, _, _ := fresh(t)
	silent := opSilentListener(t)
	code, _, errText := runCLI(t, "-b", silent, "--timeout", "2s", "status", "--topic", topic)
	opWantFailure(t, code, errText, exitError, "no answer from "+silent+" within --timeout 2s")
	if strings.Contains(errText, "stopped answering") || strings.Contains(errText, "did not finish") {
		t.Errorf("a cluster never reached is worded as one that answered:\n%s", errText)
	}
}

// blackHole is a network partition in this process's sockets: once cut, what its connections
// write vanishes and nothing more is read from them (they wait for their deadline), as behind a
// firewall that drops every packet. New connections open (the SYN is not what it drops) and are
// as dead. With onKey set, the first request of that Kafka API key cuts it, unsent (as
// netfault.PartitionOn does with toxiproxy).
type blackHole struct {
	cutAt atomic.Int64
	onKey int16
}

func (h *blackHole) cut() { h.cutAt.CompareAndSwap(0, time.Now().UnixNano()) }

func (h *blackHole) since() time.Duration {
	if at := h.cutAt.Load(); at != 0 {
		return time.Since(time.Unix(0, at))
	}
	return 0
}

func (h *blackHole) dial(ctx context.Context, network, host string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return holeConn{c, h}, nil
}

type holeConn struct {
	net.Conn
	h *blackHole
}

func (c holeConn) Write(p []byte) (int, error) {
	// franz-go writes a request in one Write: its size (4 bytes), then its API key.
	if c.h.onKey != 0 && len(p) >= 6 && int16(binary.BigEndian.Uint16(p[4:6])) == c.h.onKey {
		c.h.cut()
	}
	if c.h.cutAt.Load() != 0 {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c holeConn) Read(p []byte) (int, error) {
	for {
		n, err := c.Conn.Read(p)
		if err != nil || c.h.cutAt.Load() == 0 {
			return n, err
		}
	}
}

// cutAfterAnswer cuts the network once a broker has answered a first request.
type cutAfterAnswer struct{ h *blackHole }

func (c cutAfterAnswer) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	if err == nil {
		c.h.cut()
	}
}

// cutBefore cuts the network when the record keyed key is buffered, before it is sent.
type cutBefore struct {
	h   *blackHole
	key string
}

func (c cutBefore) OnProduceRecordBuffered(r *kgo.Record) {
	if string(r.Key) == c.key {
		c.h.cut()
	}
}

// opStartProcess starts the built binary with -b for the test broker; stderr is collected.
func (e *opEnv) opStartProcess(t *testing.T, env []string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(opTestBinary(t), append([]string{"-b", e.bootstrap}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = new(bytes.Buffer), &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, &stderr
}

// opAwait polls cond until it holds, failing the test after opTestTimeout.
func opAwait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(opTestTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// opHasSocket reports whether process pid has a socket open: it is past its signal setup
// (run's first line) and talking to Kafka.
func opHasSocket(pid int) bool {
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:") {
			return true
		}
	}
	return false
}

// opStopped reports whether process pid is stopped (SIGSTOP: a failpoint's :stop).
func opStopped(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] == "T"
}

// opExitCode waits for cmd and returns its exit code.
func opExitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0
}

// TestCtrlCSaysWhatWasWritten: SIGINT or SIGTERM stops a command with "interrupted" and exit 130,
// saying what was and was not written: nothing, for a status blocked on a read (a transaction
// left open on its control topic) and stopped by SIGTERM; for an apply stopped by SIGINT
// right after its COMMITTED, exactly the control records it appended (read back from the topic)
// and that no DeleteRecords was sent. The built binary, a real broker.
func TestCtrlCSaysWhatWasWritten(t *testing.T) {
	e := opTestEnv(t)
	blocked, _ := e.dataTopic(t, 1, 10, opGoodDataConfigs())
	if code, _, stderr := e.run(t, "init", "--topic", blocked); code != exitOK {
		t.Fatalf("init: exit %d\n%s", code, stderr)
	}
	e.opOpenTransaction(t, protocol.ControlTopicFor(blocked))
	status, stderr := e.opStartProcess(t, nil, "--timeout", "5m", "status", "--topic", blocked)
	opAwait(t, "status talks to Kafka", func() bool { return opHasSocket(status.Process.Pid) })
	if err := status.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code := opExitCode(t, status)
	opWantFailure(t, code, stderr.String(), exitInterrupted, "Error: interrupted (Ctrl-C or SIGTERM) before the command finished: nothing was written to Kafka")

	topic, id := e.dataTopic(t, 2, 100, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	if code, _, stderr := e.run(t, "init", "--topic", topic); code != exitOK {
		t.Fatalf("init: exit %d\n%s", code, stderr)
	}
	plan, path := opTestPlan(t, t.TempDir(), "chk-1", topic, id, events.Offsets{0: 30, 1: 20})
	apply, stderr := e.opStartProcess(t, []string{worker.FailpointEnv + "=" + worker.AfterCommitted + worker.FailpointStop},
		"--timeout", "5m", "apply", path)
	opAwait(t, "apply stops after COMMITTED", func() bool { return opStopped(apply.Process.Pid) })
	if err := apply.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := apply.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	code = opExitCode(t, apply)
	opWantFailure(t, code, stderr.String(), exitInterrupted, "Error: interrupted", "sent no DeleteRecords (this run deleted nothing)", "Hint: run the same command again")
	// The records it says it appended are those on the control topic, PLANNED and COMMITTED
	// among them.
	said := map[int64]string{}
	for _, m := range regexp.MustCompile(`([A-Z]+) of plan ([0-9a-f]{12}) at offset (\d+) of `+regexp.QuoteMeta(control)).FindAllStringSubmatch(stderr.String(), -1) {
		off, _ := strconv.ParseInt(m[3], 10, 64)
		said[off] = m[1] + "/" + m[2]
	}
	recs, _ := e.controlRecords(t, control)
	if len(recs) != len(said) {
		t.Fatalf("the control topic holds %d records, the error names %d:\n%s", len(recs), len(said), stderr)
	}
	for _, r := range recs {
		if want := string(r.Event) + "/" + plan.PlanID[:12]; said[r.Offset] != want {
			t.Errorf("offset %d holds %s; the error says %q", r.Offset, want, said[r.Offset])
		}
	}
	if opCountEvents(recs, events.Committed) != 1 {
		t.Errorf("no COMMITTED on the control topic: %+v", recs)
	}
	if got := e.logStarts(t, topic); !got.Equal(events.Offsets{0: 0, 1: 0}) {
		t.Errorf("log starts %v: something was deleted", got)
	}
}
