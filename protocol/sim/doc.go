// Package sim is a deterministic simulation of a kcleanup fleet: several
// workers and apply processes run the pure protocol (package protocol) with
// the real fold (package projector) against a simulated cluster (a control
// topic and a data topic in memory), driven by one seeded scheduler. Faults
// are injected at every step:
//
//   - a process is killed (its run abandoned mid-step; a worker restarts
//     later with a fresh projection) or frozen and resumed later with its
//     stale projection and its run where it stopped;
//   - a request fails (nothing happened), times out after taking effect,
//     or is delayed (it fails now and takes effect some ticks later: an
//     append lands after other records, a deletion happens later);
//   - access is denied (blocked), and DeleteRecords fails for a partition,
//     transiently or permanently;
//   - a reader is delivered records twice, or in another order within a
//     fetch;
//   - the log cleaner compacts the control topic between any two records
//     (as Kafka does: only records older than min.compaction.lag, in ticks,
//     and tombstones after delete.retention), and every CompactionLag
//     ticks while the fleet settles;
//   - apply processes commit concurrent, conflicting plans;
//   - in half the seeds a Flink Agents mirror is attached (MIRROR_ATTACHED
//     before the first plan or mid-history, then the attach's mirror
//     sync) and written as worker/mirror.go writes it (mirror.go): fence,
//     read, check, produce, commit under one transactional ID, where a
//     newer writer's fence aborts an older one's open transaction and a
//     fenced commit is refused; a writer pauses or dies inside its
//     transaction, and read_committed reads fail while one is open;
//   - with a mirror, a restore grace (docs/design.md §11) in three quarters
//     of those seeds (1 to 90 ticks; a third with record times readers
//     cannot know), and processes killed while they wait it out: a run's
//     Pause step (the grace, or a pin the broker's clock holds) is slept
//     through by an apply process, whose same run then goes on, as
//     kcleanup apply does, and ends a worker's run for the owner's
//     schedule (protocol.OwnerRetry.After), as worker/daemon does;
//   - an operator pins with `kcleanup pin`, a process running the pin mode
//     (protocol.NewPin) whose Identify (an uncached Metadata request) may
//     fail or be denied; a quarter of the pins are ordered with markers of
//     the data topic's previous incarnation (deleted and recreated: another
//     topic ID), which the pin mode must refuse (no such PINNED may land);
//   - Flink Agents' own cleanup tool writes the control topic now and then
//     (a record keyed by a bare plan ID): a maintenance tombstone for such
//     a key is a violation.
//
// Workers behave as package worker/daemon's owners: each pass catches up,
// repairs, and finishes a pending operation, with the daemon's own
// decisions (protocol.Maintenance for what to append, in which order;
// protocol.OwnerRetry.After for what a run's end means and when to try
// again), never a copy of them; a worker whose projection
// shows a disputed conflict (docs/design.md §5) reads the log afresh once
// its projection is Grace ticks old.
//
// After every seed, Run stops the faults, lets the workers finish, and
// checks I1–I5 with projector/invariant on the control topic as it is (and I1
// at the moment of every deletion, against the full history), and that no
// live worker's projection is still disputed. With a mirror: the Flink
// Agents job's fold of it never fails (after every commit); no
// DeleteRecords is issued, once the deleting process has read the
// attachment, before the mirror covers the plan, nor before the restore
// grace has passed since the commit of its first covering record; and when nothing is
// pending at the end, the mirror's boundary is the control topic's. The same seed
// always gives the same run: a failing seed is replayed with
//
//	go test ./protocol/sim -run TestSimulation -seed=N -v
//
// `make sim` runs 10,000 seeds and prints how often every fault kind and
// every protocol step (protocol.Kinds and protocol.MirrorKinds) was
// exercised; it fails if any was never hit.
package sim
