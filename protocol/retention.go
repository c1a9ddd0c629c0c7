package protocol

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
)

// Following a retention policy ("Follow the job", docs/design.md): the owner
// lists the watched locations and reads the markers of each recovery point
// found (I/O, worker); Follow decides, purely, whether that is a plan.
// Every reader of the same listing and log reaches the same answer.

// WatchedLocation is what listing one watched location found.
type WatchedLocation struct {
	// Location is the watched location as the policy names it.
	Location string
	// Outside: the location is not under the worker's --checkpoint-root
	// allowlist; it was not read.
	Outside bool
	// Err is why the location could not be listed (a failed listing, an
	// unreachable store); "" when it was.
	Err string
	// Points are the completed recovery points found (a _metadata
	// present), in listing order; directories still being written are not.
	Points []RecoveryPointRead
}

// RecoveryPointRead is one completed recovery point and its markers, or why
// they could not be read.
type RecoveryPointRead struct {
	// Path names the point: its directory (…/chk-N or …/savepoint-…).
	Path string
	// Markers are the selected operator's markers, one per subtask.
	Markers []events.Marker
	// Err is why the markers could not be read (a damaged _metadata, several
	// operators holding markers with no operator named, a missing subtask);
	// "" when they were.
	Err string
}

// FollowInput is everything Follow decides from.
type FollowInput struct {
	Policy  projector.Policy
	Topic   string
	TopicID string
	// Locations are the listings, one per watched location in the policy's order.
	Locations []WatchedLocation
	// Pins are the control topic's pins; those active at Now count.
	Pins []projector.Pin
	// Boundary is the committed boundary.
	Boundary events.Offsets
	Now      time.Time
}

// The reasons for no plan (FollowDecision.NoPlan): stable words for the
// metric label and the alert.
const (
	NoPlanOutsideRoots  = "outside-roots"   // a watched location is outside --checkpoint-root
	NoPlanListFailed    = "list-failed"     // a listing failed or the store is unreachable
	NoPlanUnreadable    = "unreadable"      // a recovery point's markers could not be read
	NoPlanNoPoint       = "no-point"        // no completed recovery point of this topic
	NoPlanBelowAdvance  = "below-advance"   // no partition rises by --min-advance
	NoPlanNothingToRise = "nothing-to-rise" // the boundary is already where the points allow
)

// PointVerdict is how Follow read one recovery point.
type PointVerdict struct {
	Location string
	Path     string
	// Offsets are the point's needs: per partition the minimum over its
	// markers; nil when unreadable or foreign.
	Offsets events.Offsets
	// Foreign: its markers are of another topic or topic ID; they do not count.
	Foreign bool
	// Err is why it could not be read.
	Err string
	// Unrestorable lists the partitions where it needs less than the
	// committed boundary: restoring it would not find its records there.
	Unrestorable []int32
	// Bounding: it gives the minimum on some partition of the plan.
	Bounding bool
}

// FollowDecision is Follow's answer: a plan, or why not.
type FollowDecision struct {
	Points []PointVerdict
	// Target is the per-partition minimum over every readable point and
	// active pin, never below the committed boundary; nil when no point counts.
	Target events.Offsets
	// Plan is the plan to commit; nil with NoPlan set.
	Plan *events.Plan
	// NoPlan is a reason constant; Why says it for a person.
	NoPlan string
	Why    string
}

