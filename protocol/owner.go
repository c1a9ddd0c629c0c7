package protocol

import (
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
)

// The owner's pass: the decisions a worker replica makes for the control
// topic it owns, between protocol runs. worker/daemon executes them on the
// real cluster and protocol/sim on its modelled one, so the simulation
// checks the decision production runs.

// OwnerFacts is what an owner knows about its control topic before it
// drives a pending operation; each is nil when it does not stand in the way.
type OwnerFacts struct {
	// Settings: the control topic's settings check (ControlTopicSafe),
	// ErrBlocked when its cleaner may outrun repairs.
	Settings error
	// Shared: SharedGovernance, ErrBlocked while another control topic
	// governs the same topic incarnation.
	Shared error
	// Tombstones: the watch of the data topic above the boundary,
	// ErrBlocked when it found tombstones there or may not read it.
	Tombstones error
}

// OwnerVerdict says what an owner does with one pending operation.
type OwnerVerdict int

const (
	// Drive: run NewFinish for it.
	Drive OwnerVerdict = iota
	// HoldRetry: do not drive it now; retry with backoff (a fact could not be known).
	HoldRetry
	// HoldBlocked: do not drive it; retry on the blocked schedule (an operator's fix, or time).
	HoldBlocked
)

// Gate decides whether an owner may drive a pending operation (which may
// delete) and, if not, the error that says why. The settings and bindings
// come first: a control topic whose cleaner may outrun repairs, or that
// another one shadows, blocks every deletion; one that cannot be checked
// now is retried. Then the tombstone watch: tombstones above the boundary
// block, a watch that has not read to the end yet is retried.
func (f OwnerFacts) Gate() (OwnerVerdict, error) {
	for _, err := range []error{f.Settings, f.Shared, f.Tombstones} {
		if err == nil {
			continue
		}
		if errors.Is(err, ErrBlocked) {
			return HoldBlocked, err
		}
		return HoldRetry, err
	}
	return Drive, nil
}

// OwnerRetry is how an owner spaces its attempts at one operation.
type OwnerRetry struct {
	// BackoffMin and BackoffMax bound the backoff of transient failures:
	// BackoffMin·2^(n-1) after the n-th, capped at BackoffMax.
	BackoffMin, BackoffMax time.Duration
	// Blocked is the retry of a failure that needs an operator.
	Blocked time.Duration
	// PinMargin is added to a pin hold's gap: the broker's clock need not
	// tick in step with the owner's.
	PinMargin time.Duration
}

// Outcome is how an attempt to finish an operation ended.
type Outcome int

const (
	// Applied: the operation reached APPLIED (or another writer had).
	Applied Outcome = iota
	// Waiting: it waits out the restore grace; not a failure.
	Waiting
	// Held: a pin the broker's clock still holds; blocked, but it passes by itself.
	Held
	// BlockedOutcome: retrying soon cannot help (Permanent).
	BlockedOutcome
	// Retry: a transient failure.
	Retry
)

// OwnerResult is the owner's decision after an attempt: what it was and
// when the operation is next attempted (zero for Applied).
type OwnerResult struct {
	Outcome Outcome
	Next    time.Time
	Grace   GraceWait // Waiting
	Hold    PinHold   // Held
}

// Blocked reports whether the operation now waits for an operator or time
// (Held or BlockedOutcome): /v1/status lists it as blocked.
func (r OwnerResult) Blocked() bool { return r.Outcome == Held || r.Outcome == BlockedOutcome }

// After decides, from how an attempt ended (err: nil when it applied;
// code: the Kafka error code in its chain, 0 when none; pause: the run's
// last step's Pause, nil when it had none) and the failures of the current
// streak including this one, what the attempt was and when to try again.
// A restore grace is waited out to its end; a pin the broker's clock still
// holds is retried once that clock should have passed its expiry, or on the
// blocked schedule if sooner (an unpin ends the hold).
func (p OwnerRetry) After(err error, code int16, pause *Paused, failures int, now time.Time) OwnerResult {
	if err == nil {
		return OwnerResult{Outcome: Applied}
	}
	if pause != nil && pause.Grace != nil {
		return OwnerResult{Outcome: Waiting, Next: pause.Grace.Until, Grace: *pause.Grace}
	}
	if pause != nil && pause.Hold != nil {
		h := *pause.Hold
		next := now.Add(p.Blocked)
		if h.Gap() > 0 {
			next = now.Add(min(h.Gap()+p.PinMargin, p.Blocked))
		}
		return OwnerResult{Outcome: Held, Next: next, Hold: h}
	}
	if Permanent(err, code) {
		return OwnerResult{Outcome: BlockedOutcome, Next: now.Add(p.Blocked)}
	}
	return OwnerResult{Outcome: Retry, Next: now.Add(p.Backoff(failures))}
}

// Gated is After for an operation the Gate held (v is HoldRetry or HoldBlocked).
func (p OwnerRetry) Gated(v OwnerVerdict, failures int, now time.Time) OwnerResult {
	if v == HoldBlocked {
		return OwnerResult{Outcome: BlockedOutcome, Next: now.Add(p.Blocked)}
	}
	return OwnerResult{Outcome: Retry, Next: now.Add(p.Backoff(failures))}
}

// Backoff is BackoffMin·2^(n-1), capped at BackoffMax.
func (p OwnerRetry) Backoff(n int) time.Duration {
	d := p.BackoffMin
	for i := 1; i < n && d < p.BackoffMax; i++ {
		d *= 2
	}
	return min(d, p.BackoffMax)
}

// MaintenanceRecord is one record an owner appends to keep its compacted
// control topic equivalent to the full log (docs/design.md §5, I5).
type MaintenanceRecord struct {
	// Kind is projector.MaintenanceRepair or projector.MaintenanceRetraction.
	Kind string
	Key  []byte
	// Value: the accepted record re-appended (Repair); nil: a tombstone.
	Value []byte
	// Offset is the record repaired, or the latest under the retracted key.
	Offset int64
}

// RetractionGrace is how long a key whose every record was rejected is left
// alone before it is tombstoned: its writer may be about to retry under the
// same key (a COMMITTED recomputed after a boundary mismatch). The workers
// pass it to Maintenance; the console says it.
const RetractionGrace = time.Minute

// Maintenance lists, in the order they must be appended, the records that
// keep the compacted control topic equivalent to the full log: first the
// retractions of conflict losers whose winner moved past them
// (projector.Retraction.Now), then every repair, then the other
// retractions whose latest record is at least grace old (its writer may be
// about to retry under the same key). A key in Flink Agents' format (a bare
// plan ID) is never tombstoned (a control topic wholly in that format is
// never written: its writer refuses it before asking).
func Maintenance(st *projector.State, now time.Time, grace time.Duration) []MaintenanceRecord {
	var first, later []MaintenanceRecord
	for _, r := range st.Retractions() {
		if flinkagents.IsPlanIDKey(r.Key) {
			continue
		}
		rec := MaintenanceRecord{Kind: projector.MaintenanceRetraction, Key: r.Key, Offset: r.Offset}
		switch {
		case r.Now:
			first = append(first, rec)
		case now.Sub(r.Timestamp) >= grace:
			later = append(later, rec)
		}
	}
	for _, r := range st.Repairs() {
		first = append(first, MaintenanceRecord{Kind: projector.MaintenanceRepair, Key: r.Key, Value: r.Value, Offset: r.Offset})
	}
	return append(first, later...)
}
