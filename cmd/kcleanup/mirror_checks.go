package main

import (
	"context"
	"fmt"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// attachError gives a refusal of protocol.AttachMirror (which AttachMirror
// decides with) its exit code: 3 for a mirror that does not fit, 4 when
// the control topic cannot vouch for its boundary (degraded, history at
// risk). Nothing was written in either case.
func attachError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, protocol.ErrMirrorRefused):
		return refusedError(errors.WithHint(err, "nothing was written"))
	case errors.Is(err, protocol.ErrMirrorCannotTell), errors.Is(err, worker.ErrDegraded):
		return cannotTellError(errors.WithHint(err, "nothing was written"))
	}
	return err
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