// Follow decides one round of a retention policy (pure).
func Follow(in FollowInput) FollowDecision {
	var d FollowDecision
	var blockKind, block string
	for _, loc := range in.Locations {
		switch {
		case loc.Outside && blockKind == "":
			blockKind, block = NoPlanOutsideRoots, fmt.Sprintf("watched location %s is outside this worker's --checkpoint-root allowlist: it is not read, and a policy is never followed on part of its locations", loc.Location)
		case loc.Err != "" && blockKind == "":
			blockKind, block = NoPlanListFailed, fmt.Sprintf("watched location %s could not be listed: %s", loc.Location, loc.Err)
		}
		for _, pt := range loc.Points {
			v := PointVerdict{Location: loc.Location, Path: pt.Path, Err: pt.Err}
			if v.Err == "" {
				plan, err := events.BuildPlan(pt.Path, pt.Markers)
				switch {
				case err != nil:
					v.Err = err.Error()
				case plan.Topic != in.Topic || plan.TopicID != in.TopicID:
					v.Foreign = true
				default:
					v.Offsets = plan.Offsets
				}
			}
			if v.Err != "" && blockKind == "" {
				blockKind, block = NoPlanUnreadable, fmt.Sprintf("recovery point %s could not be read: %s", pt.Path, v.Err)
			}
			d.Points = append(d.Points, v)
		}
	}
	// Unrestorable is reported whatever the round decides.
	for i := range d.Points {
		p := &d.Points[i]
		for _, part := range p.Offsets.Partitions() {
			if b, ok := in.Boundary[part]; ok && p.Offsets[part] < b {
				p.Unrestorable = append(p.Unrestorable, part)
			}
		}
	}
	if blockKind != "" {
		d.NoPlan, d.Why = blockKind, block
		return d
	}
	// The per-partition minimum over the points of this topic, and which
	// point gives it.
	target := events.Offsets{}
	by := map[int32]int{}
	for i, p := range d.Points {
		for part, off := range p.Offsets {
			if cur, ok := target[part]; !ok || off < cur {
				target[part], by[part] = off, i
			}
		}
	}
	if len(target) == 0 {
		d.NoPlan, d.Why = NoPlanNoPoint, fmt.Sprintf("no completed recovery point of topic %s (ID %s) in %s: a wrong path or a job not started must never read as \"nothing is needed\"",
			in.Topic, in.TopicID, strings.Join(in.Policy.Watch, ", "))
		return d
	}
	// Active pins hold it down too; the boundary only rises.
	pinned := map[int32]string{}
	for _, pin := range in.Pins {
		for part, off := range pin.Offsets {
			if cur, ok := target[part]; ok && pin.Protects(part, in.Now) && pin.Topic == in.Topic && pin.TopicID == in.TopicID && off < cur {
				target[part] = off
				pinned[part] = pin.PinID
			}
		}
	}
	rise := false
	anyRise := false
	for part, off := range target {
		b := in.Boundary[part]
		if off <= b {
			target[part] = b
			continue
		}
		anyRise = true
		if off-b >= max(in.Policy.MinAdvance, 1) {
			rise = true
		}
	}
	d.Target = target
	var bounding []string
	for part, i := range by {
		// A point bounds a partition when the target is its offset there
		// (not a pin's, not the boundary above it).
		if _, p := pinned[part]; !p && d.Points[i].Offsets[part] == target[part] {
			d.Points[i].Bounding = true
		}
	}
	for _, p := range d.Points {
		if p.Bounding {
			bounding = append(bounding, p.Path)
		}
	}
	switch {
	case !anyRise:
		d.NoPlan, d.Why = NoPlanNothingToRise, "the committed boundary is already where the oldest recovery point (and every active pin) allows"
		return d
	case !rise:
		d.NoPlan, d.Why = NoPlanBelowAdvance, fmt.Sprintf("no partition would rise by at least the minimum advance (%d)", in.Policy.MinAdvance)
		return d
	}
	// The recovery point names what bounds the plan: the points, then the
	// pins that hold a partition below every point.
	slices.Sort(bounding)
	var pins []string
	for _, id := range pinned {
		pins = append(pins, "pin "+id)
	}
	slices.Sort(pins)
	rp := strings.Join(append(bounding, slices.Compact(pins)...), " + ")
	plan := events.Plan{SourceRecoveryPoint: rp, Topic: in.Topic, TopicID: in.TopicID, Offsets: target.Clone()}
	plan.PlanID = events.ComputePlanID(plan.SourceRecoveryPoint, plan.Topic, plan.TopicID, plan.Offsets)
	d.Plan = &plan
	return d
}

// FollowActor is the actor of the records a policy's plan writes: it names
// the policy, and the worker that ran the round.
func FollowActor(p projector.Policy, worker string) string {
	return p.Name() + " via " + worker
}

// FollowCommits decides whether a round commits d's plan: a plan not yet on
// the control topic, or one a round left only PLANNED (it died before its
// COMMITTED, and nothing else ever commits it). A plan further on is the
// owner's pass's to finish.
func FollowCommits(d FollowDecision, st *projector.State) bool {
	if d.Plan == nil {
		return false
	}
	op, known := st.Operation(d.Plan.PlanID)
	return !known || op.State == fsm.Planned
}
