package worker

import (
	"cmp"
	"context"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcleanup/kcleanup/protocol"
)

// A mirror held by an open transaction (docs/design.md §11): its last
// stable offset stays below its end, so a read_committed reader (kcleanup's,
// and a Flink Agents job recovering) cannot read past it until the
// transaction ends. A kcleanup writer killed inside its transaction leaves
// one open until the broker aborts it (transaction.timeout.ms), unless the
// next kcleanup writer fences it first: every run that keeps the mirror in
// step does (readMirrorAsWriter), before it waits on the last stable offset.

// holdDescribeTimeout bounds describing a hold after a read that gave up on it.
const holdDescribeTimeout = 5 * time.Second

// MirrorHeldError is a read of a mirror that an open transaction pins.
// It is ErrNotCaughtUp: nothing after the hold was read.
type MirrorHeldError struct {
	Topic string
	Hold  protocol.MirrorHold
	// dataTopic names the governed topic in the hint ("" when not known).
	dataTopic string
}

func (e *MirrorHeldError) Error() string {
	reason, _ := e.Hold.Explain(e.Topic, e.dataTopic)
	return reason
}

// pinnedError is e with its hint, marked ErrNotCaughtUp.
func pinnedError(topic string, hold protocol.MirrorHold) error {
	e := &MirrorHeldError{Topic: topic, Hold: hold}
	_, hint := hold.Explain(topic, "")
	return errors.Mark(errors.WithHint(e, hint), ErrNotCaughtUp)
}

// MirrorHold says whether an open transaction holds the mirror topic's last
// stable offset below its end (nil: none), and whose: DescribeProducers
// names the producer whose transaction began at the last stable offset,
// DescribeTransactions of kcleanup's transactional ID tells whether that
// producer is kcleanup's mirror writer, and ListTransactions names a
// foreign one. What cannot be described (a missing Describe ACL) is said
// in Unknown; only the offsets must be read.
func (c *Cluster) MirrorHold(ctx context.Context, topic string) (*protocol.MirrorHold, error) {
	partition0 := func(lo kadm.ListedOffsets, err error) (int64, error) {
		if err != nil {
			return 0, err
		}
		o, ok := lo.Lookup(topic, 0)
		if !ok {
			return 0, errors.Mark(errors.Newf("mirror topic %q has no partition 0", topic), ErrTopicNotFound)
		}
		return o.Offset, o.Err
	}
	hw, err := partition0(c.adm.ListEndOffsets(ctx, topic))
	if err != nil {
		return nil, errors.Wrapf(err, "read the high watermark of mirror topic %q", topic)
	}
	lso, err := partition0(c.adm.ListCommittedOffsets(ctx, topic))
	if err != nil {
		return nil, errors.Wrapf(err, "read the last stable offset of mirror topic %q", topic)
	}
	if lso >= hw {
		return nil, nil
	}
	hold := &protocol.MirrorHold{Offset: lso, HighWatermark: hw, ProducerID: -1, ProducerEpoch: -1}
	open, err := c.openProducer(ctx, topic, lso)
	if err != nil {
		hold.Unknown = err.Error()
		return hold, nil
	}
	hold.ProducerID, hold.ProducerEpoch = open.ProducerID, open.ProducerEpoch
	if open.LastTimestamp > 0 {
		hold.Since = time.UnixMilli(open.LastTimestamp).UTC()
	}
	ours, err := c.describeTxn(ctx, MirrorTransactionalID(topic))
	if err == nil && ours.ProducerID == open.ProducerID && transactionOpen(ours.State) {
		hold.KcleanupWriter = true
		hold.TransactionalID = ours.TxnID
		hold.Since, hold.TimeoutMs = time.UnixMilli(ours.StartTimestamp).UTC(), ours.TimeoutMillis
		return hold, nil
	}
	if err != nil && !errors.Is(err, kerr.TransactionalIDNotFound) {
		hold.Unknown = err.Error()
	}
	// A foreign producer: its transactional ID, when this principal may describe it.
	listed, lerr := c.adm.ListTransactions(ctx, []int64{open.ProducerID}, nil)
	for _, t := range listed.Sorted() {
		if t.ProducerID != open.ProducerID {
			continue
		}
		hold.TransactionalID = t.TxnID
		if d, err := c.describeTxn(ctx, t.TxnID); err == nil && transactionOpen(d.State) {
			hold.Since, hold.TimeoutMs = time.UnixMilli(d.StartTimestamp).UTC(), d.TimeoutMillis
		}
		return hold, nil
	}
	if lerr != nil && hold.Unknown == "" {
		hold.Unknown = "list transactions: " + lerr.Error()
	}
	return hold, nil
}

// openProducer is the producer whose open transaction begins at offset
// lso of the topic's partition 0 (the earliest open one).
func (c *Cluster) openProducer(ctx context.Context, topic string, lso int64) (kadm.DescribedProducer, error) {
	described, err := c.adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: struct{}{}}})
	if err != nil {
		return kadm.DescribedProducer{}, errors.Wrap(err, "describe producers")
	}
	var found kadm.DescribedProducer
	ok := false
	for _, p := range described[topic].Partitions {
		if p.Err != nil {
			return found, errors.Wrap(p.Err, "describe producers")
		}
		for _, d := range p.ActiveProducers {
			if d.CurrentTxnStartOffset >= 0 && (!ok || d.CurrentTxnStartOffset < found.CurrentTxnStartOffset) {
				found, ok = d, true
			}
		}
	}
	if !ok {
		return found, errors.Newf("no producer of partition 0 has a transaction open at offset %d (it may have just ended)", lso)
	}
	return found, nil
}

