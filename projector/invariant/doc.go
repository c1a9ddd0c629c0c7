// Package invariant checks the invariants of docs/design.md §8 on facts: the
// whole control topic as records, and the data topic's log-start offsets. It is
// pure (Verify); the simulation (protocol/sim) gives it its modelled cluster,
// and every suite that drives kcleanup against Kafka (fakes, real brokers,
// crashing processes) ends with the reader in internal/workertest:
//
//	workertest.RequireInvariants(t, cluster, controlTopic,
//		invariant.InitialLogStart(before), // log starts before the scenario (default 0)
//		invariant.WantAllApplied())        // when a worker ran long enough (I3)
//
// What Verify checks, each violation one error prefixed with its name:
//
//   - I1 For every partition of the data topic, the log start is at most the
//     committed boundary (or at most the initial log start where nothing was
//     committed): no record at or above the boundary was ever deleted, and
//     nothing was deleted without an accepted COMMITTED.
//   - I2 Folding the log one record at a time, no partition's boundary ever
//     decreases or disappears, in any prefix.
//   - I3 (WantAllApplied) No operation is left COMMITTED or DELETING, and
//     every partition's log start reached its boundary.
//   - I4 Two independent reads of the control topic, folded separately, give
//     the same digest.
//   - I5 The log compacted by key (latest record per key, with and without
//     tombstones) replays to the same boundary and operation states as the
//     full log. This holds only once overwritten keys were repaired
//     (docs/design.md §5); an unrepaired key is itself reported, unless
//     AllowUnrepaired.
package invariant
