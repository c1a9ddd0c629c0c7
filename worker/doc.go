// Package worker is the executor of kcleanup: everything that talks to
// Kafka. It reads a control topic into a projection (Project, CatchUp and
// Cluster.stableEnd: no read is trusted before it reached the high watermark
// listed first), executes the steps of the apply protocol (package protocol)
// against Kafka, adopts a Flink Agents control topic, re-commits an erased
// COMMITTED, reads Flink Agents topics as the job does, gathers the facts of
// the recovery gate (Cluster.Validate; the rules are package gate's), probes
// permissions, and holds the failpoints of the crash tests.
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
// Beside it: worker/daemon (the long-running replicated worker, `kcleanup
// worker`), worker/console (its pages and the audit report) and
// clientconfig (--command-config). The pure deciders it executes are
// the floors below: report, gate and protocol (docs/architecture.md); it
// re-exports none of their names.
//
// Imports flow one way: cmd → worker/console → worker/daemon → worker →
// report → {gate, protocol} → projector → fsm → events.
package worker
