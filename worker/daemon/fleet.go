package daemon

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/report"
)

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

func (d *Daemon) describeOnce(ctx context.Context, adm *kadm.Client, member *kgo.Client) *report.FleetStatus {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.readTimeout)
	defer cancel()
	f := &report.FleetStatus{Members: []report.FleetMember{}, DescribedAt: time.Now().UTC()}
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
		fm := report.FleetMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, ControlTopics: []string{}, Self: m.MemberID == self}
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
	slices.SortFunc(f.Members, func(a, b report.FleetMember) int {
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
