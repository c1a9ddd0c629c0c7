package report

import (
	"fmt"
	"time"

	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
)

// DefaultAheadTolerance is how far a COMMITTED's "at" may run ahead of the
// time the broker appended it before status, doctor and the metrics show it
// (--clock-tolerance): hosts on NTP agree to well under a second, and a
// record is appended after it is stamped, so a minute ahead is a clock
// that is wrong, not a slow network.
const DefaultAheadTolerance = time.Minute

// ClockAheadRecord is a COMMITTED whose writer's clock ran ahead of the
// broker's by more than the tolerance (docs/design.md §12, "The two
// clocks"): the log judged the pins' expiries at its "at", so it may have
// committed above a pin the broker's clock still held (no deletion follows
// until that clock passes: PinHolds).
type ClockAheadRecord struct {
	PlanID string `json:"planId"`
	Offset int64  `json:"offset"`
	// At is the writer's "at"; Appended the broker's time of the record.
	At       time.Time `json:"at"`
	Appended time.Time `json:"appended"`
	// AheadSeconds is At minus Appended.
	AheadSeconds float64 `json:"aheadSeconds"`
	Actor        string  `json:"actor"`
}

// ClockAheadOf lists the COMMITTED records of s stamped more than
// tolerance ahead of the broker (at least projector.MinAhead; 0:
// DefaultAheadTolerance), in log order (never nil).
func ClockAheadOf(s *projector.State, tolerance time.Duration) []ClockAheadRecord {
	if tolerance <= 0 {
		tolerance = DefaultAheadTolerance
	}
	out := []ClockAheadRecord{}
	for _, a := range s.Ahead(max(tolerance, projector.MinAhead)) {
		out = append(out, ClockAheadRecord{PlanID: a.PlanID, Offset: a.Offset, At: a.At, Appended: a.Appended,
			AheadSeconds: a.Lead().Seconds(), Actor: a.Actor})
	}
	return out
}

// PinHoldStatus is an operation whose deletion a pin holds back by the
// broker's clock (protocol.PinHeld), as of the newest record read.
type PinHoldStatus struct {
	PlanID    string `json:"planId"`
	PinID     string `json:"pinId"`
	Partition int32  `json:"partition"`
	// CommittedAt is the COMMITTED's "at"; BrokerTime the newest broker
	// time read (absent: none, a CreateTime control topic); Expires the
	// pin's expiry by the broker's clock (absent: it cannot be judged, the
	// hold lasts until the pin is unpinned).
	CommittedAt time.Time  `json:"committedAt"`
	BrokerTime  *time.Time `json:"brokerTime,omitempty"`
	Expires     *time.Time `json:"expires,omitempty"`
	Reason      string     `json:"reason"`
}

// PinHoldsOf lists the COMMITTED and DELETING operations a pin holds back
// by the broker's clock.
func PinHoldsOf(s *projector.State) []PinHoldStatus {
	var out []PinHoldStatus
	for _, op := range s.Pending() {
		if op.State != fsm.Committed && op.State != fsm.Deleting {
			continue
		}
		h, held := protocol.PinHeld(s, op)
		if !held {
			continue
		}
		ps := PinHoldStatus{PlanID: op.PlanID, PinID: h.Pin.PinID, Partition: h.Partition, CommittedAt: h.CommittedAt,
			Reason: protocol.PinHoldReason(h)}
		if !h.Broker.IsZero() {
			b := h.Broker
			ps.BrokerTime = &b
		}
		if !h.Expires.IsZero() {
			e := h.Expires
			ps.Expires = &e
		}
		out = append(out, ps)
	}
	return out
}

// MirrorGraceStatus is the restore grace the attached mirror's attachment
// carries (protocol.MirrorGrace): every owner and every apply waits it out
// after the mirror shows a plan, and a process's --restore-grace may only
// lengthen it.
type MirrorGraceStatus struct {
	Mirror string `json:"mirror"`
	// Seconds is the grace; Unset: the attachment predates schema version
	// 4 and carries none (only a process's --restore-grace applies: set one
	// with kcleanup mirror grace).
	Seconds int64 `json:"seconds"`
	Unset   bool  `json:"unset,omitempty"`
	// Offset is the MIRROR_ATTACHED that carries it.
	Offset int64 `json:"offset"`
}

// MirrorGraceOf is the attached mirror's restore grace, nil with none attached.
func MirrorGraceOf(s *projector.State) *MirrorGraceStatus {
	m, ok := s.Mirror()
	if !ok {
		return nil
	}
	return &MirrorGraceStatus{Mirror: m.Topic, Seconds: int64(m.RestoreGrace / time.Second), Unset: !m.HasGrace, Offset: m.Offset}
}

// CheckClocks is doctor's findings on the two clocks (docs/design.md §12):
// a COMMITTED stamped ahead of the broker by more than the tolerance (the
// writer's clock is wrong: WARN, with the writer), a deletion a pin holds
// by the broker's clock (OK: it proceeds by itself), and a mirror
// attachment that carries no restore grace (WARN).
func CheckClocks(st Status) []protocol.Finding {
	var out []protocol.Finding
	for _, a := range st.ClockAhead {
		out = append(out, protocol.Finding{Severity: protocol.Warn, Subject: "control topic " + st.ControlTopic,
			Message: fmt.Sprintf("the COMMITTED of plan %s (offset %d) by %s is stamped %s, %s ahead of the broker's time of the record (%s): that writer's clock runs ahead, and the log judged pins' expiries at its \"at\"; nothing above a pin is deleted until the broker's clock passes it",
				a.PlanID, a.Offset, SingleLine(a.Actor), a.At.UTC().Format(time.RFC3339), time.Duration(a.AheadSeconds*float64(time.Second)).Round(time.Second), a.Appended.UTC().Format(time.RFC3339)),
			Hint: "put the host of " + SingleLine(a.Actor) + " on NTP (chrony, systemd-timesyncd); a commit it stamps ahead may pass a pin the broker's clock still holds (docs/design.md §12)"})
	}
	for _, h := range st.PinHolds {
		out = append(out, protocol.Finding{Severity: protocol.OK, Subject: "plan " + h.PlanID,
			Message: "held by pin " + h.PinID + " until the broker's clock passes its expiry: " + SingleLine(h.Reason)})
	}
	if g := st.MirrorGrace; g != nil && g.Unset {
		out = append(out, protocol.Finding{Severity: protocol.Warn, Subject: "mirror " + g.Mirror,
			Message: fmt.Sprintf("its attachment (offset %d) carries no restore grace (written before the grace was on the control topic): only a process's --restore-grace holds a deletion back for a Flink Agents restore, and a worker started without it does not", g.Offset),
			Hint:    "kcleanup mirror grace " + protocol.DefaultRestoreGrace.String() + " --control-topic " + st.ControlTopic + " --reason \"the longest restore we run\""})
	}
	return out
}
