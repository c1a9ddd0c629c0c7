package main

import (
	"context"
	"fmt"
	"net"
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
	_ kgo.HookProduceRecordUnbuffered = (*trace)(nil)
)

// OnBrokerRead notes that a broker answered a request.
func (t *trace) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	if err == nil {
		t.answered.Store(true)
	}
}

// OnBrokerWrite notes the requests that change the cluster other than produce.
func (t *trace) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
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
// (the cluster answered: raise it), or the cluster did not answer within it, or refused the
// connection (franz-go does not retry a dial that fails at once, such as a refused connection).
//
// It is called where an error is turned into output (plan's preview) and again on every error a
// command returns; the second call changes nothing (errExplained).
func (g globalOptions) unreachable(err error) error {
	if errors.Is(err, errExplained) {
		return err
	}
	explained := func(err error) error { return errors.Mark(err, errExplained) }
	if errors.Is(err, context.DeadlineExceeded) {
		if g.trace != nil && g.trace.answered.Load() {
			err = errors.WithHintf(errors.Wrapf(err, "did not finish within --timeout %s", g.timeout),
				"raise --timeout (or %s): the cluster answered, but the command needed longer (a long control topic, a slow broker, or a transaction left open on the control topic, which holds back what a reader may see); %s",
				envTimeout, g.trace.written())
			return explained(err)
		}
		return explained(errors.WithHintf(err,
			"no answer from %s within --timeout %s: check the address (-b), the network and --command-config",
			g.bootstrap(), g.timeout))
	}
	if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "dial" {
		return explained(errors.WithHintf(err,
			"could not connect to %s: check the address (-b) and that the brokers are up", g.bootstrap()))
	}
	return err
}

// errExplained marks an error unreachable has worded.
var errExplained = errors.New("kcleanup: the deadline or connection error is explained")
