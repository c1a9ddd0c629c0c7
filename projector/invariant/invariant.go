package invariant

import (
	"fmt"
	"slices"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
)

// Option tunes Verify.
type Option func(*config)

type config struct {
	wantAllApplied  bool
	initial         events.Offsets
	allowUnrepaired bool
	dataTopic       string
}

// WantAllApplied adds I3: every accepted COMMITTED has reached APPLIED. Ask
// for it only after a worker had the time to finish.
func WantAllApplied() Option { return func(c *config) { c.wantAllApplied = true } }

// InitialLogStart gives the data topic's log-start offsets before the
// scenario. Without it they are taken to be 0 (a new topic).
func InitialLogStart(o events.Offsets) Option {
	return func(c *config) { c.initial = o.Clone() }
}

// AllowUnrepaired skips I5, instead of failing, when an accepted record's key
// was overwritten and not yet repaired (a scenario that overwrote keys with
// no worker running).
func AllowUnrepaired() Option { return func(c *config) { c.allowUnrepaired = true } }

// DataTopic names the data topic, for a control topic that has no accepted
// PLANNED yet (otherwise the binding names it).
func DataTopic(name string) Option { return func(c *config) { c.dataTopic = name } }

// NamedDataTopic is the data topic DataTopic names among opts ("" for none),
// for the reader that gathers Facts.
func NamedDataTopic(opts ...Option) string {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	return cfg.dataTopic
}

// Facts are what a reader of Kafka (workertest.CheckInvariants) gathers, for Verify. A simulated cluster
// (protocol/sim) supplies them directly.
type Facts struct {
	// Records and Again are two independent reads of the control topic
	// below End, in offset order.
	Records, Again []projector.Record
	End            int64
	// DataTopic is the bound data topic (or the one DataTopic names); ""
	// when there is none.
	DataTopic string
	// LiveTopicID is its topic ID now, from an uncached Metadata request.
	LiveTopicID string
	// LogStart holds its log-start offset per partition now.
	LogStart events.Offsets
}

// Verify checks I1–I5 on facts and returns every violation (none: nil).
func Verify(f Facts, opts ...Option) []error {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	var errs []error
	full, prefixErrs := replayPrefixes(f.Records)
	errs = append(errs, prefixErrs...)
	if d1, d2 := full.Digest(), Fold(f.Again).Digest(); d1 != d2 {
		errs = append(errs, errors.Newf("I4: two reads of offsets [0, %d) fold to different digests %s and %s", f.End, d1, d2))
	}
	errs = append(errs, checkCompaction(f.Records, full, cfg)...)
	if cfg.wantAllApplied {
		for _, op := range full.Pending() {
			errs = append(errs, errors.Newf("I3: plan %s is still %s", op.PlanID, op.State))
		}
	}
	errs = append(errs, checkLogStart(f, full, cfg)...)
	return errs
}

// Fold replays records into a fresh projection.
func Fold(recs []projector.Record) *projector.State {
	s := projector.New()
	for _, r := range recs {
		s.Step(r)
	}
	return s
}

// Compact returns what Kafka's log compaction may leave of records: the
// latest record of every key, in offset order. With dropTombstones, keys
// whose latest record is a tombstone disappear entirely (as they do once
// delete.retention.ms passed).
func Compact(recs []projector.Record, dropTombstones bool) []projector.Record {
	latest := map[string]int{}
	for i, r := range recs {
		latest[string(r.Key)] = i
	}
	var out []projector.Record
	for i, r := range recs {
		if latest[string(r.Key)] != i || (dropTombstones && r.Value == nil) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// replayPrefixes folds one record at a time and checks I2 after each; it
// returns the full fold.
func replayPrefixes(recs []projector.Record) (*projector.State, []error) {
	s := projector.New()
	var errs []error
	prev := events.Offsets{}
	for _, r := range recs {
		s.Step(r)
		cur := s.Boundary()
		for _, msg := range Regressions(prev, cur) {
			errs = append(errs, errors.Newf("I2: after the record at offset %d: %s", r.Offset, msg))
		}
		prev = cur
	}
	return s, errs
}

// Regressions lists how cur moved backward from prev: a partition whose
// boundary decreased or disappeared.
func Regressions(prev, cur events.Offsets) []string {
	var out []string
	for _, p := range prev.Partitions() {
		b, ok := cur[p]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("partition %d lost its boundary %d", p, prev[p]))
		case b < prev[p]:
			out = append(out, fmt.Sprintf("partition %d boundary decreased from %d to %d", p, prev[p], b))
		}
	}
	return out
}

