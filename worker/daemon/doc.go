// Package daemon is the long-running kcleanup worker (`kcleanup worker`):
// one replica of a fleet that finishes interrupted operations and serves the
// status and the recovery gate over HTTP. The Kafka work it does is
// package worker's; this package decides when and by whom.
//
// Replicas join one consumer group over their control topics and use it
// only to decide who acts (owner.go): the owner of a control topic's
// partition reads it live with a projection of its own, repairs overwritten
// keys and calls worker.Cluster.Finish for every pending operation, with
// capped exponential backoff for transient failures and a long retry
// interval for blocked ones (protocol.ErrBlocked, protocol.ErrDegraded, denied
// authorization). An operation that waits out the restore grace
// (WithRestoreGrace, protocol.RestoreGrace) is retried when it is out, not
// held: the owner serves the rest meanwhile and /v1/status lists the wait.
// Ownership is an optimisation, not a safety mechanism: it
// moves on revocation (the step in flight may end within a grace), on loss
// and on shutdown (the replica leaves the group), and because every step is
// idempotent a paused owner that wakes up after losing the group does no
// harm (docs/design.md §6).
//
// A projection that shows a disputed conflict (projector.State.Disputed: the
// log cleaner showed it a conflict the other way, docs/design.md §5) repairs
// neither side and deletes nothing; the owner and the views read the control
// topic afresh, at most once per protocol.RetractionGrace, until a read is not
// disputed.
//
// Every replica also keeps a read-only projection of every control topic it
// serves (view.go), published as a snapshot, behind Handler (http*.go):
//
//   - /healthz, /readyz (every served control topic read to its end within
//     the ready window; the group admitted this member; no missing ACL)
//   - /metrics (metrics.go: prometheus/client_golang, a custom collector for
//     the snapshot gauges, go_* and process_* metrics, step histograms)
//   - /v1/status (report.WorkerStatus, from the snapshots: it never waits
//     for Kafka; ?all=true for the complete documents)
//   - POST /v1/validate (worker.Cluster.Validate on the live projection,
//     read to the end first; it fails closed: 503 when it cannot tell)
//   - the pages WithPage mounts at their own paths, such as the console
//     (worker/console), which render only what /v1/status serves. A known
//     path asked with another method is a 405 with Allow.
//
// Every replica describes the group for /v1/status (fleet.go); it names
// each member from its client ID, which carries the replica's name
// (WithReplicaName) and start time (MemberClientID).
//
// The control topics are named (WithControlTopics), or matched by a regular
// expression (WithControlTopicRegex, discover.go): then views are added at
// run time, by a periodic listing of the cluster's topics and by the group
// assigning a topic not yet found, and the group subscribes with the same
// expression; views are never removed while the replica runs.
//
// The documents it serves are package report's; the verdict is package
// gate's. Time enters here (timers, backoff, "since"), never below.
package daemon
