package daemon

import (
	"errors"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/protocol"
)

// TestStatusListsRetriedOperationsWithTheirReason: an operation the owner retries on its own
// schedule (here the tombstone watch that cannot tell yet, as under a low open-file limit) is
// listed under retrying with the reason, not under blocked; one blocked is listed under blocked
// only; one applied, under neither. Before, /v1/status had no word of a retried operation.
func TestStatusListsRetriedOperationsWithTheirReason(t *testing.T) {
	o := &owner{attempts: map[string]*attempt{}}
	p := protocol.OwnerRetry{BackoffMin: time.Second, BackoffMax: time.Minute, Blocked: 5 * time.Minute}
	now := time.Now()
	watch := errors.New("read the data topic for tombstones: too many open files")
	o.record("retried", watch, func(n int) protocol.OwnerResult { return p.Gated(protocol.HoldRetry, n, now) })
	o.record("blocked", errors.New("control topic unsafe"), func(n int) protocol.OwnerResult { return p.Gated(protocol.HoldBlocked, n, now) })
	o.record("applied", nil, func(int) protocol.OwnerResult { return protocol.OwnerResult{Outcome: protocol.Applied} })

	r := o.retrying()
	if len(r) != 1 || r[0].PlanID != "retried" || r[0].Reason != watch.Error() || r[0].RetryAt.IsZero() {
		t.Errorf("retrying = %+v, want the retried operation with its reason and retry time", r)
	}
	if b := o.blocked(); len(b) != 1 || b[0].PlanID != "blocked" {
		t.Errorf("blocked = %+v, want the blocked operation alone", b)
	}
}
