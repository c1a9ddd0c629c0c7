package worker

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/protocol"
)

// MirrorTransactionalID is the one transactional.id every kcleanup process
// writes a mirror topic with (protocol.MirrorTransactionalID). Its ACLs:
// Write and Describe on it (docs/deploy.md, "Kafka ACLs").
func MirrorTransactionalID(mirrorTopic string) string {
	return protocol.MirrorTransactionalID(mirrorTopic)
}

// mirrorWriteAttempts bounds the re-runs of a fenced write (another writer
// took over between our fence and our commit).
const mirrorWriteAttempts = 8

// mirrorTxnTimeout is the mirror writer's transaction.timeout.ms.
const mirrorTxnTimeout = 15 * time.Second

// ReadMirror reads a mirror topic as the Flink Agents job reads its
// control topic (ReadFlinkTopic: read_committed, to the end offset
// captured first, once the last stable offset reached it), with its live
// topic ID from the uncached Metadata request made with the read. A
// missing topic is MirrorView.Missing, not an error.
func (c *Cluster) ReadMirror(ctx context.Context, topic string) (protocol.MirrorView, error) {
	return c.readMirror(ctx, topic, -1)
}

// readMirror is ReadMirror to a stable end already captured (-1: ask).
func (c *Cluster) readMirror(ctx context.Context, topic string, end int64) (protocol.MirrorView, error) {
	v := protocol.MirrorView{Topic: topic}
	ft, err := c.readFlinkTopic(ctx, topic, end)
	if errors.Is(err, ErrTopicNotFound) {
		v.Missing = true
		return v, nil
	}
	if errors.Is(err, ErrNotCaughtUp) {
		// Say whose open transaction pins it, not the control topic's words
		// (also when ctx ended waiting for it).
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), holdDescribeTimeout)
		hold, perr := c.MirrorHold(pctx, topic)
		cancel()
		if perr == nil && hold != nil {
			return v, pinnedError(topic, *hold)
		}
	}
	if err != nil {
		return v, c.denied(err, permMirrorRead(topic))
	}
	v.TopicID, v.Partitions, v.CleanupPolicy, v.Fold = ft.TopicID, ft.Partitions, ft.CleanupPolicy, ft.Fold
	v.MaxMessageBytes, v.Visible, v.ReadAt = ft.MaxMessageBytes, ft.Visible, time.Now()
	return v, nil
}

// WriteMirror writes rec to its mirror, linearizably: a transactional
// producer with MirrorTransactionalID fences every other writer
// (InitProducerID), then the mirror is read to its end and the write
// checked by protocol.MirrorWrite on what was read, then written and
// committed in the transaction. A commit refused because another writer
// fenced this one re-runs from the fence. wrote is false when the fresh
// read showed the record was not needed. Nothing is ever written that the
// check refuses, and never a tombstone.
func (c *Cluster) WriteMirror(ctx context.Context, rec protocol.MirrorRecord) (wrote bool, err error) {
	for attempt := 1; ; attempt++ {
		wrote, err = c.writeMirrorOnce(ctx, rec)
		if !protocol.MirrorWriteRetry(err, KafkaCode(err)) || attempt == mirrorWriteAttempts || ctx.Err() != nil {
			return wrote, err
		}
		// Two writers fencing each other in turn would never commit: the
		// one fenced steps back a little before it fences again.
		sleepCtx(ctx, time.Duration(attempt)*(20*time.Millisecond+time.Duration(rand.Int64N(int64(30*time.Millisecond)))))
	}
}

func (c *Cluster) writeMirrorOnce(ctx context.Context, rec protocol.MirrorRecord) (bool, error) {
	txnID := MirrorTransactionalID(rec.Topic)
	cl, err := c.newMirrorWriter(rec.Topic)
	if err != nil {
		return false, err
	}
	defer cl.Close()
	// InitProducerID: from here on every earlier writer of this mirror is
	// fenced, and its open transaction aborted.
	if _, _, err := cl.ProducerID(ctx); err != nil {
		return false, c.mirrorDenied(errors.Wrapf(err, "mirror %s: initialize transactional ID %s", rec.Topic, txnID), rec.Topic)
	}
	view, err := c.ReadMirror(ctx, rec.Topic)
	if err != nil {
		return false, err
	}
	needed, err := protocol.MirrorWrite(view, rec)
	if err != nil || !needed {
		return false, err
	}
	if err := cl.BeginTransaction(); err != nil {
		return false, errors.Wrapf(err, "mirror %s: begin transaction", rec.Topic)
	}
	r := &kgo.Record{Topic: rec.Topic, Partition: 0, Key: []byte(rec.Plan.PlanID), Value: flinkagents.EncodeValue(rec.Status, rec.Plan)}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		_ = cl.EndTransaction(context.WithoutCancel(ctx), kgo.TryAbort)
		return false, c.mirrorDenied(errors.Wrapf(err, "mirror %s: write %s %s", rec.Topic, rec.Status, rec.Plan.PlanID), rec.Topic)
	}
	failpoint(InMirrorTransaction) // the record written, its transaction open
	if rec.Status == flinkagents.Applied {
		failpoint(InMirrorAppliedTransaction)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return false, c.mirrorDenied(errors.Wrapf(err, "mirror %s: commit %s %s", rec.Topic, rec.Status, rec.Plan.PlanID), rec.Topic)
	}
	return true, nil
}

