package worker

import (
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bounded reads (a mirror read as the Flink Agents job reads it, the gate's
// fresh read of a control topic) read one partition from its start to an
// end captured first, then stop. A new client for each costs a connection,
// a metadata load and its goroutines: an apply with a mirror attached made
// seven of them. They borrow a reader of the cluster's instead, kept idle
// between reads (issue 23, item 4).

// idleReaders bounds the readers a cluster keeps between bounded reads;
// more may be lent at once (a daemon reading several mirrors), the extra
// ones are closed when returned.
const idleReaders = 4

// boundedFetchWait is a bounded reader's fetch.max.wait.ms. Every read
// stops at an end whose records are already there, so the broker never
// needs to wait for more; a short wait also ends the fetch the reader
// sends after the end quickly, which a reused reader's next fetch would
// otherwise queue behind.
const boundedFetchWait = 10 * time.Millisecond

// readerPool holds a cluster's idle bounded readers.
type readerPool struct {
	mu     sync.Mutex
	idle   []*kgo.Client
	closed bool
}

// borrowReader lends a read_committed reader that keeps control records
// (transaction markers occupy offsets; without them a read could never
// prove it reached the end), consuming partition 0 of topic from its log
// start. give returns it: kept=true only after a read that ended well, so
// a reader left retrying a topic that is missing or refused is closed, not
// lent again. Either way topic is purged from it first, so the next
// borrower sees nothing of this read (not its buffered fetches, not its
// cached metadata of a topic that may since be recreated).
func (c *Cluster) borrowReader(topic string) (r *kgo.Client, give func(kept bool), err error) {
	c.readers.mu.Lock()
	if n := len(c.readers.idle); n > 0 {
		r = c.readers.idle[n-1]
		c.readers.idle = c.readers.idle[:n-1]
	}
	c.readers.mu.Unlock()
	if r == nil {
		r, err = kgo.NewClient(append(c.ConnOpts(),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.KeepControlRecords(),
			kgo.FetchMaxWait(boundedFetchWait),
		)...)
		if err != nil {
			return nil, nil, errors.Wrap(err, "create a reader")
		}
	}
	r.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})
	give = func(kept bool) {
		if !kept {
			r.Close()
			return
		}
		r.PurgeTopicsFromClient(topic)
		c.readers.mu.Lock()
		if !c.readers.closed && len(c.readers.idle) < idleReaders {
			c.readers.idle = append(c.readers.idle, r)
			c.readers.mu.Unlock()
			return
		}
		c.readers.mu.Unlock()
		r.Close()
	}
	return r, give, nil
}

// close closes the idle readers; a reader lent now is closed when given back.
func (p *readerPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, r := range idle {
		r.Close()
	}
}
