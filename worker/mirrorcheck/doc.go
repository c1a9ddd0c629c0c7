// Package mirrorcheck holds the operator-facing rules of the Flink Agents
// mirror (docs/flink-agents.md, "The mirror"): whether a topic may be
// attached as the mirror of a control topic (Attach), and how an attached
// mirror stands against the control topic's boundary (Assess: in step,
// lagging by which plan, or not writable and why). init, mirror attach,
// adopt --attach-mirror, doctor, status, the worker's metrics and /readyz
// all decide with these functions, so they agree.
//
// It is pure: the worker reads the mirror (View, the protocol's
// MirrorView) and the control topic (projector.State, or the Control
// copied out of it, so a worker's view need not hold its projection while
// the mirror is read); this package only decides. The steps that write the
// mirror during an apply are package protocol's, not these.
//
// # Assess
//
// An attached mirror is in step when the job's effective boundary on it
// equals kcleanup's boundary (or neither has one); lagging when it is valid
// and below (Lag: offsets behind, summed over partitions; BoundaryPlan:
// the plan it lacks); ahead when above (a writer other than kcleanup);
// cannot be written when it is missing, recreated, not the job's settings,
// its fold fails, a plan on it does not fit, or the checking principal
// lacks a permission (Denied: doctor warns, a worker reports it).
//
// # Attach
//
// A topic may be attached when writing the plan that sets the boundary to
// it can never make a Flink Agents job's fold fail, and the job would then
// refuse exactly what kcleanup refuses:
//
//  1. the control topic's projection is not degraded and has no history at
//     risk (its word on the boundary must be good);
//  2. the topic exists, is not the control topic, has exactly one partition
//     and cleanup.policy exactly "compact" (the job's own CheckTopic);
//  3. its records fold by the job's rules without failing (empty is fine:
//     the owning worker seeds it with the plan that sets the boundary);
//  4. every plan on it names the data topic, topic ID and partition set the
//     control topic governs, and lies at or below kcleanup's boundary on
//     every partition (so it is comparable with the plan the mirror will
//     be given, and the job never refuses more than kcleanup does);
//  5. the boundary, when there is one, is the plan of one operation
//     (one Flink Agents record can carry it).
//
// A refusal is an error marked ErrRefused with a hint; ErrCannotTell when
// the control topic's own word is not good enough to decide.
package mirrorcheck
