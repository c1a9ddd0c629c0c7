package worker

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/checkpoint"
	"github.com/kcleanup/kcleanup/checkpoint/store"
	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
)

// Following a retention policy, the I/O half (protocol.Follow decides): list
// each watched location as Flink lays them out, and read the markers of
// every completed recovery point, skipping a _metadata already read.

// Follower lists and reads watched locations for one control topic. Its
// cache of points read makes a round over thousands of retained points cost
// one listing and, per point, an lstat of it and of its _metadata (S3: a
// HEAD). A Follower is used by one goroutine at a time.
type Follower struct {
	// Store says where it may read: a worker confines it to --checkpoint-root.
	Store store.Options
	cache map[string]cachedPoint // by the point's directory as listed
	// Reads and Hits count the _metadata files read and skipped (cache).
	Reads, Hits int
}

// cachedPoint is one point read: what identifies its _metadata, and what
// was read from it.
type cachedPoint struct {
	size     int64
	written  time.Time
	selector checkpoint.Selector
	markers  []events.Marker
}

// chkDir is Flink's directory of completed checkpoint N; savepoints are
// savepoint-<job id prefix>-<random>.
var chkDir = regexp.MustCompile(`^chk-[0-9]+$`)

// jobDir is a job ID: 32 lowercase hex digits.
var jobDir = regexp.MustCompile(`^[0-9a-f]{32}$`)

// Round lists every watched location of the policy and reads the markers
// of each completed recovery point found, for protocol.Follow.
func (f *Follower) Round(ctx context.Context, p projector.Policy) []protocol.WatchedLocation {
	sel := checkpoint.Selector{OperatorUID: p.OperatorUID, OperatorUIDHash: p.OperatorUIDHash}
	out := make([]protocol.WatchedLocation, 0, len(p.Watch))
	seen := map[string]bool{}
	for _, loc := range p.Watch {
		w := protocol.WatchedLocation{Location: loc}
		cands, err := f.candidates(ctx, loc)
		switch {
		case errors.Is(err, store.ErrOutsideRoots):
			w.Outside = true
		case err != nil:
			w.Err = err.Error()
		}
		for _, c := range cands {
			pt, ok := f.read(ctx, c, sel)
			if ok && !seen[pt.Path] {
				seen[pt.Path] = true
				w.Points = append(w.Points, pt)
			}
		}
		out = append(out, w)
	}
	return out
}

// candidate is one candidate recovery point: name under the listed
// directory in, or (in nil) the watched location itself.
type candidate struct {
	in   *store.Dir
	name string
	path string // the point's path: the location joined with the names listed
}

// candidates finds the candidate recovery points of one watched location:
// the location itself when it holds _metadata; its chk-N and savepoint-*
// directories; and the chk-N directories of each job ID directory under it
// (a checkpoint base directory keeps the old jobs' checkpoints too). Each
// directory listed is resolved and confined once (store.Dir), not once a
// point.
func (f *Follower) candidates(ctx context.Context, loc string) ([]candidate, error) {
	d, entries, err := store.ListDir(ctx, loc, f.Store)
	if err != nil {
		return nil, err
	}
	var out []candidate
	for _, e := range entries {
		switch {
		case !e.Dir && e.Name == store.MetadataName:
			return []candidate{{path: loc}}, nil // the location is one point
		case e.Dir && (chkDir.MatchString(e.Name) || strings.HasPrefix(e.Name, "savepoint-")):
			out = append(out, candidate{in: d, name: e.Name, path: d.Path(e.Name)})
		case e.Dir && jobDir.MatchString(e.Name):
			job, sub, err := d.ListSub(ctx, e.Name)
			if err != nil {
				return nil, err
			}
			for _, s := range sub {
				if s.Dir && chkDir.MatchString(s.Name) {
					out = append(out, candidate{in: job, name: s.Name, path: job.Path(s.Name)})
				}
			}
		}
	}
	return out, nil
}

