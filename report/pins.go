package report

import (
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
)

// PinStatus is one pinned recovery point as the log decided it
// (docs/design.md §12). State is the log's: active, partial, void or
// unpinned; whether Expires has passed is for the reader to judge with its
// clock (this package reads none), so an expired pin still says active
// here, with its expiry beside it.
type PinStatus struct {
	PinID         string         `json:"pinId"`
	RecoveryPoint string         `json:"recoveryPoint"`
	Offsets       events.Offsets `json:"offsets"`
	// Expires is absent for a pin without expiry. BrokerExpires is when it
	// expires by the broker's clock (protocol.BrokerExpiry: its PINNED's
	// broker time plus its duration, if later): nothing above it is
	// deleted before; absent when that cannot be judged (no expiry, or a
	// PINNED with no broker time).
	Expires       *time.Time `json:"expires,omitempty"`
	BrokerExpires *time.Time `json:"brokerExpires,omitempty"`
	State         string     `json:"state"`
	// Offset, At, Actor and Reason are those of the PINNED.
	Offset int64     `json:"offset"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Reason string    `json:"reason"`
	// Void lists the partitions the pin protects nothing on: the boundary
	// (and the plan that set it) when the PINNED was folded.
	Void []VoidPartition `json:"void"`
	// Unpinned is the UNPINNED that ended it.
	Unpinned *PinEnd `json:"unpinned,omitempty"`
	// RejectedCommits are the offsets of the COMMITTED records it rejected.
	RejectedCommits []int64 `json:"rejectedCommits"`
}

// VoidPartition is a partition a pin protects nothing on.
type VoidPartition struct {
	Partition int32  `json:"partition"`
	Boundary  int64  `json:"boundary"`
	SetBy     string `json:"setBy"`
}

// PinEnd is an UNPINNED.
type PinEnd struct {
	Offset int64     `json:"offset"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Reason string    `json:"reason"`
}

// PinsOf lists every pin of the projection, in log order (never nil).
func PinsOf(s *projector.State) []PinStatus {
	out := []PinStatus{}
	for _, p := range s.Pins() {
		out = append(out, PinStatusOf(p))
	}
	return out
}

// PinStatusOf is one pin's document.
func PinStatusOf(p projector.Pin) PinStatus {
	ps := PinStatus{PinID: p.PinID, RecoveryPoint: p.RecoveryPoint, Offsets: p.Offsets, State: p.Status(time.Time{}),
		Offset: p.Offset, At: p.At, Actor: p.Actor, Reason: p.Reason, Void: []VoidPartition{}, RejectedCommits: p.Rejected}
	if !p.Expires.IsZero() {
		e := p.Expires
		ps.Expires = &e
	}
	if b, ok := protocol.BrokerExpiry(p); ok {
		ps.BrokerExpires = &b
	}
	if ps.RejectedCommits == nil {
		ps.RejectedCommits = []int64{}
	}
	for _, part := range p.Offsets.Partitions() {
		if v, ok := p.Void[part]; ok {
			ps.Void = append(ps.Void, VoidPartition{Partition: part, Boundary: v.Boundary, SetBy: v.SetBy})
		}
	}
	if e := p.Unpinned; e != nil {
		ps.Unpinned = &PinEnd{Offset: e.Offset, At: e.At, Actor: e.Actor, Reason: e.Reason}
	}
	return ps
}
