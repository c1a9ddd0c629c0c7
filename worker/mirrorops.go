package worker

import (
	"context"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcleanup/kcleanup/worker/mirrorcheck"
	"github.com/kcleanup/kcleanup/worker/protocol"
)

// The operator's side of the Flink Agents mirror: read it, create it,
// assess how it stands. The rules are package mirrorcheck's; the apply
// protocol's mirror steps are package protocol's.

// MirrorTopicConfigs are the configs kcleanup creates a mirror topic with:
// the control topic's (ControlTopicConfigs). A Flink Agents job needs only
// one partition and cleanup.policy=compact; the rest is there because the
// mirror carries the boundary the job enforces: min.insync.replicas=2 and
// no unclean leader election keep an acknowledged COMMITTED (written
// before any deletion) from being lost, and a long delete.retention.ms and
// min.compaction.lag.ms keep a stray writer's tombstone, which makes the
// job fail closed, from being cleaned away with the plan under it, which
// would silently lower the boundary the job enforces.
func MirrorTopicConfigs(replicationFactor int16) map[string]*string {
	return ControlTopicConfigs(replicationFactor)
}

// CreateMirrorTopic creates a mirror topic (one partition,
// MirrorTopicConfigs); false, and no error, when it exists.
func (c *Cluster) CreateMirrorTopic(ctx context.Context, name string, replicationFactor int16) (bool, error) {
	resp, err := c.adm.CreateTopic(ctx, 1, replicationFactor, MirrorTopicConfigs(replicationFactor), name)
	if err == nil {
		err = resp.Err
	}
	created := err == nil
	if errors.Is(err, kerr.TopicAlreadyExists) {
		err = nil
	}
	if err != nil {
		return false, errors.WithHint(errors.Wrapf(err, "create mirror topic %q", name),
			"check that the principal may create topics, or create it yourself with one partition and cleanup.policy=compact")
	}
	return created, c.waitForLeaders(ctx, name)
}

// AssessMirror reads the attached mirror and says how it stands against
// the boundary (mirrorcheck.Assess); ok is false when none is attached.
// ctl is copied out of the projection first (mirrorcheck.ControlOf), so
// the projection is not held while the mirror is read. With checkWrite,
// this client's permissions to write it are probed too.
func (c *Cluster) AssessMirror(ctx context.Context, ctl mirrorcheck.Control, checkWrite bool, bootstrap string) (mirrorcheck.Assessment, bool, error) {
	if !ctl.Attached {
		return mirrorcheck.Assessment{}, false, nil
	}
	topic := ctl.Mirror.Topic
	v, err := c.ReadMirror(ctx, topic)
	if err != nil && !IsAuthorizationError(err) {
		return mirrorcheck.Assessment{}, true, err
	}
	if err != nil { // cannot even read it
		return mirrorcheck.Unreadable(ctl, c.denied(err, protocol.MirrorRead(topic))), true, nil
	}
	var writeErr error
	if checkWrite && !v.Missing {
		missing, err := c.MissingPermissions(ctx, protocol.MirrorNeeds(topic))
		if err != nil {
			return mirrorcheck.Assessment{}, true, err
		}
		writeErr = protocol.Unauthorized(missing, c.principal, bootstrap)
	}
	return mirrorcheck.Assess(ctl, v, writeErr), true, nil
}