// read reads one candidate point: false when it has no _metadata (still
// being written, or deleted since the listing), which is not a point.
func (f *Follower) read(ctx context.Context, c candidate, sel checkpoint.Selector) (protocol.RecoveryPointRead, bool) {
	dir := c.path
	pt := protocol.RecoveryPointRead{Path: dir}
	var st checkpoint.Store
	var loc store.Location
	var err error
	if c.in != nil {
		st, loc, err = c.in.OpenPoint(ctx, c.name)
	} else {
		st, loc, err = store.Open(ctx, dir, f.Store)
	}
	if errors.Is(err, store.ErrNotFound) {
		return pt, false
	}
	if err != nil {
		pt.Err = err.Error()
		return pt, true
	}
	key := dir
	if c, ok := f.cache[key]; ok && c.size == loc.Size && c.written.Equal(loc.Written) && c.selector == sel && loc.Size >= 0 {
		f.Hits++
		pt.Markers = c.markers
		return pt, true
	}
	f.Reads++
	cp, err := checkpoint.Read(ctx, st, sel)
	if err != nil {
		pt.Err = errors.Wrapf(err, "read %s", loc.Metadata).Error()
		return pt, true
	}
	subs, err := cp.Markers()
	if err != nil {
		pt.Err = errors.Wrapf(err, "%s", loc.Metadata).Error()
		return pt, true
	}
	pt.Markers = CheckpointRead{Path: dir, Location: loc, Checkpoint: cp, Subtasks: subs}.Markers()
	if f.cache == nil {
		f.cache = map[string]cachedPoint{}
	}
	f.cache[key] = cachedPoint{size: loc.Size, written: loc.Written, selector: sel, markers: pt.Markers}
	return pt, true
}

// Forget drops the cached points no longer listed, so that the cache holds
// at most the points that exist.
func (f *Follower) Forget(listed []protocol.WatchedLocation) {
	if len(f.cache) == 0 {
		return
	}
	keep := map[string]bool{}
	for _, w := range listed {
		for _, p := range w.Points {
			keep[p.Path] = true
		}
	}
	for k := range f.cache {
		if !keep[k] {
			delete(f.cache, k)
		}
	}
}

// FollowRound is one round of the control topic's retention policy: list
// and read (Round), decide (protocol.Follow) and, when that is a plan not
// yet on the control topic, commit it through the ordinary protocol
// (Apply with NoWait: check, PLANNED, COMMITTED; the owner's pass finishes
// it), with the policy as its actor. No policy: a zero decision, no error.
func (c *Cluster) FollowRound(ctx context.Context, proj *Projection, f *Follower, o Options) (protocol.FollowDecision, bool, error) {
	if err := proj.CatchUp(ctx); err != nil {
		return protocol.FollowDecision{}, false, err
	}
	d, policy, ok, err := c.FollowDryRun(ctx, proj, f)
	if err != nil || !ok || !protocol.FollowCommits(d, proj.State) {
		return d, ok, err
	}
	o.Actor = protocol.FollowActor(policy, o.actor())
	o.NoWait = true
	o.say("retention", "policy %s: plan %s from %s", policy.Name(), d.Plan.PlanID, d.Plan.SourceRecoveryPoint)
	_, err = c.Apply(ctx, proj, *d.Plan, o)
	return d, true, err
}

// FollowDryRun is what FollowRound decides, without writing: retention
// show's answer. ok is false when the control topic follows no policy.
func (c *Cluster) FollowDryRun(ctx context.Context, proj *Projection, f *Follower) (protocol.FollowDecision, projector.Policy, bool, error) {
	if err := degraded(proj); err != nil {
		return protocol.FollowDecision{}, projector.Policy{}, false, err
	}
	policy, ok := proj.State.ActiveRetention()
	if !ok {
		return protocol.FollowDecision{}, policy, false, nil
	}
	live, err := c.TopicMetadata(ctx, policy.Topic)
	if err != nil {
		return protocol.FollowDecision{}, policy, true, err
	}
	listed := f.Round(ctx, policy)
	f.Forget(listed)
	d := protocol.Follow(protocol.FollowInput{Policy: policy, Topic: policy.Topic, TopicID: live.ID, Locations: listed,
		Pins: proj.State.Pins(), Boundary: proj.State.CommittedBoundary(), Now: time.Now()})
	return d, policy, true, nil
}