// newMirrorWriter is a transactional producer of the mirror topic with
// kcleanup's one transactional ID for it; its InitProducerID (ProducerID)
// fences every earlier writer.
func (c *Cluster) newMirrorWriter(topic string) (*kgo.Client, error) {
	cl, err := kgo.NewClient(append(c.ConnOpts(),
		kgo.TransactionalID(MirrorTransactionalID(topic)),
		// Short: a writer killed inside its transaction holds the mirror's
		// last stable offset until the next writer's fence or the broker
		// aborts it, and a Flink Agents job recovering then waits for it.
		kgo.TransactionTimeout(mirrorTxnTimeout),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	)...)
	if err != nil {
		return nil, errors.Wrap(err, "create the mirror's transactional producer")
	}
	return cl, nil
}

// mirrorDenied names the grant a denied mirror write needs.
func (c *Cluster) mirrorDenied(err error, topic string) error {
	if errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		return c.denied(err, permMirrorTxn(topic))
	}
	return c.denied(err, permMirrorWrite(topic))
}

// The permissions of the mirror (protocol's).
var (
	permMirrorRead  = protocol.MirrorRead
	permMirrorWrite = protocol.MirrorWriteTopic
	permMirrorTxn   = protocol.MirrorTxn
)

// AttachMirror attaches a Flink Agents mirror to the control topic: it
// checks the mirror topic (one partition, cleanup.policy=compact, a fold
// the job recovers from, plans only of the governed topic), appends
// MIRROR_ATTACHED with its live topic ID, reads it back, and seeds the
// mirror with the plan that set the boundary (protocol.NewMirrorSync), so
// that the job's boundary agrees with kcleanup's from the start. From the
// accepted ATTACHED on, every apply and every worker keeps the mirror in
// step.
func (c *Cluster) AttachMirror(ctx context.Context, proj *Projection, mirror, reason string, o Options) (projector.Mirror, error) {
	if err := proj.CatchUp(ctx); err != nil {
		return projector.Mirror{}, err
	}
	if err := governed(proj, o); err != nil {
		return projector.Mirror{}, err
	}
	if err := degraded(proj); err != nil {
		return projector.Mirror{}, err
	}
	if err := proj.writable(); err != nil {
		return projector.Mirror{}, err
	}
	dataTopic, _, bound := proj.State.Binding()
	if mirror == proj.Topic || bound && mirror == dataTopic {
		return projector.Mirror{}, errors.WithHint(errors.Newf("mirror topic %s is the control topic or the data topic it governs", mirror),
			"name a topic of its own for the mirror (one partition, cleanup.policy=compact), the one the Flink Agents job's kafkaActionStateCleanupControlTopic names")
	}
	view, err := c.readMirrorAsWriter(ctx, mirror, o)
	if err != nil {
		return projector.Mirror{}, err
	}
	// The operator-facing attach rules are package protocol's (AttachMirror, AssessMirror) (init,
	// doctor and status decide with them too).
	if err := protocol.AttachMirror(proj.State, proj.Topic, protocol.MirrorView{Topic: view.Topic, Missing: view.Missing, TopicID: view.TopicID,
		Partitions: view.Partitions, CleanupPolicy: view.CleanupPolicy, MaxMessageBytes: view.MaxMessageBytes, Fold: view.Fold}, bootstrapOr(o.Bootstrap)); err != nil {
		return projector.Mirror{}, err
	}
	env := events.NewMirrorEvent(events.MirrorAttached, events.Mirror{Topic: mirror, TopicID: view.TopicID, Reason: reason,
		HasGrace: o.AttachWithGrace, RestoreGrace: o.AttachGrace}, time.Now().UTC(), o.actor())
	if err := env.Validate(); err != nil {
		return projector.Mirror{}, errors.WithHint(err, "the reason must be printable text, not blank; the restore grace whole seconds from 0 to 24h")
	}
	v, err := proj.Decide(ctx, env)
	if err != nil {
		return projector.Mirror{}, err
	}
	if v.Outcome == projector.Rejected {
		return projector.Mirror{}, errors.Newf("MIRROR_ATTACHED for %s was rejected at offset %d: %s: %s", mirror, v.Offset, v.Reason, v.Detail)
	}
	o.say("attach", "MIRROR_ATTACHED %s (topic ID %s) at control offset %d: every apply and worker keeps it in step from now on", mirror, view.TopicID, v.Offset)
	if err := c.SyncMirror(ctx, proj, o); err != nil {
		return projector.Mirror{}, errors.WithHint(errors.Wrap(err, "the mirror is attached, but not yet seeded with the boundary"),
			"nothing is deleted until it is: fix what the error says and run kcleanup mirror sync (the owning worker retries by itself)")
	}
	att, _ := proj.State.Mirror()
	return att, nil
}

