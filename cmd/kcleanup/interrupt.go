package main

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// trace is what this invocation's Kafka clients did, for the words of an error that stopped it
// half-way: whether the cluster ever answered (a deadline is then "did not finish", not "no
// answer"), and what was written (an interrupted apply says which control records it appended).
// Every client of one invocation shares it (globalOptions.kgoOpts installs it as franz-go hooks).
type trace struct {
	answered atomic.Bool

	mu       sync.Mutex
	produced []producedRecord // the first maxTraced records written, in the order Kafka acked them
	more     int              // records written beyond those
	requests map[int16]bool   // admin requests sent that change the cluster (kmsg keys)
	// unanswered is, per broker, since when a request sent to it (or a dial) has had no answer:
	// set by the first write after its last answer, cleared by its next answer. A deadline with
	// one that waited long is a broker that stopped answering, not a command that needed longer.
	unanswered map[int32]unanswered
}

type unanswered struct {
	addr  string
	since time.Time
}

// maxTraced bounds what a trace keeps: a worker runs for months.
const maxTraced = 50

type producedRecord struct {
	topic  string
	offset int64
	key    string
}

var (
	_ kgo.HookBrokerRead              = (*trace)(nil)
	_ kgo.HookBrokerWrite             = (*trace)(nil)
	_ kgo.HookBrokerConnect           = (*trace)(nil)
	_ kgo.HookProduceRecordUnbuffered = (*trace)(nil)
)

// OnBrokerRead notes that a broker answered a request.
func (t *trace) OnBrokerRead(meta kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	t.answered.Store(true)
	t.mu.Lock()
	delete(t.unanswered, meta.NodeID)
	t.mu.Unlock()
}

// OnBrokerConnect notes a dial that failed (refused, or no answer within the dial timeout) as
// a request unanswered since the dial began.
func (t *trace) OnBrokerConnect(meta kgo.BrokerMetadata, dial time.Duration, _ net.Conn, err error) {
	if err != nil {
		t.waiting(meta, time.Now().Add(-dial))
	}
}

// waiting notes that a request to the broker of meta went out at since, unless an earlier one
// is still unanswered.
func (t *trace) waiting(meta kgo.BrokerMetadata, since time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.unanswered[meta.NodeID]; ok {
		return
	}
	if t.unanswered == nil {
		t.unanswered = map[int32]unanswered{}
	}
	t.unanswered[meta.NodeID] = unanswered{addr: net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port))), since: since}
}

// OnBrokerWrite notes each request sent (for whether it is answered), and the requests that
// change the cluster other than produce.
func (t *trace) OnBrokerWrite(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	t.waiting(meta, time.Now())
	switch kmsg.Key(key) {
	case kmsg.DeleteRecords, kmsg.CreateTopics, kmsg.IncrementalAlterConfigs:
		t.mu.Lock()
		if t.requests == nil {
			t.requests = map[int16]bool{}
		}
		t.requests[key] = true
		t.mu.Unlock()
	}
}

// OnProduceRecordUnbuffered notes a record Kafka acknowledged.
func (t *trace) OnProduceRecordUnbuffered(r *kgo.Record, err error) {
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.produced) == maxTraced {
		t.more++
		return
	}
	t.produced = append(t.produced, producedRecord{topic: r.Topic, offset: r.Offset, key: string(r.Key)})
}

// written says what was written to Kafka, in one sentence an operator can act on.
func (t *trace) written() string {
	if t == nil {
		return "nothing was written to Kafka"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var parts []string
	if len(t.produced) > 0 {
		recs := make([]string, 0, len(t.produced))
		for _, r := range t.produced {
			recs = append(recs, fmt.Sprintf("%s at offset %d of %s", recordName(r.key), r.offset, r.topic))
		}
		s := "appended " + strings.Join(recs, ", ")
		if t.more > 0 {
			s += fmt.Sprintf(" and %d more records", t.more)
		}
		parts = append(parts, s)
	} else {
		parts = append(parts, "appended no record")
	}
	if t.requests[int16(kmsg.CreateTopics)] {
		parts = append(parts, "asked the cluster to create a topic")
	}
	if t.requests[int16(kmsg.IncrementalAlterConfigs)] {
		parts = append(parts, "asked it to change topic settings")
	}
	if t.requests[int16(kmsg.DeleteRecords)] {
		parts = append(parts, "sent DeleteRecords (records below the plan may be deleted)")
	} else {
		parts = append(parts, "sent no DeleteRecords (this run deleted nothing)")
	}
	if len(t.produced) == 0 && len(t.requests) == 0 {
		return "nothing was written to Kafka"
	}
	return strings.Join(parts, "; ")
}

// recordName names a control record by its key: "COMMITTED of plan 1a2b3c4d5e6f" for
// kcleanup's <planId>/<EVENT>, else the key itself.
func recordName(key string) string {
	if id, ev, ok := strings.Cut(key, "/"); ok && len(id) == 64 && ev != "" {
		return ev + " of plan " + id[:12]
	}
	if key == "" {
		return "a record"
	}
	return "key " + clip(key, 80)
}

// explain gives an error that ended a command the words of what stopped it:
//
//   - Ctrl-C or SIGTERM (ctx, the invocation's, is cancelled): "interrupted", exit 130, with what
//     was and was not written;
//   - --timeout while the cluster answered: "did not finish within --timeout", raise it;
//   - --timeout after the cluster answered and then stopped (a request unanswered for half of
//     it): "the cluster stopped answering", the network or a broker, not the timeout;
//   - --timeout with no answer, or a refused connection: the cluster is unreachable.
//
// nil stays nil: a command that finished, even after a signal (a worker handing over), succeeded.
func (g globalOptions) explain(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		stopped := errors.WithHint(errors.Newf("interrupted (Ctrl-C or SIGTERM) before the command finished: %s", g.trace.written()),
			"run the same command again to finish: apply resumes where it stopped, and a running worker finishes a COMMITTED plan by itself; kcleanup status shows where each plan is")
		// What the command itself advised on the way out (where it was, what is safe) still holds.
		for _, h := range errors.GetAllHints(err) {
			stopped = errors.WithHint(stopped, h)
		}
		return errors.Mark(stopped, errInterrupted)
	}
	return g.unreachable(err)
}

