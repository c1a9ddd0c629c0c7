package worker

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// FleetStatus is the worker fleet as this replica last saw it: the members
// of its consumer group and the control topics each owns. It is what the
// group coordinator answered to DescribeGroups, not a promise: ownership
// can move at any moment, and safety never depends on it.
type FleetStatus struct {
	Members     []FleetMember `json:"members"`
	DescribedAt time.Time     `json:"describedAt"`
	// Error is why the last description failed (Members are then those of
	// the last success, if any).
	Error string `json:"error,omitempty"`
}

// FleetMember is one replica in the group.
type FleetMember struct {
	MemberID string `json:"memberId"`
	ClientID string `json:"clientId"`
	// Host is the member's address as the broker sees it.
	Host string `json:"host"`
	// ControlTopics are the control topics assigned to it: it finishes
	// their operations.
	ControlTopics []string `json:"controlTopics"`
	// Self marks the replica that served this document.
	Self bool `json:"self"`
}

// fleetEvery is how often a replica describes its group for /v1/status.
const fleetEvery = 3 * time.Second

// describeFleet keeps d.fleet up to date until ctx ends. It asks through
// the group member's own client, so that its requests never share a
// connection (or a dial error) with validation and reads.
func (d *Daemon) describeFleet(ctx context.Context, member *kgo.Client) {
	adm := kadm.NewClient(member)
	for ctx.Err() == nil {
		d.fleet.Store(d.describeOnce(ctx, adm, member))
		sleep(ctx, fleetEvery)
	}
}

func (d *Daemon) describeOnce(ctx context.Context, adm *kadm.Client, member *kgo.Client) *FleetStatus {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.readTimeout)
	defer cancel()
	f := &FleetStatus{Members: []FleetMember{}, DescribedAt: time.Now().UTC()}
	described, err := adm.DescribeGroups(ctx, d.cfg.group)
	if err == nil {
		err = described.Error()
	}
	if err != nil {
		f.Error = err.Error()
		if last := d.fleet.Load(); last != nil {
			f.Members = last.Members
		}
		return f
	}
	self, _ := member.GroupMetadata()
	for _, m := range described[d.cfg.group].Members {
		fm := FleetMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, ControlTopics: []string{}, Self: m.MemberID == self}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				if len(t.Partitions) > 0 {
					fm.ControlTopics = append(fm.ControlTopics, t.Topic)
				}
			}
		}
		slices.Sort(fm.ControlTopics)
		f.Members = append(f.Members, fm)
	}
	slices.SortFunc(f.Members, func(a, b FleetMember) int {
		if a.MemberID < b.MemberID {
			return -1
		}
		if a.MemberID > b.MemberID {
			return 1
		}
		return 0
	})
	return f
}
