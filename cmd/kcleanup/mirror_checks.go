package main

import (
	"context"
	"fmt"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// attachError says that nothing was written when protocol.AttachMirror
// (which AttachMirror decides with) refused: a mirror that does not fit, or
// a control topic that cannot vouch for its boundary (degraded, history at
// risk). It exits 1 like any refused operation: 3 and 4 are the recovery
// gate's alone (exitcode.go).
func attachError(err error) error {
	if attachRefused(err) {
		return errors.WithHint(err, "nothing was written")
	}
	return err
}

// attachRefused reports whether err is a refusal of the mirror attach rules.
func attachRefused(err error) bool {
	return errors.Is(err, protocol.ErrMirrorRefused) || errors.Is(err, protocol.ErrMirrorCannotTell) || errors.Is(err, protocol.ErrDegraded)
}

// attachMirror attaches mirror to proj's control topic, unless
// it is attached already (then it says so and writes nothing). It returns
// what it did, for a finding or a line of output.
func attachMirror(ctx context.Context, c *worker.Cluster, g globalOptions, proj *worker.Projection, mirror, reason string, o worker.Options) (string, error) {
	if cur, ok := proj.State.Mirror(); ok && cur.Topic == mirror {
		if info, err := c.TopicMetadata(ctx, mirror); err == nil && info.ID == cur.TopicID {
			return fmt.Sprintf("already attached to control topic %s (offset %d); nothing written", proj.Topic, cur.Offset), nil
		}
	}
	m, err := c.AttachMirror(ctx, proj, mirror, reason, o)
	if err != nil {
		return "", attachError(planError(g, err))
	}
	return fmt.Sprintf("attached to control topic %s (MIRROR_ATTACHED at offset %d, topic ID %s) and seeded with the boundary", proj.Topic, m.Offset, m.TopicID), nil
}