// unreachable adds the hint an operator needs when the command did not finish within --timeout
// (timeoutWords: the cluster answered throughout, so raise it; or it stopped answering; or it
// never answered), or the cluster refused the connection (franz-go does not retry a dial that
// fails at once, such as a refused connection).
//
// It is called where an error is turned into output (plan's preview) and again on every error a
// command returns; the second call changes nothing (errExplained).
func (g globalOptions) unreachable(err error) error {
	if errors.Is(err, errExplained) {
		return err
	}
	explained := func(err error) error { return errors.Mark(err, errExplained) }
	if errors.Is(err, context.DeadlineExceeded) {
		words := func() deadlineWords {
			f := g.trace.timeoutFacts(time.Now())
			f.Timeout, f.Bootstrap = g.timeout, g.bootstrap()
			return timeoutWords(f)
		}
		w := words()
		// A process that was paused (SIGSTOP, a VM pause, a long GC) may hold answers unread in
		// its sockets: give its readers a moment before saying the cluster stopped answering.
		for i := 0; i < 10 && w.Stopped; i++ {
			time.Sleep(25 * time.Millisecond)
			w = words()
		}
		if w.Message != "" {
			err = errors.Wrap(err, w.Message)
		}
		return explained(errors.WithHint(err, w.Hint))
	}
	if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "dial" {
		return explained(errors.WithHintf(err,
			"could not connect to %s: check the address (-b) and that the brokers are up", g.bootstrap()))
	}
	return err
}

// timeoutFacts is what the trace saw of the cluster when a deadline passed, at now.
func (t *trace) timeoutFacts(now time.Time) timeoutFacts {
	if t == nil {
		return timeoutFacts{Written: "nothing was written to Kafka"}
	}
	f := timeoutFacts{Answered: t.answered.Load(), Written: t.written()}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, u := range t.unanswered {
		f.Unanswered = append(f.Unanswered, brokerWait{Addr: u.addr, For: now.Sub(u.since)})
	}
	return f
}

// timeoutFacts are the facts timeoutWords decides from: pure, no clock.
type timeoutFacts struct {
	Answered   bool         // some broker answered some request of this invocation
	Unanswered []brokerWait // brokers with a request (or dial) unanswered, and for how long
	Timeout    time.Duration
	Bootstrap  string
	Written    string // what was written, in words (trace.written)
}

type brokerWait struct {
	Addr string
	For  time.Duration
}

// silentAfter is how long a request may go unanswered, when a deadline passes, before the
// broker is said to have stopped answering: half of --timeout, at least a second. Kafka
// answers a request in milliseconds and kcleanup's reads wait at most 500 ms for data
// (FetchMaxWait), so a request unanswered for half the deadline is a broker out of reach (a
// network partition, a broker that hangs), not a slow command.
func silentAfter(timeout time.Duration) time.Duration { return max(time.Second, timeout/2) }

// deadlineWords are the words of a deadline: Message wraps the error ("" leaves it), Hint is
// the operator's next step.
type deadlineWords struct {
	Message, Hint string
	Stopped       bool // the cluster answered, then stopped answering
}

// timeoutWords words a deadline that passed so that it says what happened: the cluster never
// answered (check the address), it answered and then stopped (the network or a broker, where
// raising --timeout does not help), or it answered throughout and the command needed longer
// (raise --timeout).
func timeoutWords(f timeoutFacts) deadlineWords {
	if !f.Answered {
		return deadlineWords{Hint: fmt.Sprintf("no answer from %s within --timeout %s: check the address (-b), the network and --command-config", f.Bootstrap, f.Timeout)}
	}
	var silent []brokerWait
	for _, w := range f.Unanswered {
		if w.For >= silentAfter(f.Timeout) {
			silent = append(silent, w)
		}
	}
	if len(silent) > 0 {
		slices.SortFunc(silent, func(a, b brokerWait) int { return cmp.Or(cmp.Compare(b.For, a.For), strings.Compare(a.Addr, b.Addr)) })
		names := make([]string, 0, len(silent))
		for _, w := range silent {
			names = append(names, fmt.Sprintf("%s for the last %s", w.Addr, w.For.Round(100*time.Millisecond)))
		}
		return deadlineWords{
			Message: fmt.Sprintf("did not finish within --timeout %s: the cluster stopped answering", f.Timeout),
			Hint: fmt.Sprintf("the cluster answered at first, then a request got no answer from %s: a network partition or a broker that hangs, not a slow command, so a longer --timeout does not help while it lasts; check the network between this host and the brokers and that they are up, then run the same command again; %s",
				strings.Join(names, ", "), f.Written),
			Stopped: true,
		}
	}
	return deadlineWords{
		Message: fmt.Sprintf("did not finish within --timeout %s", f.Timeout),
		Hint: fmt.Sprintf("raise --timeout (or %s): the cluster answered, but the command needed longer (a long control topic, a slow broker, or a transaction left open on the control topic, which holds back what a reader may see); %s",
			envTimeout, f.Written),
	}
}

// errExplained marks an error unreachable has worded.
var errExplained = errors.New("kcleanup: the deadline or connection error is explained")
