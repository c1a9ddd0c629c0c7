package worker

import (
	"cmp"
	"context"
	"sync"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/gate"
	"github.com/kcleanup/kcleanup/protocol"
)

// ValidateOptions says where the recovery gate looks.
type ValidateOptions struct {
	// ControlTopic is the control topic of the markers' data topic.
	ControlTopic string
	// Bootstrap goes into the fixes the hints give.
	Bootstrap string
	// Read, when set, catches up a projection the caller keeps (a worker's
	// live view, held exclusively until Validate returns) instead of
	// reading the control topic afresh.
	Read func(context.Context) (*Projection, error)
	// Explain, when set, adds the caller's hints to an error reading
	// either topic (the CLI's "check -b and --timeout").
	Explain func(error) error
	// TombstoneScanLimit bounds the read of the data topic from the
	// markers' lowest offsets for tombstones (notes only); 0:
	// DefaultValidateTombstoneScanLimit, negative: no read.
	TombstoneScanLimit int64
}

// DefaultValidateTombstoneScanLimit is how many records validate reads at
// most, over all partitions, looking for a tombstone above the recovery
// point: a note, so a smaller bound than a plan's scan.
const DefaultValidateTombstoneScanLimit = 1_000_000

// Validate is the recovery gate against the live cluster (docs/design.md §7), for
// `kcleanup validate` and POST /v1/validate alike: it gathers the facts
// gate.Decide needs — the control topic's partitions and configs, its
// projection read to the end, and the data topic's live topic ID (uncached
// Metadata), partitions, log starts and high watermarks — and returns the
// verdict. The physical round trips are made on every call.
//
// The three sets of facts are independent and gathered at once: the
// control topic's settings, its projection, the data topic's facts. The
// projection is read while the settings are asked, and kept only for a
// control topic that exists with one partition (gate.Decide judges no
// projection otherwise). Within the data topic's facts the order is the
// check's own: its ID, then its log starts and high watermarks (asked at
// once), then its ID again. Every failure to read becomes a fact the gate
// fails closed on; Validate itself never fails.
func (c *Cluster) Validate(ctx context.Context, markers []events.Marker, o ValidateOptions) gate.Verdict {
	explain := o.Explain
	if explain == nil {
		explain = func(err error) error { return err }
	}
	f := gate.Facts{Markers: markers, Bootstrap: o.Bootstrap}
	if len(markers) > 0 {
		f.Data.Topic = markers[0].Topic
	}
	// A cluster that refuses the connection is "cannot tell" at once, not after the deadline
	// every read below would otherwise wait out (Reachable). Only for a caller that connected
	// for this question (the CLI): a worker (o.Read set) asks on a long-lived client every
	// request, and one more round trip per POST /v1/validate buys it nothing.
	if o.Read == nil {
		if err := c.Reachable(ctx); err != nil {
			err = explain(err)
			f.Control = gate.Control{Topic: o.ControlTopic, Err: err}
			f.Data.Err = err
			return gate.Decide(f)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		f.Data = c.dataFacts(ctx, f.Data.Topic, explain)
		c.tombstoneFacts(ctx, &f.Data, markers, o.TombstoneScanLimit)
	})
	// The projection is read while the control topic is described; a topic
	// that turns out not to be a one-partition control topic (a data topic
	// named by mistake, say) stops the read instead of waiting for it.
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	var proj *gate.Projection
	wg.Go(func() { proj = c.projectionFacts(pctx, o, explain) })
	f.Control = c.controlFacts(ctx, o.ControlTopic, explain)
	readable := f.Control.Exists && f.Control.Partitions == 1
	if !readable {
		stop()
	}
	wg.Wait()
	if readable {
		f.Projection = proj
		c.lookElsewhere(ctx, &f, o.ControlTopic, explain)
	}
	return gate.Decide(f)
}

// lookElsewhere fills f.Control.Elsewhere: an empty control topic proves
// "no boundary" only if no other control topic governs the markers' topic
// incarnation, and a bound one proves nothing while another is bound to the
// same incarnation (each is blind to the other's boundary). A failed search
// is a control topic not read (cannot tell), never "none".
func (c *Cluster) lookElsewhere(ctx context.Context, f *gate.Facts, control string, explain func(error) error) {
	p := f.Projection
	if p.State == nil || p.Err != nil || p.Flink != nil || len(f.Markers) == 0 {
		return
	}
	m := f.Markers[0]
	if bt, bid, bound := p.State.Binding(); bound && (bt != m.Topic || bid != m.TopicID) {
		return // it governs another topic or incarnation: the gate refuses on that
	}
	others, err := c.GovernorsOf(ctx, m.Topic, m.TopicID, control)
	if err != nil {
		f.Control.Err = explain(errors.Wrapf(err, "could not look through the other control topics for one that also governs topic %s", m.Topic))
		return
	}
	f.Control.Elsewhere = others
}

