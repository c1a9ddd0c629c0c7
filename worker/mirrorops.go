package worker

import (
	"context"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/worker/mirrorcheck"
	"github.com/kcleanup/kcleanup/worker/protocol"
)

// The operator's side of the Flink Agents mirror: read it, create it,
// assess how it stands. The rules are package mirrorcheck's; the apply
// protocol's mirror steps are package protocol's.

// ReadMirrorView reads a mirror topic as a Flink Agents job reads its
// control topic (ReadFlinkTopic), with its live topic ID. A topic that
// does not exist is a View with Missing set, not an error.
func (c *Cluster) ReadMirrorView(ctx context.Context, topic string) (mirrorcheck.View, error) {
	v := mirrorcheck.View{Topic: topic}
	info, err := c.TopicMetadata(ctx, topic)
	if errors.Is(err, ErrTopicNotFound) {
		v.Missing = true
		return v, nil
	}
	if err != nil {
		return v, err
	}
	ft, err := c.ReadFlinkTopic(ctx, topic)
	if errors.Is(err, ErrTopicNotFound) {
		v.Missing = true
		return v, nil
	}
	if err != nil {
		return v, err
	}
	v.TopicID, v.Partitions, v.CleanupPolicy, v.Fold, v.End = info.ID, ft.Partitions, ft.CleanupPolicy, ft.Fold, ft.End
	return v, nil
}

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

// mirrorProbe is what keeping a mirror in step needs on the mirror topic,
// as far as Metadata's authorized operations can tell (the transactional
// ID's Write cannot be asked of Metadata).
func mirrorProbe(mirror string) []Permission {
	return []Permission{
		{Operation: "Describe", ResourceType: "topic", Resource: mirror, For: "read the mirror topic's metadata"},
		{Operation: "Read", ResourceType: "topic", Resource: mirror, For: "read the Flink Agents mirror topic"},
		{Operation: "DescribeConfigs", ResourceType: "topic", Resource: mirror, For: "check the mirror topic's cleanup.policy"},
		{Operation: "Write", ResourceType: "topic", Resource: mirror, For: "write the Flink Agents mirror topic"},
	}
}

// AssessMirror reads the attached mirror and says how it stands against
// the boundary (mirrorcheck.Assess); ok is false when none is attached.
// With checkWrite, this client's permissions to write it are probed too.
func (c *Cluster) AssessMirror(ctx context.Context, st *projector.State, checkWrite bool, bootstrap string) (mirrorcheck.Assessment, bool, error) {
	att, ok := st.Mirror()
	if !ok {
		return mirrorcheck.Assessment{}, false, nil
	}
	v, err := c.ReadMirrorView(ctx, att.Topic)
	if err != nil && !IsAuthorizationError(err) {
		return mirrorcheck.Assessment{}, true, err
	}
	if err != nil { // cannot even read it
		return mirrorcheck.Unreadable(att, st, c.denied(err, mirrorProbe(att.Topic)[1])), true, nil
	}
	var writeErr error
	if checkWrite && !v.Missing {
		missing, err := c.MissingPermissions(ctx, mirrorProbe(att.Topic))
		if err != nil {
			return mirrorcheck.Assessment{}, true, err
		}
		writeErr = protocol.Unauthorized(missing, c.principal, bootstrap)
	}
	return mirrorcheck.Assess(att, st, v, writeErr), true, nil
}