// SetMirrorGrace appends a MIRROR_ATTACHED of the attached mirror that
// carries restore grace d: from then on every owner and every apply waits
// it out (a process's --restore-grace may only lengthen it). The change is
// in the history like every mirror event.
func (c *Cluster) SetMirrorGrace(ctx context.Context, proj *Projection, d time.Duration, reason string, o Options) (projector.Mirror, error) {
	if err := proj.CatchUp(ctx); err != nil {
		return projector.Mirror{}, err
	}
	if err := degraded(proj); err != nil {
		return projector.Mirror{}, err
	}
	if err := proj.writable(); err != nil {
		return projector.Mirror{}, err
	}
	att, ok := proj.State.Mirror()
	if !ok {
		return projector.Mirror{}, errors.WithHint(errors.Newf("control topic %s has no mirror attached: the restore grace is the mirror's", proj.Topic),
			"attach one with its grace: kcleanup mirror attach <mirror topic> --control-topic "+proj.Topic+" --restore-grace <duration>")
	}
	env := events.NewMirrorEvent(events.MirrorAttached, events.Mirror{Topic: att.Topic, TopicID: att.TopicID, Reason: reason,
		HasGrace: true, RestoreGrace: d}, time.Now().UTC(), o.actor())
	if err := env.Validate(); err != nil {
		return projector.Mirror{}, errors.WithHint(err, "the reason must be printable text, not blank; the grace whole seconds from 0 to 24h")
	}
	v, err := proj.Decide(ctx, env)
	if err != nil {
		return projector.Mirror{}, err
	}
	if v.Outcome == projector.Rejected {
		return projector.Mirror{}, errors.Newf("MIRROR_ATTACHED for %s was rejected at offset %d: %s: %s", att.Topic, v.Offset, v.Reason, v.Detail)
	}
	o.say("grace", "MIRROR_ATTACHED %s with restore grace %s at control offset %d: every apply and worker waits it out from now on", att.Topic, d, v.Offset)
	now, _ := proj.State.Mirror()
	return now, nil
}

// DetachMirror appends MIRROR_DETACHED for the attached mirror: from then
// on the mirror is no longer kept in step (the Flink Agents job reading
// it keeps the boundary it holds, and learns no later one).
func (c *Cluster) DetachMirror(ctx context.Context, proj *Projection, reason string, o Options) (projector.Mirror, error) {
	if err := proj.CatchUp(ctx); err != nil {
		return projector.Mirror{}, err
	}
	if err := degraded(proj); err != nil {
		return projector.Mirror{}, err
	}
	att, ok := proj.State.Mirror()
	if !ok {
		return projector.Mirror{}, errors.WithHint(errors.Newf("control topic %s has no mirror attached", proj.Topic),
			"kcleanup status shows the mirror and its history; nothing to detach")
	}
	env := events.NewMirrorEvent(events.MirrorDetached, events.Mirror{Topic: att.Topic, TopicID: att.TopicID, Reason: reason}, time.Now().UTC(), o.actor())
	if err := env.Validate(); err != nil {
		return projector.Mirror{}, errors.WithHint(err, "the reason must be printable text, not blank")
	}
	v, err := proj.Decide(ctx, env)
	if err != nil {
		return projector.Mirror{}, err
	}
	if v.Outcome == projector.Rejected {
		return projector.Mirror{}, errors.Newf("MIRROR_DETACHED for %s was rejected at offset %d: %s: %s", att.Topic, v.Offset, v.Reason, v.Detail)
	}
	o.say("detach", "MIRROR_DETACHED %s at control offset %d", att.Topic, v.Offset)
	return att, nil
}

// SyncMirror brings the attached mirror up to the boundary
// (protocol.NewMirrorSync); nothing when no mirror is attached.
func (c *Cluster) SyncMirror(ctx context.Context, proj *Projection, o Options) error {
	_, err := c.execute(ctx, proj, protocol.NewMirrorSync(c.config(proj, o)), o)
	return err
}

func bootstrapOr(b string) string {
	if b == "" {
		return "<broker>"
	}
	return b
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
