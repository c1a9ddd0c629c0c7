package worker

import (
	"context"
	"slices"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
)

// DoctorRequest is what `kcleanup doctor` asks about.
type DoctorRequest struct {
	// Topic is the data topic asked for ("": the one the control topic
	// governs); ControlNamed says ControlTopic was named, not derived.
	Topic, ControlTopic string
	ControlNamed        bool
	Bootstrap           string
	// StuckAfter and ClockTolerance are what the status is judged by;
	// ScanLimit bounds the tombstone scan; Timeout bounds each group of reads.
	StuckAfter, ClockTolerance, Timeout time.Duration
	ScanLimit                           int64
	// Typos words the hints about a topic name that does not exist (the
	// CLI's nearest names and how to list them).
	Typos func(ctx context.Context, name string) []string
}

// DoctorFacts reads what report.Diagnose judges: only what the answers so far make relevant.
// Each group of reads gets its own Timeout. An error means the cluster did not answer;
// problems found are facts. It writes nothing.
func (c *Cluster) DoctorFacts(ctx context.Context, r DoctorRequest) (report.DoctorFacts, error) {
	f := report.DoctorFacts{Asked: r.Topic, ControlTopic: r.ControlTopic, ControlNamed: r.ControlNamed,
		Bootstrap: r.Bootstrap, StuckAfter: r.StuckAfter}
	return f, c.doctorFacts(ctx, r, &f)
}

func (c *Cluster) doctorFacts(ctx context.Context, r DoctorRequest, f *report.DoctorFacts) error {
	step := func(read func(ctx context.Context) error) error {
		ctx, cancel := context.WithTimeout(ctx, r.Timeout)
		defer cancel()
		return read(ctx)
	}
	if err := step(func(ctx context.Context) (err error) {
		f.Brokers, err = c.CheckBrokers(ctx)
		return err
	}); err != nil {
		return err
	}

	// The control topic and its projection; they also tell which data topic to check.
	var folded *projector.State // the projection's fold, for the tombstone rule under a declaration
	if err := step(func(ctx context.Context) error {
		info, err := c.DescribeTopic(ctx, f.ControlTopic)
		if errors.Is(err, ErrTopicNotFound) {
			f.ControlMissing = true
			if f.Asked != "" {
				if _, err := c.TopicMetadata(ctx, f.Asked); errors.Is(err, ErrTopicNotFound) {
					f.DataMissing, f.Typos = true, r.Typos(ctx, f.Asked)
					return nil
				}
			}
			if f.ControlNamed {
				f.Typos = r.Typos(ctx, f.ControlTopic)
			}
			if f.Asked != "" {
				data, err := c.TopicMetadata(ctx, f.Asked)
				if err != nil {
					return err
				}
				gerr := c.OneGovernor(ctx, protocol.Governance{Self: f.ControlTopic, Topic: f.Asked, TopicID: data.ID}, r.Bootstrap)
				if errors.Is(gerr, protocol.ErrGovernedElsewhere) {
					f.Elsewhere = gerr
				} else if !errors.Is(gerr, protocol.ErrNoControlTopic) {
					return gerr
				}
			}
			return nil
		}
		if err != nil {
			return err
		}
		f.ControlInfo = info
		if err := c.CheckControlShape(ctx, f.ControlTopic); errors.Is(err, ErrNotControlTopic) {
			f.NotControl = err
			return nil
		}
		if len(info.Partitions) == 1 { // otherwise there is no single log to project
			proj, err := c.Project(ctx, f.ControlTopic)
			if err != nil {
				return err
			}
			defer proj.Close()
			if err := proj.CheckShape(ctx); err != nil {
				f.NotControl = err
				return nil
			}
			proj.AheadTolerance = r.ClockTolerance
			st := report.StatusOf(proj.Source())
			// A stuck operation that the tombstone rule blocks is said so, not "re-run apply".
			folded = proj.State
			c.MarkTombstoneBlocks(ctx, folded, &st, r.ScanLimit)
			f.Status, f.Now = &st, time.Now()
			if f.Mirror, err = c.doctorMirror(ctx, proj, r.Bootstrap); err != nil {
				return err
			}
		}
		if report.FlinkFormat(f.Status) {
			return nil // not kcleanup's topic: its settings and fold rules do not apply
		}
		topic := report.DoctorTopic(f.Asked, f.Status)
		gov := protocol.Governance{Self: f.ControlTopic, Exists: true, Topic: topic}
		if f.Status != nil && f.Status.Topic != "" {
			gov.Bound, gov.Topic, gov.TopicID = true, f.Status.Topic, f.Status.TopicID
		} else if topic != "" {
			data, err := c.TopicMetadata(ctx, topic)
			if err != nil && !errors.Is(err, ErrTopicNotFound) {
				return err
			}
			gov.TopicID = data.ID
		}
		if gov.TopicID != "" {
			if err := c.OneGovernor(ctx, gov, r.Bootstrap); err != nil {
				if !errors.Is(err, protocol.ErrGovernedElsewhere) {
					return err
				}
				f.Governance = err
			}
		}
		return nil
	}); err != nil {
		return err
	}

	topic := report.DoctorTopic(f.Asked, f.Status)
	if topic == "" {
		return nil
	}
	if err := step(func(ctx context.Context) error {
		info, err := c.DescribeTopic(ctx, topic)
		if errors.Is(err, ErrTopicNotFound) {
			f.DataGone = true
			return nil
		}
		f.DataRead, f.DataInfo = err == nil, info
		return err
	}); err != nil {
		return err
	}
	if f.DataGone || report.FlinkFormat(f.Status) {
		return nil // a Flink Agents control topic: kcleanup commits nothing on it
	}
	return step(func(ctx context.Context) error { return c.readTombstones(ctx, topic, folded, r.ScanLimit, f) })
}