// describeTxn describes one transactional ID (TRANSACTIONAL_ID_NOT_FOUND
// when it never wrote).
func (c *Cluster) describeTxn(ctx context.Context, txnID string) (kadm.DescribedTransaction, error) {
	described, err := c.adm.DescribeTransactions(ctx, txnID)
	if err != nil {
		return kadm.DescribedTransaction{}, errors.Wrapf(err, "describe transaction %s", txnID)
	}
	d, ok := described[txnID]
	if !ok {
		return d, errors.Newf("describe transaction %s: no answer", txnID)
	}
	if d.Err != nil {
		return d, errors.Wrapf(d.Err, "describe transaction %s", txnID)
	}
	return d, nil
}

// transactionOpen: a transaction in this state has not written its markers yet.
func transactionOpen(state string) bool {
	switch state {
	case "Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence":
		return true
	}
	return false
}

// FenceMirrorWriter fences every kcleanup writer of the mirror topic:
// InitProducerID with MirrorTransactionalID bumps the epoch and aborts the
// open transaction of a writer that died inside it. A live writer fenced
// this way re-runs its write from its own fence (WriteMirror): safe, as
// for two writers racing.
func (c *Cluster) FenceMirrorWriter(ctx context.Context, topic string) error {
	cl, err := c.newMirrorWriter(topic)
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, _, err := cl.ProducerID(ctx); err != nil {
		return c.mirrorDenied(errors.Wrapf(err, "mirror %s: fence kcleanup's writer %s", topic, MirrorTransactionalID(topic)), topic)
	}
	return nil
}

// readMirrorAsWriter reads the mirror for a run that keeps it in step: when
// kcleanup's own writer's open transaction pins it, that writer is fenced
// first, so the read need not wait for transaction.timeout.ms. A fence
// this principal may not make (a submitter without the transactional ID's
// ACL) leaves the read to report the hold; the workers fence it.
//
// Whether anything pins it is the question the read asks first anyway (its
// stable end): asked once, here, and the read goes to the end found
// (issue 23, item 4). A transaction that just committed (this run's own
// write, read back) leaves the last stable offset below the end only for
// the moment its markers take: that is waited out (markerWait) before a
// hold is described.
func (c *Cluster) readMirrorAsWriter(ctx context.Context, topic string, o Options) (protocol.MirrorView, error) {
	end, stable, err := c.settledEnd(ctx, topic)
	if err != nil {
		return c.ReadMirror(ctx, topic) // a missing or unreadable topic, reported as ReadMirror does
	}
	if stable {
		return c.readMirror(ctx, topic, end)
	}
	if hold, err := c.MirrorHold(ctx, topic); err == nil && hold != nil && hold.KcleanupWriter {
		if err := c.FenceMirrorWriter(ctx, topic); err != nil {
			o.say("mirror", "mirror %s is held by kcleanup's writer %s (producer ID %d) and this client cannot fence it: %v", topic, hold.TransactionalID, hold.ProducerID, err)
		} else {
			o.say("mirror", "fenced kcleanup's writer %s (producer ID %d, epoch %d), whose transaction had held mirror %s at offset %d since %s: aborted, the mirror is readable again",
				hold.TransactionalID, hold.ProducerID, hold.ProducerEpoch, topic, hold.Offset, hold.Since.Format(time.RFC3339Nano))
		}
	}
	return c.ReadMirror(ctx, topic)
}

// markerWait bounds how long settledEnd waits for the markers of a
// transaction that just ended before it reports the topic as pinned.
const markerWait = 200 * time.Millisecond

// settledEnd is the high watermark of partition 0 of topic and whether the
// last stable offset reached it (stable: every record below it is
// decided), the two asked at once, again for up to markerWait while they
// differ: first after 2 ms, the markers of a commit land within a few.
func (c *Cluster) settledEnd(ctx context.Context, topic string) (end int64, stable bool, err error) {
	partition0 := func(lo kadm.ListedOffsets, err error) (int64, error) {
		if err != nil {
			return 0, err
		}
		o, ok := lo.Lookup(topic, 0)
		if !ok {
			return 0, errors.Mark(errors.Newf("topic %q has no partition 0", topic), ErrTopicNotFound)
		}
		return o.Offset, o.Err
	}
	began, pause := time.Now(), 2*time.Millisecond
	for {
		var hw, lso int64
		var hwErr, lsoErr error
		var wg sync.WaitGroup
		wg.Go(func() { hw, hwErr = partition0(c.adm.ListEndOffsets(ctx, topic)) })
		wg.Go(func() { lso, lsoErr = partition0(c.adm.ListCommittedOffsets(ctx, topic)) })
		wg.Wait()
		if err := cmp.Or(hwErr, lsoErr); err != nil {
			return 0, false, err
		}
		// Asked at once, answered in either order: a last stable offset
		// never exceeds the high watermark of its moment, so one at or
		// above this high watermark says every record below it was
		// decided when it was answered.
		if lso >= hw || time.Since(began) >= markerWait || ctx.Err() != nil {
			return hw, lso >= hw, nil
		}
		sleepCtx(ctx, pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}