// tombstoneFacts reads the data topic from the markers' lowest offsets for
// tombstones (gate.Data.Tombstones): a read that fails or stops at the
// limit leaves the partitions it did not finish in Unscanned.
func (c *Cluster) tombstoneFacts(ctx context.Context, d *gate.Data, markers []events.Marker, limit int64) {
	if !d.Exists || d.Err != nil || limit < 0 || len(markers) == 0 {
		return
	}
	if limit == 0 {
		limit = DefaultValidateTombstoneScanLimit
	}
	lowest := events.Offsets{}
	for _, m := range markers {
		for p, off := range m.Offsets {
			if cur, ok := lowest[p]; !ok || off < cur {
				lowest[p] = off
			}
		}
	}
	scan, err := c.ScanTombstones(ctx, d.Topic, lowest, nil, limit)
	d.Tombstones = map[int32]int64{}
	for _, p := range lowest.Partitions() {
		ps, ok := scan.Partitions[p]
		switch {
		case err != nil || !ok || !ps.Complete():
			d.Unscanned = append(d.Unscanned, p)
		case ps.Latest >= 0:
			d.Tombstones[p] = ps.Latest
		}
	}
}

func (c *Cluster) controlFacts(ctx context.Context, topic string, explain func(error) error) gate.Control {
	out := gate.Control{Topic: topic}
	var info protocol.Topic
	var configs map[string]string
	var err, cerr error
	var wg sync.WaitGroup
	wg.Go(func() { configs, cerr = c.TopicConfigs(ctx, topic) })
	info, err = c.TopicMetadata(ctx, topic)
	wg.Wait()
	if errors.Is(err, ErrTopicNotFound) {
		return out
	}
	if err == nil {
		info.Configs, err = configs, cerr
	}
	if err != nil {
		out.Err = explain(err)
		return out
	}
	out.Exists, out.Partitions, out.Configs = true, len(info.Partitions), info.Configs
	return out
}

func (c *Cluster) projectionFacts(ctx context.Context, o ValidateOptions, explain func(error) error) *gate.Projection {
	var proj *Projection
	var err error
	if o.Read != nil {
		proj, err = o.Read(ctx)
	} else {
		proj = c.OpenBoundedProjection(o.ControlTopic)
		err = proj.CatchUp(ctx)
	}
	if proj == nil {
		if err == nil {
			err = errors.Newf("control topic %q is not being read", o.ControlTopic)
		}
		return &gate.Projection{Err: explain(err)}
	}
	// CatchUp reads to the high watermark it listed first, and an open
	// transaction that pins the last stable offset below it is
	// ErrNotCaughtUp (Cluster.stableEnd): the gate never judges a read that
	// stopped short of records appended after the transaction began.
	out := &gate.Projection{State: proj.State, ReadTo: proj.Next, Foreign: proj.Foreign(), Flink: proj.Flink()}
	if err != nil {
		out.Err = explain(err)
	}
	return out
}

func (c *Cluster) dataFacts(ctx context.Context, topic string, explain func(error) error) gate.Data {
	out := gate.Data{Topic: topic}
	info, err := c.TopicMetadata(ctx, topic)
	if errors.Is(err, ErrTopicNotFound) {
		return out
	}
	if err == nil {
		var endErr error
		var wg sync.WaitGroup
		wg.Go(func() { info.End, endErr = c.EndOffsets(ctx, topic) })
		info.Start, err = c.StartOffsets(ctx, topic)
		wg.Wait()
		err = cmp.Or(err, endErr)
	}
	if err == nil {
		// ListOffsets addresses the topic by name: ask for its ID again, so
		// that offsets of another incarnation are never judged as this one's.
		var again protocol.Topic
		if again, err = c.TopicMetadata(ctx, topic); err == nil && again.ID != info.ID {
			err = errors.Newf("topic %q was deleted and recreated while it was checked (topic ID %s, then %s)", topic, info.ID, again.ID)
		}
	}
	if errors.Is(err, ErrTopicNotFound) {
		return out // deleted while it was checked
	}
	if err != nil {
		out.Err = explain(err)
		return out
	}
	out.Exists, out.ID, out.Partitions, out.Start, out.End = true, info.ID, info.Partitions, info.Start, info.End
	return out
}
