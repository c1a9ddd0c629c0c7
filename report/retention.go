package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
)

// RetentionStatus is a retention policy as the log decided it: what is
// followed, who set it, when and why, and who cleared it.
type RetentionStatus struct {
	Name            string   `json:"name"`
	Topic           string   `json:"topic"`
	Watch           []string `json:"watch"`
	Every           string   `json:"every"`
	MinAdvance      int64    `json:"minAdvance"`
	OperatorUID     string   `json:"operatorUid,omitempty"`
	OperatorUIDHash string   `json:"operatorUidHash,omitempty"`
	// Offset, At, Actor and Reason are those of the RETENTION_SET.
	Offset  int64      `json:"offset"`
	At      time.Time  `json:"at"`
	Actor   string     `json:"actor"`
	Reason  string     `json:"reason"`
	Cleared *PolicyEnd `json:"cleared,omitempty"`
	Active  bool       `json:"active"`
}

// PolicyEnd is a RETENTION_CLEARED.
type PolicyEnd struct {
	Offset int64     `json:"offset"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Reason string    `json:"reason"`
}

// RetentionStatusOf is the status of policy p.
func RetentionStatusOf(p projector.Policy) RetentionStatus {
	s := RetentionStatus{Name: p.Name(), Topic: p.Topic, Watch: append([]string{}, p.Watch...), Every: p.Every.String(),
		MinAdvance: p.MinAdvance, OperatorUID: p.OperatorUID, OperatorUIDHash: p.OperatorUIDHash,
		Offset: p.Offset, At: p.At, Actor: p.Actor, Reason: p.Reason, Active: p.Active()}
	if c := p.Cleared; c != nil {
		s.Cleared = &PolicyEnd{Offset: c.Offset, At: c.At, Actor: c.Actor, Reason: c.Reason}
	}
	return s
}

// RetentionRound is one round of a policy as a person or a program reads it:
// every recovery point found, the bound, and the plan or why none.
type RetentionRound struct {
	Points []RetentionPoint `json:"points"`
	// Target is the per-partition bound over every point and active pin
	// (never below the committed boundary); absent when no point counts.
	Target events.Offsets `json:"target,omitempty"`
	// Plan is the plan the round commits (or would); absent with NoPlan.
	Plan *events.Plan `json:"plan,omitempty"`
	// NoPlan is the reason word (protocol.NoPlan*), Why its sentence.
	NoPlan string `json:"noPlan,omitempty"`
	Why    string `json:"why,omitempty"`
}

// RetentionPoint is one recovery point found.
type RetentionPoint struct {
	Location     string         `json:"location"`
	Path         string         `json:"path"`
	Offsets      events.Offsets `json:"offsets,omitempty"`
	Foreign      bool           `json:"foreign,omitempty"`
	Error        string         `json:"error,omitempty"`
	Unrestorable []int32        `json:"unrestorable,omitempty"`
	Bounding     bool           `json:"bounding,omitempty"`
}

// RetentionRoundOf reports decision d.
func RetentionRoundOf(d protocol.FollowDecision) RetentionRound {
	r := RetentionRound{Points: []RetentionPoint{}, Target: d.Target, Plan: d.Plan, NoPlan: d.NoPlan, Why: d.Why}
	for _, p := range d.Points {
		r.Points = append(r.Points, RetentionPoint{Location: p.Location, Path: p.Path, Offsets: p.Offsets, Foreign: p.Foreign,
			Error: p.Err, Unrestorable: p.Unrestorable, Bounding: p.Bounding})
	}
	return r
}

// WriteRetentionRound prints a round for a person: one line per point, then
// the plan or the reason for none.
func WriteRetentionRound(w io.Writer, r RetentionRound) error {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Recovery points found (%d):\n", len(r.Points))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  POINT\tOFFSETS\tNOTE")
	for _, p := range r.Points {
		var note []string
		switch {
		case p.Error != "":
			note = append(note, "UNREADABLE: "+Clip(p.Error, TextLimit))
		case p.Foreign:
			note = append(note, "foreign: markers of another topic or topic ID, not counted")
		}
		if p.Bounding {
			note = append(note, "bounds cleanup now")
		}
		if len(p.Unrestorable) > 0 {
			note = append(note, fmt.Sprintf("unrestorable on partitions %v: below the committed boundary", p.Unrestorable))
		}
		offs := "-"
		if p.Offsets != nil {
			offs = p.Offsets.String()
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", p.Path, offs, strings.Join(note, "; "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if r.Plan == nil {
		_, err := fmt.Fprintf(w, "No plan (%s): %s\n", r.NoPlan, r.Why)
		return err
	}
	_, err := fmt.Fprintf(w, "Plan %s would follow: offsets %s, recovery point %s\n", r.Plan.PlanID, r.Plan.Offsets, r.Plan.SourceRecoveryPoint)
	return err
}

// RetentionFollow is what the owner's last round of the policy decided
// (/v1/status, the console): the plan it committed or why none, so that a
// blocked policy is never silent.
type RetentionFollow struct {
	Policy string    `json:"policy"`
	At     time.Time `json:"at"`
	NextAt time.Time `json:"nextAt"`
	// Points is how many recovery points the round found; Read and Cached
	// how many _metadata files it read and skipped as already read.
	Points int `json:"points"`
	Read   int `json:"read"`
	Cached int `json:"cached"`
	// PlanID is the plan the round committed (or found already committed).
	PlanID string `json:"planId,omitempty"`
	// NoPlan and Why say why the round made no plan; Error is a round that
	// failed (the cluster, the commit).
	NoPlan string `json:"noPlan,omitempty"`
	Why    string `json:"why,omitempty"`
	Error  string `json:"error,omitempty"`
	// Blocked: the policy cannot be followed until someone acts (a location
	// outside the roots, a listing or point that cannot be read, no point
	// at all, a failed round); the alert fires on it.
	Blocked bool `json:"blocked"`
}

// RetentionBlocks reports whether a round's reason for no plan needs an
// operator: every reason but "the boundary is already there" and "the rise
// is below --min-advance".
func RetentionBlocks(noPlan string) bool {
	return noPlan != "" && noPlan != protocol.NoPlanBelowAdvance && noPlan != protocol.NoPlanNothingToRise
}
