// Package worker is everything of kcleanup that talks to Kafka: reading a
// control topic into a projection, the executor of the apply protocol (package protocol), and the
// replicated worker daemon that finishes interrupted operations.
//
// The protocol is decided by package protocol (protocol.Run: a pure state
// machine, transcript-tested); Apply, Finish, Submit and Preflight
// (apply.go) only execute its steps against Kafka and feed each result
// back: describe the data topic, append a control record and read it back,
// catch up, recheck, DeleteRecords, verify the log starts.
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
// /metrics (metrics.go, prometheus/client_golang with a custom collector for the snapshot gauges), /v1/status (StatusOf,
// the document `kcleanup status -o json` prints too) and /v1/validate
// (Cluster.Validate, the recovery gate `kcleanup validate` runs too), which
// fails closed. Ownership moves on revocation (the
// step in flight may end within a grace), on loss and on shutdown (the
// replica leaves the group). Because every step is idempotent, a paused owner
// that wakes up after losing the group does no harm.
package worker
