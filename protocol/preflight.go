package protocol

import (
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
)

// Config is what a run needs besides the plan and the state.
type Config struct {
	// ControlTopic names the control topic in messages.
	ControlTopic string
	// Bootstrap is quoted in hints (the exact commands to run).
	Bootstrap string
	// NoWait ends an Apply run once COMMITTED is accepted.
	NoWait bool
	// AllowTombstones is the operator's --allow-tombstones: tombstones at or
	// above a first plan's offsets (or a scan that could not tell) warn
	// instead of refusing, and PLANNED and COMMITTED record the
	// acknowledgement (FirstPlanTombstones).
	AllowTombstones bool
	// Principal is the Kafka principal the executor's client authenticates as
	// ("User:kcleanup-worker"; "" when unknown), named in what to grant.
	Principal string
	// Now is the time the executor will stamp on the COMMITTED it appends
	// (its clock, read when the run starts): pins are judged at it, as the
	// fold will judge them at the record's "at" (PinRefusal).
	Now time.Time
	// RestoreGrace is how long after the attached mirror first showed a
	// plan covered its deletion waits (RestoreGrace; 0: not at all):
	// --restore-grace.
	RestoreGrace time.Duration
	// GraceSeen is when this executor first saw the mirror cover the plan
	// without knowing the record's time (zero: not yet); RestoreGrace waits
	// from it then.
	GraceSeen time.Time
	// Governors, when set, is the fact the executor gathered of the other
	// control topics governing the incarnation written about: the run
	// refuses before its first step while one does (GovernedElsewhere).
	// nil: not gathered (a worker's finishing run, whose owner's Gate
	// checks the bindings it serves; the simulation's single control topic).
	Governors *Governors
}

// CommitRetries is how often a COMMITTED rejected as boundary-mismatch (a
// concurrent commit landed first) is recomputed and appended again.
const CommitRetries = 3

// Degraded is the error for a degraded projection, nil otherwise: nothing
// may be committed or deleted on its word.
func Degraded(st *projector.State, controlTopic string) error {
	if d, why := st.Degraded(); d {
		return errors.WithHint(errors.Mark(errors.Newf("control topic %s: %s", controlTopic, why), ErrDegraded),
			"upgrade kcleanup to a version that understands every record of the control topic")
	}
	return nil
}

// CheckBinding refuses a plan for another topic or incarnation than the one
// the control topic governs. It needs no cluster answer.
func CheckBinding(st *projector.State, plan events.Plan, controlTopic string) error {
	topic, id, ok := st.Binding()
	if !ok || (topic == plan.Topic && id == plan.TopicID) {
		return nil
	}
	hint := "use the control topic of the plan's data topic (--control-topic)"
	if topic == plan.Topic {
		// Same name, other ID: the topic was recreated. Its old control topic keeps the
		// old incarnation's history; the new incarnation needs a control topic of its own.
		hint = fmt.Sprintf("topic %s was deleted and recreated since this control topic was bound: "+
			"give the new incarnation its own control topic (kcleanup init --topic %s --control-topic <new name>) "+
			"and pass that --control-topic to every kcleanup command for it", topic, topic)
	}
	return errors.WithHint(errors.Mark(errors.Newf(
		"control topic %s governs topic %s (ID %s); the plan is for %s (ID %s)",
		controlTopic, topic, id, plan.Topic, plan.TopicID), ErrRejected), hint)
}

// PreflightFindings checks a plan against what the cluster reported of its
// data topic (ID, partitions, configs, log starts, high watermarks) and the
// committed boundary: step 1 of the protocol (docs/design.md, "Apply").
// Every problem is one finding.
func PreflightFindings(st *projector.State, plan events.Plan, info Topic, bootstrap string) []Finding {
	var fs []Finding
	subject := "data topic " + plan.Topic
	if info.ID != plan.TopicID {
		fs = append(fs, Finding{Block, subject, fmt.Sprintf(
			"has topic ID %s but the plan was made for ID %s: the topic was deleted and recreated", info.ID, plan.TopicID),
			"make a new plan from recovery markers of the current topic"})
	}
	if got, want := info.Partitions, plan.Offsets.Partitions(); !slices.Equal(got, want) {
		fs = append(fs, Finding{Block, subject, fmt.Sprintf(
			"has partitions %v but the plan covers %v", got, want), "make a new plan from current recovery markers"})
	}
	fs = append(fs, Blocking(CheckDataTopic(info, bootstrap))...)
	boundary := st.Boundary()
	for _, p := range plan.Offsets.Partitions() {
		if msg, hint := PartitionRefusal(p, plan.Offsets[p], info, boundary, st.BoundarySetBy); msg != "" {
			fs = append(fs, Finding{Block, subject, msg, hint})
		}
	}
	return fs
}

// PartitionRefusal is why step 1 refuses partition p of a plan with offset
// off, or "" when it does not: one reason per partition, the decisive one
// (below the boundary before outside the live range).
func PartitionRefusal(p int32, off int64, info Topic, boundary events.Offsets, setBy func(int32) string) (msg, hint string) {
	if b, ok := boundary[p]; ok && off < b {
		return fmt.Sprintf("partition %d: plan offset %d is below the committed boundary %d (set by plan %s); boundaries never move back",
			p, off, b, setBy(p)), "plan from a newer recovery point"
	}
	start := info.Start[p]
	if end, ok := info.End[p]; ok && (off < start || off > end) {
		return fmt.Sprintf("partition %d: plan offset %d is outside the available range [%d, %d] (log start, high watermark)",
			p, off, start, end), "plan from a recovery point whose offsets are still in the topic"
	}
	return "", ""
}

// Preflight is step 1 as one pure check: the plan's own validity, the
// projection, the binding, then PreflightFindings. nil means the plan may be
// committed as far as the live topic's description tells; a control
// topic's first plan also needs its tombstone scan (FirstPlanTombstones),
// which a Run asks for with its Describe step.
func Preflight(st *projector.State, plan events.Plan, info Topic, cfg Config) error {
	if err := plan.Validate(); err != nil {
		return errors.Mark(err, ErrRejected)
	}
	if err := Degraded(st, cfg.ControlTopic); err != nil {
		return err
	}
	if err := CheckBinding(st, plan, cfg.ControlTopic); err != nil {
		return err
	}
	if err := findingsError(PreflightFindings(st, plan, info, cfg.Bootstrap)); err != nil {
		return err
	}
	return PinRefusal(st, plan, cfg.Now, cfg.ControlTopic)
}

// CommitBoundary is the boundary field of a COMMITTED for plan on the
// current boundary: the max of the two on every partition (the fold's rule
// 5e, which accepts a field at or above this).
func CommitBoundary(st *projector.State, plan events.Plan) events.Offsets {
	b := st.Boundary()
	for p, off := range plan.Offsets {
		if cur, ok := b[p]; !ok || off > cur {
			b[p] = off
		}
	}
	return b
}
