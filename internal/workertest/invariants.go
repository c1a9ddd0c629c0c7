package workertest

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/projector/invariant"
	"github.com/kcleanup/kcleanup/worker"
)

// The Kafka side of the invariant checker: what package invariant's pure
// Verify needs, read from a real (or fake) cluster.

// RequireInvariants runs CheckInvariants and fails the test with every violation.
func RequireInvariants(t testing.TB, c *worker.Cluster, controlTopic string, opts ...invariant.Option) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	errs := CheckInvariants(ctx, c, controlTopic, opts...)
	for _, err := range errs {
		t.Errorf("invariant violated on control topic %s: %v", controlTopic, err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
}

// CheckInvariants reads the whole control topic and the data topic's log
// starts and returns every violation of I1–I5 (invariant.Verify) it finds
// (none: nil). A failure to read is returned as the only error. The control
// topic is read to the end captured when it begins: writers that keep
// appending do not make it wait.
func CheckInvariants(ctx context.Context, c *worker.Cluster, controlTopic string, opts ...invariant.Option) []error {
	end, err := endOffset(ctx, c, controlTopic)
	if err != nil {
		return []error{err}
	}
	recs, err := ReadControl(ctx, c, controlTopic, end)
	if err != nil {
		return []error{err}
	}
	again, err := ReadControl(ctx, c, controlTopic, end)
	if err != nil {
		return []error{err}
	}
	f := invariant.Facts{Records: recs, Again: again, End: end}
	topic, id, bound := invariant.Fold(recs).Binding()
	if !bound {
		topic = invariant.NamedDataTopic(opts...)
	}
	if topic != "" {
		f.DataTopic = topic
		if bound {
			info, err := c.TopicMetadata(ctx, topic)
			if err != nil {
				return []error{errors.Wrapf(err, "I1: cannot check data topic %s", topic)}
			}
			f.LiveTopicID = info.ID
		} else {
			f.LiveTopicID = id
		}
		if f.LogStart, err = c.StartOffsets(ctx, topic); err != nil {
			return []error{errors.Wrapf(err, "I1: cannot check data topic %s", topic)}
		}
	}
	return invariant.Verify(f, opts...)
}

// endOffset is the end (last stable offset) of the control topic now.
func endOffset(ctx context.Context, c *worker.Cluster, topic string) (int64, error) {
	ends, err := kadm.NewClient(c.Client()).ListCommittedOffsets(ctx, topic)
	if err != nil {
		return 0, errors.Wrapf(err, "end of control topic %s", topic)
	}
	o, ok := ends.Lookup(topic, 0)
	if !ok {
		return 0, errors.Newf("control topic %s has no partition 0", topic)
	}
	if o.Err != nil {
		return 0, errors.Wrapf(o.Err, "end of control topic %s", topic)
	}
	return o.Offset, nil
}

// ReadControl returns every committed record of a control topic below end, in
// offset order, with a reader of its own. Transaction markers are skipped.
func ReadControl(ctx context.Context, c *worker.Cluster, topic string, end int64) ([]projector.Record, error) {
	cl, err := kgo.NewClient(append(c.ConnOpts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200*time.Millisecond),
	)...)
	if err != nil {
		return nil, errors.Wrap(err, "create control-topic reader")
	}
	defer cl.Close()
	var out []projector.Record
	next := int64(0)
	for next < end {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, errors.Wrapf(ctx.Err(), "read control topic %s: at offset %d of %d", topic, next, end)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return nil, errors.Wrapf(ferr, "read control topic %s", topic)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < next || r.Offset >= end {
				return
			}
			next = r.Offset + 1
			if !r.Attrs.IsControl() {
				rec := projector.Record{Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp, LogAppendTime: r.Attrs.TimestampType() == 1}
				for _, h := range r.Headers { // a retraction's header tells a disputed conflict
					rec.Headers = append(rec.Headers, projector.Header{Key: h.Key, Value: h.Value})
				}
				out = append(out, rec)
			}
		})
	}
	return out, nil
}
