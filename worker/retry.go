package worker

import (
	"context"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// transient reports whether asking Kafka again may get an answer: a retriable Kafka error
// (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, or OFFSET_NOT_AVAILABLE while a new leader's
// high watermark catches up after an election), or a refused dial to a leader that just died
// and is not fenced yet. A three-broker cluster shows all of them (internal/clustertest).
// A request split over brokers (kadm.ShardErrors) is transient only when every failed piece is.
func transient(err error) bool {
	if se := (*kadm.ShardErrors)(nil); errors.As(err, &se) {
		for _, e := range se.Errs {
			if !transient(e.Err) {
				return false
			}
		}
		return len(se.Errs) > 0
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID) {
		return false // retriable to Kafka, but a missing topic is reported at once
	}
	return kerr.IsRetriable(err) || errors.Is(err, syscall.ECONNREFUSED)
}

// retryPause is the wait between two asks of askAgain.
const retryPause = 100 * time.Millisecond

// askAgain calls ask until it returns nil or an error that is not transient, or ctx ends. It
// returns ask's last error (not ctx's, when an earlier ask said more), so a caller that could
// not get an answer reports why. Only reads, and writes that are the same on every call, are
// asked again: the answer is the broker's, never assumed.
func askAgain(ctx context.Context, ask func(context.Context) error) error {
	var last error
	for {
		err := ask(ctx)
		if last != nil && ctx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
			return last // the deadline cut the last ask short: why the ones before failed says more
		}
		if err == nil || !transient(err) || ctx.Err() != nil {
			return err
		}
		last = err
		select {
		case <-ctx.Done():
			return err
		case <-time.After(retryPause):
		}
	}
}