// checkCompaction is I5.
func checkCompaction(recs []projector.Record, full *projector.State, cfg config) []error {
	if reps := full.Repairs(); len(reps) > 0 {
		if cfg.allowUnrepaired {
			return nil
		}
		keys := make([]string, len(reps))
		for i, r := range reps {
			keys[i] = string(r.Key)
		}
		return []error{errors.Newf("I5: %d accepted record(s) listed for repair (overwritten, or out of order) and not re-appended (not repaired): %v", len(keys), keys)}
	}
	// Keys holding only rejected records are tombstoned by workers after a
	// grace period (protocol.RetractionGrace); model that before compacting.
	if rs := full.Retractions(); len(rs) > 0 {
		recs = slices.Clone(recs)
		next := full.Next()
		for i, r := range rs {
			recs = append(recs, projector.Record{Offset: next + int64(i), Key: r.Key})
		}
	}
	var errs []error
	for _, drop := range []bool{false, true} {
		compacted := Fold(Compact(recs, drop))
		what := "compacted log"
		if drop {
			what = "compacted log without tombstones"
		}
		if b, want := compacted.Boundary(), full.Boundary(); !b.Equal(want) {
			errs = append(errs, errors.Newf("I5: %s has boundary %v, the full log %v", what, b, want))
		}
		if got, want := states(compacted), states(full); !maps(got, want) {
			errs = append(errs, errors.Newf("I5: %s has operation states %v, the full log %v", what, got, want))
		}
	}
	return errs
}

func states(s *projector.State) map[string]fsm.State {
	out := map[string]fsm.State{}
	for _, op := range s.Operations() {
		out[op.PlanID] = op.State
	}
	return out
}

func maps(a, b map[string]fsm.State) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// checkLogStart is I1, and the log-start half of I3.
func checkLogStart(f Facts, full *projector.State, cfg config) []error {
	_, id, bound := full.Binding()
	topic := f.DataTopic
	if topic == "" {
		return nil // nothing was ever planned, and the caller named no data topic
	}
	if bound && f.LiveTopicID != id {
		return []error{errors.Newf("I1: data topic %s now has topic ID %s, not the bound %s: it was recreated, its log starts say nothing about the governed incarnation", topic, f.LiveTopicID, id)}
	}
	start := f.LogStart
	boundary := full.Boundary()
	var errs []error
	ps := start.Partitions()
	for _, p := range boundary.Partitions() {
		if !slices.Contains(ps, p) {
			errs = append(errs, errors.Newf("I1: partition %d has a boundary but the data topic has no such partition", p))
		}
	}
	for _, p := range ps {
		initial := cfg.initial[p]
		allowed := initial
		if b, ok := boundary[p]; ok && b > allowed {
			allowed = b
		}
		switch {
		case start[p] > allowed:
			if _, ok := boundary[p]; ok {
				errs = append(errs, errors.Newf("I1: %s-%d log start is %d, above the committed boundary %d (set by plan %s): records at or above the boundary were deleted",
					topic, p, start[p], boundary[p], full.BoundarySetBy(p)))
			} else {
				errs = append(errs, errors.Newf("I1: %s-%d log start is %d, above its initial %d, yet no boundary was committed for it",
					topic, p, start[p], initial))
			}
		case start[p] < initial:
			errs = append(errs, errors.Newf("I1: %s-%d log start is %d, below its initial %d: was the topic recreated?", topic, p, start[p], initial))
		}
		if b, ok := boundary[p]; ok && cfg.wantAllApplied && start[p] < b {
			errs = append(errs, errors.Newf("I3: %s-%d log start is %d, below the boundary %d, though no operation is pending", topic, p, start[p], b))
		}
	}
	return errs
}
