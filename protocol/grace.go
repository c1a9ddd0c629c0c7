package protocol

import (
	"fmt"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
)

// The restore grace (docs/design.md §11, "The restore grace";
// docs/flink-agents.md, "The window between the two COMMITTEDs"): a Flink
// Agents job reads the mirror, not the control topic, for its recovery
// check, so between kcleanup's COMMITTED and the mirror's a job can pass
// its check for a recovery point the plan condemns and then replay from
// it. With a grace D (Config.RestoreGrace), a finishing run deletes
// nothing until D has passed since the mirror first showed the plan
// covered, so a restore that passed its check just before has D to
// finish replaying.

// MaxRestoreGrace bounds a restore grace: a grace is the time a restore
// takes to replay; a recovery point needed for longer is pinned (kcleanup
// pin, validate --pin-for), which holds back only what it protects.
const MaxRestoreGrace = events.MaxRestoreGrace

// DefaultRestoreGrace is the grace kcleanup init --mirror-topic and
// kcleanup mirror attach write with the attachment unless told otherwise:
// the time a Flink Agents job takes from its recovery check on the mirror
// to the end of its replay (the job restarts, restores its state from the
// checkpoint, then replays the action-state topic from the recovery
// point's offsets), with room for a large state. A longer restore sets a
// longer grace (kcleanup mirror grace) or is pinned. Waiting costs no
// safety: the boundary is committed and recovery enforces it meanwhile.
const DefaultRestoreGrace = 15 * time.Minute

// MirrorGrace is the restore grace a run honours: the one the attached
// mirror's attachment carries (the log's: every owner and every apply
// reads the same), or process's own (Config.RestoreGrace, --restore-grace)
// when that is longer: a process may lengthen the grace, never shorten it.
// An attachment of schema version 2 carries none: only the process's
// counts (doctor warns of it). 0 with no mirror attached.
func MirrorGrace(st *projector.State, process time.Duration) time.Duration {
	m, ok := st.Mirror()
	if !ok {
		return 0
	}
	if m.HasGrace && m.RestoreGrace > process {
		return m.RestoreGrace
	}
	return process
}

// GraceWait is a run stopped before DELETING to wait out the restore
// grace: no DeleteRecords for the plan before Until.
type GraceWait struct {
	PlanID string
	Mirror string
	// Offset is the mirror record that first showed the plan covered.
	Offset int64
	// From is when the brokers made that record readable to the job
	// (Known), or, when that cannot be known, when this executor first saw
	// it (Config.GraceSeen, else the read's own time).
	From  time.Time
	Known bool
	Grace time.Duration
	Until time.Time
}

// graceError is the error of a run that waits out the grace (Step.Err of
// its Pause), for people: executors read Step.Pause.
type graceError struct{ g GraceWait }

func (e *graceError) Error() string {
	since := "the mirror's record of it was acknowledged at " + e.g.From.UTC().Format(time.RFC3339Nano)
	if !e.g.Known {
		since = "its time on the mirror is not known; first seen at " + e.g.From.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("plan %s: waiting out the restore grace of %s until %s: mirror %s shows the plan (offset %d); %s",
		e.g.PlanID, e.g.Grace, e.g.Until.UTC().Format(time.RFC3339), e.g.Mirror, e.g.Offset, since)
}

// ErrRestoreGrace marks a run that stopped to wait out the restore grace.
var ErrRestoreGrace = errors.New("waiting out the restore grace")

// RestoreGrace decides, on the mirror as read (v.ReadAt is the reader's
// clock when the read ended), whether plan's deletion must still wait out
// grace: wait is true until From+grace. From is the time the brokers made
// the first mirror record that covers the plan readable to a
// read_committed reader (MirrorView.Visible: the commit marker's broker
// timestamp for a transactional record), so every reader, a worker
// resuming after a crash too, waits until the same instant; the reader's
// clock only judges whether that instant has passed. A first covering
// record whose time is unknown takes the time of the next covering record
// that has one (readable no earlier: read_committed reads in offset
// order), else seen (when the executor first saw it; zero: now, ReadAt).
func RestoreGrace(v MirrorView, plan events.Plan, grace time.Duration, seen time.Time) (g GraceWait, wait bool) {
	if grace <= 0 {
		return GraceWait{}, false
	}
	g = GraceWait{PlanID: plan.PlanID, Mirror: v.Topic, Offset: -1, Grace: grace}
	if v.Fold != nil {
		plans := map[string]events.Offsets{}
		for _, o := range v.Fold.Operations() {
			plans[o.Plan.PlanID] = o.Plan.Offsets
		}
		for _, e := range v.Fold.Entries() {
			if e.Err != nil || e.Unread || !coversPlan(plans[e.PlanID], plan.Offsets) {
				continue
			}
			if g.Offset < 0 {
				g.Offset = e.Offset
			}
			if t, ok := v.Visible[e.Offset]; ok {
				g.From, g.Known = t, true
				break
			}
		}
	}
	if !g.Known {
		g.From = seen
		if g.From.IsZero() {
			g.From = v.ReadAt
		}
	}
	g.Until = g.From.Add(grace)
	return g, v.ReadAt.Before(g.Until)
}

// coversPlan: offs is at or above plan on every plan partition.
func coversPlan(offs, plan events.Offsets) bool {
	if offs == nil {
		return false
	}
	for p, off := range plan {
		got, ok := offs[p]
		if !ok || got < off {
			return false
		}
	}
	return true
}

// graceStep is the Pause of a run that must wait out the grace.
func graceStep(g GraceWait) Step {
	err := errors.WithHintf(errors.Mark(&graceError{g: g}, ErrRestoreGrace),
		"nothing to do: the plan is committed and recovery enforces it; the deletion follows at %s (a worker retries then; kcleanup apply waits in-process). The mirror's attachment sets the grace (kcleanup mirror grace); --restore-grace may only lengthen it",
		g.Until.UTC().Format(time.RFC3339))
	return pauseStep(Pause, Paused{Grace: &g}, err)
}
