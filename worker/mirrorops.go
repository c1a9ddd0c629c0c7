package worker

import (
	"context"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcleanup/kcleanup/protocol"
)

// The operator's side of the Flink Agents mirror: read it, create it,
// assess how it stands. The rules are package protocol's (AttachMirror, AssessMirror); the apply
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
	rf, err := c.replicationFactorFor(ctx, name, replicationFactor)
	if err != nil {
		return false, err
	}
	resp, err := c.adm.CreateTopic(ctx, 1, replicationFactor, MirrorTopicConfigs(rf), name)
	if err == nil {
		err = resp.Err
	}
	created := err == nil
	if errors.Is(err, kerr.TopicAlreadyExists) {
		err = nil
	}
	if err != nil {
		return false, c.createHint(ctx, errors.Wrapf(err, "create mirror topic %q", name))
	}
	return created, c.waitForLeaders(ctx, name)
}

// AssessMirror reads the attached mirror and says how it stands against
// the boundary (protocol.AssessMirror); ok is false when none is attached.
// ctl is copied out of the projection first (protocol.MirrorControlOf), so
// the projection is not held while the mirror is read. With checkWrite,
// this client's permissions to write it are probed too.
func (c *Cluster) AssessMirror(ctx context.Context, ctl protocol.MirrorControl, checkWrite bool, bootstrap string) (protocol.MirrorAssessment, bool, error) {
	if !ctl.Attached {
		return protocol.MirrorAssessment{}, false, nil
	}
	topic := ctl.Mirror.Topic
	v, err := c.ReadMirror(ctx, topic)
	if held := (*MirrorHeldError)(nil); errors.As(err, &held) {
		// Not a failure of the reader: say whose transaction pins it.
		return protocol.HeldMirror(ctl, held.Hold), true, nil
	}
	if err != nil && !IsAuthorizationError(err) {
		return protocol.MirrorAssessment{}, true, err
	}
	if err != nil { // cannot even read it
		return protocol.UnreadableMirror(ctl, c.denied(err, protocol.MirrorRead(topic))), true, nil
	}
	var writeErr error
	if checkWrite && !v.Missing {
		missing, err := c.MissingPermissions(ctx, protocol.MirrorNeeds(topic))
		if err != nil {
			return protocol.MirrorAssessment{}, true, err
		}
		writeErr = protocol.Unauthorized(missing, c.principal, bootstrap)
	}
	return protocol.AssessMirror(ctl, v, writeErr), true, nil
}
