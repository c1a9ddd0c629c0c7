// Package worker is everything of kcleanup that talks to Kafka: reading a
// control topic into a projection, the apply protocol of DESIGN §6, and the
// replicated worker daemon that finishes interrupted operations.
//
// The protocol, as Apply and Finish run it:
//
//  1. Preflight: the plan against the live topic (uncached topic ID, partition
//     set, configs, offsets within [log start, high watermark]) and the
//     boundary. Nothing is written; a failure leaves Kafka unchanged.
//  2. PLANNED (if absent), then COMMITTED carrying the new cumulative
//     boundary. A writer learns the verdict only by reading its record back
//     (Projection.Decide). COMMITTED accepted is the point of no return:
//     recovery enforces the new boundary from then on.
//  3. DELETING; re-check topic ID and configs; DeleteRecords for partitions
//     whose log start is below the plan.
//  4. List log-start offsets; when each is at or above the plan, APPLIED.
//
// Every step is idempotent, so any process may resume an operation left in
// COMMITTED or DELETING, and safety never depends on only one doing so. A
// process acts only on a COMMITTED it read back from the log, through a
// projection that proved it was caught up.
//
// # The worker daemon
//
// Daemon (daemon*.go) is one replica of `kcleanup worker`. Replicas join one
// consumer group over their control topics and use it only to decide who
// acts: the owner of a control topic's partition reads it live with a
// projection of its own, repairs overwritten keys and calls Finish for every
// pending operation, with capped exponential backoff for transient failures
// and a long retry interval for blocked ones (ErrBlocked, ErrDegraded, denied
// authorization). Every replica also keeps a read-only projection of every
// control topic it serves, behind Handler (http*.go): /healthz, /readyz,
// /metrics (metrics.go, Prometheus text written by hand), /v1/status (StatusOf,
// the document `kcleanup status -o json` prints too) and /v1/validate
// (Cluster.Validate, the recovery gate `kcleanup validate` runs too), which
// fails closed. Ownership moves on revocation (the
// step in flight may end within a grace), on loss and on shutdown (the
// replica leaves the group). Because every step is idempotent, a paused owner
// that wakes up after losing the group does no harm.
package worker