// readTombstones is doctor's tombstone scan of the data topic: from the committed boundary,
// or from the log start before the first plan (protocol.TombstoneFindings judges it). A scan
// the broker refuses (no Read on the data topic) is a fact, not a failure of doctor.
func (c *Cluster) readTombstones(ctx context.Context, topic string, folded *projector.State, limit int64, f *report.DoctorFacts) error {
	var from events.Offsets
	if f.Status != nil {
		from = f.Status.Boundary
	}
	if len(from) == 0 {
		starts, err := c.StartOffsets(ctx, topic)
		if err != nil {
			return nil // the data topic's own findings say why
		}
		from = starts
	}
	if folded == nil {
		folded = projector.New()
	}
	topicID := ""
	if f.Status != nil {
		topicID = f.Status.TopicID
	}
	if topicID == "" { // before the first plan: the declaration names the live incarnation
		if info, err := c.TopicMetadata(ctx, topic); err == nil {
			topicID = info.ID
		}
	}
	// Under a no-tombstones declaration only what it leaves is read, as the workers read it.
	f.TombstonesDeclared = protocol.DeclaredFindings(folded, topic, topicID, from)
	f.TombstonesNothingRead = len(protocol.TombstoneScanFrom(folded, topic, topicID, from)) == 0
	scan, err := c.ScanTombstonesUnder(ctx, folded, topic, topicID, from, limit)
	if err != nil {
		if IsAuthorizationError(err) {
			f.TombstonesDenied = err
			return nil
		}
		return err
	}
	f.TombstonesScanned, f.TombstonesFrom, f.Tombstones = true, from, scan
	return nil
}

// doctorMirror reads the attached Flink Agents mirror, if one is: its standing
// (protocol.AssessMirror, with this principal's permissions to write it) and its
// durability settings; nil when none is attached.
func (c *Cluster) doctorMirror(ctx context.Context, proj *Projection, bootstrap string) (*report.DoctorMirror, error) {
	a, ok, err := c.AssessMirror(ctx, protocol.MirrorControlOf(proj.State), true, bootstrap)
	if err != nil || !ok {
		return nil, err
	}
	var configs map[string]string
	if a.LiveTopicID != "" {
		if configs, err = c.TopicConfigs(ctx, a.Topic); err != nil && !IsAuthorizationError(err) {
			return nil, err
		}
	}
	return &report.DoctorMirror{Assessment: a, Configs: configs}, nil
}

// MarkTombstoneBlocks lists in st.Blocked the pending operations that the one tombstone rule
// blocks (protocol.WatchTombstones: a tombstone at or above the boundary), as the owner's watch
// and a re-run of apply would: so that no command suggests a re-run that would be refused. A
// scan that fails or could not read to the end adds nothing (the owner says it).
func (c *Cluster) MarkTombstoneBlocks(ctx context.Context, folded *projector.State, st *report.Status, limit int64) {
	pending := slices.ContainsFunc(st.Operations, func(op report.OperationStatus) bool { return op.State.Unfinished() })
	if st.Topic == "" || len(st.Boundary) == 0 || !pending {
		return
	}
	if folded == nil {
		folded = projector.New()
	}
	// Under a no-tombstones declaration only what it leaves is read, as the workers read it.
	scan, err := c.ScanTombstonesUnder(ctx, folded, st.Topic, st.TopicID, st.Boundary, limit)
	if err != nil {
		return
	}
	if err := protocol.WatchTombstones(st.Topic, st.Boundary, scan); errors.Is(err, protocol.ErrTombstones) {
		st.Blocked = report.BlockedBySettings(*st, err.Error(), errors.GetAllHints(err))
	}
}
