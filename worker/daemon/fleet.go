package daemon

import (
	"context"
	"os"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/cockroachdb/errors"

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
		if name, started, ok := ParseMemberClientID(m.ClientID); ok {
			fm.Replica, fm.StartedAt = name, &started
		}
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

// memberPrefix starts the client ID of every worker's group member.
const memberPrefix = "kcleanup-worker/"

// MemberClientID is the client ID of a replica's group member:
// "kcleanup-worker/<replica name>@<start time, RFC 3339 UTC>". The group
// coordinator shows it for every member (DescribeGroups, and
// kafka-consumer-groups --describe --members), so each replica's fleet
// table names every other one. Only the member uses it: the replica's other
// clients keep the configured client.id (quotas, broker logs).
func MemberClientID(replica string, started time.Time) string {
	return memberPrefix + replica + "@" + started.UTC().Format(time.RFC3339)
}

// ParseMemberClientID reads a MemberClientID back; ok is false for a member
// that is not a kcleanup worker of this version (its client ID is shown as is).
func ParseMemberClientID(clientID string) (replica string, started time.Time, ok bool) {
	rest, ok := strings.CutPrefix(clientID, memberPrefix)
	at := strings.LastIndexByte(rest, '@')
	if !ok || at <= 0 {
		return "", time.Time{}, false
	}
	started, err := time.Parse(time.RFC3339, rest[at+1:])
	if err != nil {
		return "", time.Time{}, false
	}
	return rest[:at], started.UTC(), true
}

// CheckReplicaName (WithReplicaName's check, for a CLI to run before it
// connects) refuses a name the fleet table could not show as given:
// blank, longer than 100 bytes, or with spaces or control characters.
func CheckReplicaName(name string) error {
	bad := strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0
	if name == "" || len(name) > 100 || bad {
		return errors.WithHint(errors.Newf("replica name %q is blank, longer than 100 bytes, or has spaces or control characters", name),
			"name the replica as operators know it (its pod name, or host:port), for example --replica-name kcleanup-worker-0")
	}
	return nil
}

// hostname is the default replica name.
func hostname() string {
	if h, err := os.Hostname(); err == nil && CheckReplicaName(h) == nil {
		return h
	}
	return "unknown-host"
}
