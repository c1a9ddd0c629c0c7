package gate

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/topicconfig"
)

// SchemaVersion is the version of the verdict document. 2: hints became a
// list in every answer, "class" was added, and answers that are not
// allowed all have this shape (version 1 had "hint", and a different body
// for 503).
const SchemaVersion = 2

// Facts is everything a verdict needs, gathered by the caller (package
// worker) from the live cluster. Decide performs no I/O.
type Facts struct {
	Markers []events.Marker
	Control Control
	// Projection is the control topic folded to its end; nil when it was
	// not read (the control topic is missing, unreadable, or has more than
	// one partition).
	Projection *Projection
	Data       Data
	// Bootstrap goes into the fixes the hints give.
	Bootstrap string
}

// Control is what the cluster said about the control topic.
type Control struct {
	Topic string
	// Exists is false when the topic is missing: the gate then cannot tell,
	// whether the name was given or derived from the data topic.
	Exists bool
	// Err is why it could not be described (nil when it exists, or is
	// simply missing).
	Err        error
	Partitions int
	// Configs are its effective topic configs.
	Configs map[string]string
	// Elsewhere names the other control topics, under any name, bound to
	// the markers' topic incarnation; nil when none is.
	Elsewhere []string
}

// Projection is the control topic as the fold saw it.
type Projection struct {
	State *projector.State
	// ReadTo is the offset after the last record read.
	ReadTo int64
	// Err is why the read did not reach the end it captured when it began
	// (nil: caught up).
	Err error
	// Foreign lists the rejected records that looked like another tool's
	// control format when they were read (projector.View.Foreign).
	Foreign []projector.ForeignRecord
	// Flink is set when every record is in Flink Agents' format: the
	// records folded by the job's own rules (projector/flinkagents). The
	// gate then decides by that fold (flink.go), never by State's.
	Flink *flinkagents.Fold
}

// Data is what the cluster said about the markers' data topic, from an
// uncached Metadata request and ListOffsets.
type Data struct {
	Topic  string
	Exists bool
	// Err is why it could not be read (nil when read, or simply missing).
	Err        error
	ID         string
	Partitions []int32
	// Start and End are the log-start offset and high watermark per
	// partition.
	Start, End events.Offsets
	// Tombstones is, per partition, the latest tombstone (null value) at
	// or above the markers' lowest offset, from a bounded read of the data
	// topic (absent: none found); Unscanned names the partitions that read
	// did not reach the end of. Both nil: not looked for. They add notes,
	// never a refusal (issue 35: a recovery point that straddles a tombstone
	// may replay a key whose older records compaction erased).
	Tombstones map[int32]int64
	Unscanned  []int32
}

// Verdict is the gate's answer: the document `kcleanup validate -o json`
// prints and POST /v1/validate answers. The first refusal's reason, message,
// hints and details are repeated at the top level, for clients that read
// only one.
type Verdict struct {
	SchemaVersion int    `json:"schemaVersion"`
	Allowed       bool   `json:"allowed"`
	Class         Class  `json:"class"`
	ControlTopic  string `json:"controlTopic,omitempty"`
	Topic         string `json:"topic,omitempty"`
	// ReadTo is the control-topic offset the verdict was made at (absent
	// when the control topic was not read).
	ReadTo  *int64   `json:"readTo,omitempty"`
	Reason  Reason   `json:"reason,omitempty"`
	Message string   `json:"message,omitempty"`
	Hints   []string `json:"hints"`
	*Detail
	Refusals []Refusal `json:"refusals"`
	// Notes say what an allowed verdict rests on when it is less than a
	// committed boundary (no control topic, an empty one).
	Notes []string `json:"notes"`
	// Checked lists, when allowed, what was checked per partition.
	Checked []Checked `json:"checked"`
	// PinID and PinExpires are set by validate --pin-for (POST
	// /v1/validate?pinFor=): the pin written for the recovery point, which
	// keeps an allowed verdict true until it expires or is unpinned. The
	// gate itself never reads or sets them (docs/design.md §12).
	PinID      string     `json:"pinId,omitempty"`
	PinExpires *time.Time `json:"pinExpires,omitempty"`
}

// Checked is one partition of an allowed verdict: the lowest offset any
// marker needs, the committed boundary (absent when none) and the live range
// it is inside.
type Checked struct {
	Partition     int32  `json:"partition"`
	Lowest        int64  `json:"lowest"`
	Boundary      *int64 `json:"boundary,omitempty"`
	PlanID        string `json:"planId,omitempty"`
	LogStart      int64  `json:"logStart"`
	HighWatermark int64  `json:"highWatermark"`
}

// Refusal is one reason the recovery point is not allowed.
type Refusal struct {
	Reason Reason `json:"reason"`
	Class  Class  `json:"class"`
	// Message names the topic, partition and offsets, or what was found,
	// e.g. "Cannot restore Kafka action state for action-state-0 from offset
	// 100 because the committed cleanup boundary is 150 (set by plan …)".
	Message string   `json:"message"`
	Hints   []string `json:"hints"`
	*Detail
}

// Detail is what a refusal is about; fields that do not apply are absent.
type Detail struct {
	// Marker is the index of the offending marker.
	Marker    *int   `json:"marker,omitempty"`
	Partition *int32 `json:"partition,omitempty"`
	// Requested is the offset the marker needs.
	Requested *int64 `json:"requested,omitempty"`
	// Boundary and PlanID: the committed boundary and the plan that set it.
	Boundary *int64 `json:"boundary,omitempty"`
	PlanID   string `json:"planId,omitempty"`
	// LogStart and HighWatermark: the partition's live range.
	LogStart      *int64 `json:"logStart,omitempty"`
	HighWatermark *int64 `json:"highWatermark,omitempty"`
	MarkerTopicID string `json:"markerTopicId,omitempty"`
	LiveTopicID   string `json:"liveTopicId,omitempty"`
	BoundTopic    string `json:"boundTopic,omitempty"`
	BoundTopicID  string `json:"boundTopicId,omitempty"`
	// Records are the control records a refusal is about (offsets).
	Records []int64 `json:"records,omitempty"`
}

// Err is the verdict as an error (nil when allowed): the first refusal's
// message with every hint of it.
func (v Verdict) Err() error {
	if v.Allowed {
		return nil
	}
	err := errors.Newf("%s", v.Message)
	for _, h := range v.Hints {
		err = errors.WithHint(err, h)
	}
	return err
}

// unreadable are the rejection reasons that leave a record's meaning unknown.
var unreadable = []projector.Reason{projector.ReasonMalformed, projector.ReasonBadKey, projector.ReasonTampered}

// Decide is the recovery gate (docs/design.md §7) over the facts. Its checks, in
// this order, each adding its refusals:
//
//  1. control topic: exists (a missing default one is allowed only on the
//     data topic's evidence, and says so), one partition, settings that
//     keep the cleaner from outrunning repairs, bound to the markers' topic
//     and topic ID;
//  2. logical: every marker offset at or above the committed boundary;
//  3. physical, always: the data topic exists, its live topic ID is the
//     markers', the partition set is the topic's, every marker offset is in
//     the live [log start, high watermark];
//  4. fail closed on what could not be read: not caught up, degraded,
//     history at risk, records that are unreadable or in a foreign format.
//
// Allowed only with no refusal at all. The class is Refused when any
// refusal proves harm, else CannotTell.
func Decide(f Facts) Verdict {
	d := decision{f: f, v: Verdict{SchemaVersion: SchemaVersion, ControlTopic: f.Control.Topic, Topic: f.Data.Topic}}
	var st *projector.State
	if p := f.Projection; p != nil && p.Err == nil {
		st = p.State
		readTo := p.ReadTo
		d.v.ReadTo = &readTo
	}
	if p := f.Projection; st != nil && p.Flink != nil {
		return d.decideFlink(p.Flink)
	}
	d.control(st)
	if st != nil {
		d.logical(st)
	}
	d.physical()
	d.failClosed(st)
	d.tombstoneNotes()
	v := d.finish()
	if v.Allowed {
		v.Checked = d.checked(st)
	}
	return v
}

// tombstoneNotes say where the recovery point replays across a tombstone:
// compaction may erase the older records of its key, which the replay then
// misses (docs/operator-guide.md, "Migrating from tombstones").
func (d *decision) tombstoneNotes() {
	for _, p := range slices.Sorted(maps.Keys(d.f.Data.Tombstones)) {
		d.notes = append(d.notes, fmt.Sprintf("partition %d: the recovery point replays across a tombstone (null value) at offset %d: compaction may erase the older records of its key before the replay reads them (docs/operator-guide.md, \"Migrating from tombstones\")",
			p, d.f.Data.Tombstones[p]))
	}
	if len(d.f.Data.Unscanned) > 0 {
		d.notes = append(d.notes, fmt.Sprintf("partition(s) %v: not read to the end for tombstones above the recovery point (the read is bounded): whether it replays across one was not checked", d.f.Data.Unscanned))
	}
}

// checked is what an allowed verdict rests on, per partition of the topic.
func (d *decision) checked(st *projector.State) []Checked {
	out := []Checked{}
	var boundary events.Offsets
	if st != nil {
		boundary = st.Boundary()
	}
	for _, p := range d.f.Data.Partitions {
		c := Checked{Partition: p, Lowest: -1, LogStart: d.f.Data.Start[p], HighWatermark: d.f.Data.End[p]}
		for _, m := range d.f.Markers {
			if off, ok := m.Offsets[p]; ok && (c.Lowest < 0 || off < c.Lowest) {
				c.Lowest = off
			}
		}
		if b, ok := boundary[p]; ok {
			c.Boundary, c.PlanID = ptr(b), st.BoundarySetBy(p)
		}
		out = append(out, c)
	}
	return out
}

type decision struct {
	f Facts
	v Verdict
	// notes are kept apart: they are said only when allowed.
	notes []string
}

func (d *decision) add(r Reason, det *Detail, msg string, hints ...string) {
	d.v.Refusals = append(d.v.Refusals, Refusal{Reason: r, Class: r.Class(), Message: msg, Hints: nonNil(hints), Detail: det})
}

const cannot = "Cannot validate the recovery point: "

func (d *decision) control(st *projector.State) {
	c := d.f.Control
	topic := d.f.Data.Topic
	switch {
	case c.Err != nil:
		d.add(ControlTopicUnreadable, nil, cannot+fmt.Sprintf("control topic %s could not be described: %v", c.Topic, c.Err),
			append(errors.GetAllHints(c.Err), "the gate fails closed whenever it cannot read the control topic; fix the cause and validate again")...)
		return
	case !c.Exists:
		// Never "kcleanup never ran here": the boundary may live in a control topic under
		// another name, and a forgotten --control-topic (or a blank one from an unset
		// variable) must not approve what that boundary condemns. init makes the proof.
		d.add(ControlTopicMissing, nil, cannot+fmt.Sprintf("control topic %s does not exist, so no boundary could be read for topic %s; "+
			"the gate allows only after reading the control topic that governs the markers' topic", c.Topic, topic),
			fmt.Sprintf("if topic %s's cleanups are recorded under another control topic, name it: --control-topic <topic> (or KCLEANUP_CONTROL_TOPIC)", topic),
			fmt.Sprintf("if cleanup never ran for topic %s, create its control topic once: kcleanup init --topic %s --control-topic %s (an empty control topic proves that no boundary exists)",
				topic, topic, c.Topic))
		return
	}
	for _, p := range topicconfig.Blocking(topicconfig.ControlTopic(c.Topic, c.Partitions, c.Configs, d.f.Bootstrap)) {
		if p.Setting == "partitions" {
			d.add(ControlTopicPartitions, nil, cannot+fmt.Sprintf("control topic %s %s", c.Topic, p.Message),
				fmt.Sprintf("is %s the control topic of %s? Its default is %s.kcleanup; a new one is made with: kcleanup init --topic %s --control-topic <new name>",
					c.Topic, topic, topic, topic))
			continue
		}
		d.add(ControlTopicSettings, nil, cannot+fmt.Sprintf("control topic %s: %s", c.Topic, p.Message), p.Fix)
	}
	if st == nil {
		return
	}
	bt, bid, bound := st.Binding()
	if !bound && len(c.Elsewhere) > 0 {
		// A mistaken init made this one (or a typo named it) while the
		// boundary is kept in another: its emptiness proves nothing.
		d.add(GovernedElsewhere, nil, cannot+fmt.Sprintf("control topic %s governs no topic yet, but %s governs topic %s of these markers: the cleanup boundary is kept there",
			c.Topic, strings.Join(c.Elsewhere, " and "), topic),
			fmt.Sprintf("name the control topic that governs %s: --control-topic %s (or KCLEANUP_CONTROL_TOPIC); if %s was created by mistake, delete it once nothing names it",
				topic, c.Elsewhere[0], c.Topic))
		return
	}
	if len(c.Elsewhere) > 0 && bt == topic && len(d.f.Markers) > 0 && bid == d.f.Markers[0].TopicID {
		// Two control topics govern one incarnation: each is blind to the
		// other's boundary, so neither's word proves the recovery point safe.
		d.add(GovernedElsewhere, nil, cannot+fmt.Sprintf("control topics %s and %s both govern topic %s (topic ID %s): each is blind to the other's boundary, so neither proves a recovery point safe",
			c.Topic, strings.Join(c.Elsewhere, " and "), topic, bid),
			fmt.Sprintf("keep one control topic per data topic: compare the boundaries (kcleanup status --control-topic %s, and the other), re-apply on the kept one any plan committed only on the other, then delete the other; until then this gate cannot tell",
				c.Topic))
		return
	}
	if !bound {
		if len(st.Boundary()) == 0 {
			what := "is empty"
			if st.Next() > 0 {
				what = "governs no topic yet"
			}
			d.notes = append(d.notes, fmt.Sprintf("control topic %s %s: no cleanup boundary is committed for topic %s; "+
				"allowed on the data topic's evidence alone (its live topic ID and every offset checked)", c.Topic, what, topic))
		}
		return
	}
	for i, m := range d.f.Markers {
		det := &Detail{Marker: ptr(i), MarkerTopicID: m.TopicID, BoundTopic: bt, BoundTopicID: bid}
		switch {
		case m.Topic != bt:
			d.add(TopicMismatch, det, cannot+fmt.Sprintf("the recovery point is for topic %s but control topic %s governs topic %s", m.Topic, c.Topic, bt),
				fmt.Sprintf("use the control topic of %s (its default is %s.kcleanup)", m.Topic, m.Topic))
		case m.TopicID != bid:
			d.add(TopicIDMismatch, det, cannot+fmt.Sprintf("the recovery point is from topic ID %s but this control topic (%s) governs topic ID %s of %s",
				m.TopicID, c.Topic, bid, bt),
				"check that the recovery point is from the job and topic incarnation this control topic governs; a recreated topic needs its own control topic")
		}
	}
}

func (d *decision) logical(st *projector.State) {
	boundary := st.Boundary()
	if len(boundary) == 0 {
		return
	}
	// The part of the boundary accepted COMMITTED records hold up is proved:
	// below it is refused. Above it, up to Boundary, only evidence holds it up
	// (a DELETING or APPLIED whose COMMITTED the log does not hold): an erased
	// commit, or a record nobody committed. The log cannot tell which, and
	// neither can the gate.
	committed := st.CommittedBoundary()
	topic := d.f.Data.Topic
	if len(d.f.Markers) == 0 {
		if len(committed) == 0 {
			d.unconfirmed(st, nil, "the recovery point has no marker, and a boundary exists")
			return
		}
		d.add(NoMarkers, nil, fmt.Sprintf("Cannot restore Kafka action state for %s: the recovery point has no marker, and a cleanup boundary is committed", topic),
			"pass the recovery point's markers for the action-state topic")
		return
	}
	bt, bid, _ := st.Binding()
	for i, m := range d.f.Markers {
		if m.Topic != bt || m.TopicID != bid {
			continue // another topic's boundary says nothing about it (the binding check said so)
		}
		for _, p := range boundary.Partitions() {
			cb, proved := committed[p]
			plan := st.CommittedBoundarySetBy(p)
			// Not "taken after plan X was committed": a job restored from an older recovery point
			// since takes new checkpoints below the boundary. The offset is what decides.
			hint := fmt.Sprintf("restore from a newer checkpoint or savepoint, one whose offset for %s-%d is at least %d (the boundary plan %s committed): records below it may already be deleted",
				topic, p, cb, plan)
			det := &Detail{Marker: ptr(i), Partition: ptr(p), Boundary: ptr(cb), PlanID: plan}
			off, ok := m.Offsets[p]
			switch {
			case !ok && proved:
				d.add(MissingPartition, det, fmt.Sprintf("Cannot restore Kafka action state for %s-%d: the recovery point has no offset for it, and the committed cleanup boundary is %d (set by plan %s)",
					topic, p, cb, plan), hint)
			case ok && proved && off < cb:
				det.Requested = ptr(off)
				d.add(BelowBoundary, det, fmt.Sprintf("Cannot restore Kafka action state for %s-%d from offset %d because the committed cleanup boundary is %d (set by plan %s)",
					topic, p, off, cb, plan), hint)
			case !ok:
				d.unconfirmed(st, &Detail{Marker: ptr(i), Partition: ptr(p), Boundary: ptr(boundary[p]), PlanID: st.BoundarySetBy(p)},
					fmt.Sprintf("the recovery point has no offset for %s-%d, whose boundary is %d", topic, p, boundary[p]))
			case off < boundary[p]:
				d.unconfirmed(st, &Detail{Marker: ptr(i), Partition: ptr(p), Boundary: ptr(boundary[p]), PlanID: st.BoundarySetBy(p), Requested: ptr(off)},
					fmt.Sprintf("offset %d of %s-%d is below the boundary %d", off, topic, p, boundary[p]))
			}
		}
	}
}

// unconfirmed says that what the marker needs is below a boundary only
// evidence of an erased commit holds up (det.PlanID's, or any unconfirmed
// plan's when det is nil): cannot tell, never refused, since the records may
// all be there and the plan may never have been committed.
func (d *decision) unconfirmed(st *projector.State, det *Detail, what string) {
	plan := ""
	if det != nil {
		plan = det.PlanID
	} else if ops := st.Unconfirmed(); len(ops) > 0 {
		plan = ops[0].PlanID
	}
	ctl := d.f.Control.Topic
	held := fmt.Sprintf("plan %s, for which control topic %s holds no COMMITTED", plan, ctl)
	if e, off, ok := st.Evidence(plan); ok {
		held = fmt.Sprintf("plan %s, for which control topic %s holds a %s (offset %d) but no COMMITTED", plan, ctl, e, off)
	}
	d.add(UnconfirmedBoundary, det, cannot+fmt.Sprintf("%s, set only by %s: evidence of a commit that is no longer in the log. "+
		"Whether that plan was committed (and its records may be deleted) or never was cannot be told from the log",
		what, held),
		fmt.Sprintf("if plan %s was committed and its COMMITTED was erased, a running worker re-appends it once nothing is left to delete, and kcleanup apply of the plan re-commits it; the gate then refuses below it", plan),
		fmt.Sprintf("if nobody committed plan %s (a record written by hand or by a foreign producer), see docs/operator-guide.md, \"Evidence of a commit that is no longer in the log\"; kcleanup history --control-topic %s shows who wrote it", plan, ctl),
		"or restore from a recovery point at or above the plan's offsets")
}

// binding is the data topic the control topic governs, when it was read.
func (d *decision) binding() (topic, topicID string, ok bool) {
	if p := d.f.Projection; p != nil && p.State != nil {
		return p.State.Binding()
	}
	return "", "", false
}

func (d *decision) physical() {
	data := d.f.Data
	switch {
	case data.Err != nil:
		d.add(DataTopicUnreadable, nil, cannot+fmt.Sprintf("data topic %s could not be read: %v", data.Topic, data.Err),
			append(errors.GetAllHints(data.Err), "the gate checks the live topic on every request and fails closed when it cannot")...)
		return
	case !data.Exists:
		// "Deleted" only when the control topic knew the topic: a name nobody ever cleaned is
		// as likely a typo in the markers as a deleted topic.
		if bt, bid, ok := d.binding(); ok && bt == data.Topic {
			d.add(DataTopicMissing, nil, fmt.Sprintf("Cannot restore Kafka action state for %s: the topic does not exist (it was deleted: control topic %s governed it as topic ID %s), and with it every record the recovery point needs",
				data.Topic, d.f.Control.Topic, bid),
				"restore from a recovery point of the topic's current incarnation, if there is one; this one's action state is gone")
			return
		}
		d.add(DataTopicMissing, nil, fmt.Sprintf("Cannot restore Kafka action state for %s: the topic does not exist, so none of the records the recovery point needs is there", data.Topic),
			"check the topic name the markers give (list the topics: kafka-topics --bootstrap-server "+d.f.Bootstrap+" --list); if the topic was deleted, restore from a recovery point of its current incarnation")
		return
	}
	for i, m := range d.f.Markers {
		if m.Topic != data.Topic {
			d.add(TopicMismatch, &Detail{Marker: ptr(i)}, cannot+fmt.Sprintf("the markers name more than one topic (%s and %s)", data.Topic, m.Topic),
				"validate the markers of each action-state topic separately")
			continue
		}
		if m.TopicID != data.ID {
			d.add(TopicRecreated, &Detail{Marker: ptr(i), MarkerTopicID: m.TopicID, LiveTopicID: data.ID},
				fmt.Sprintf("Cannot restore Kafka action state for %s: the recovery point is from topic ID %s but the topic now has ID %s (it was deleted and recreated)",
					m.Topic, m.TopicID, data.ID),
				"the records of that incarnation are gone; restore from a recovery point taken since the topic was recreated")
			continue
		}
		for _, p := range m.Offsets.Partitions() {
			off := m.Offsets[p]
			det := &Detail{Marker: ptr(i), Partition: ptr(p), Requested: ptr(off)}
			if !slices.Contains(data.Partitions, p) {
				d.add(UnknownPartition, det, fmt.Sprintf("Cannot restore Kafka action state for %s-%d: the topic has no such partition (it has %s)",
					m.Topic, p, partitionList(data.Partitions)),
					"check that the markers are from this topic's recovery point")
				continue
			}
			start, okS := data.Start[p]
			end, okE := data.End[p]
			if !okS || !okE {
				d.add(DataTopicUnreadable, det, cannot+fmt.Sprintf("the offsets of %s-%d were not listed", m.Topic, p))
				continue
			}
			if off >= start && off <= end {
				continue
			}
			det.LogStart, det.HighWatermark = ptr(start), ptr(end)
			why := fmt.Sprintf("records below offset %d are already deleted", start)
			hint := "restore from a newer recovery point whose offsets are inside the available range"
			if off > end {
				why = fmt.Sprintf("the partition ends at offset %d: the recovery point is from a longer log (records lost in an unclean failover, or another topic)", end)
				hint = "check that the markers are from this topic's recovery point; restore from one whose offsets are inside the available range"
			}
			d.add(OutOfRange, det, fmt.Sprintf("Cannot restore Kafka action state for %s-%d from offset %d: requested offset %d is outside the available range [%d, %d]; %s",
				m.Topic, p, off, off, start, end, why), hint)
		}
		for _, p := range data.Partitions {
			if _, ok := m.Offsets[p]; !ok {
				d.add(UncoveredPartition, &Detail{Marker: ptr(i), Partition: ptr(p)},
					fmt.Sprintf("Cannot restore Kafka action state for %s-%d: the topic has this partition but the recovery point has no offset for it", m.Topic, p),
					"a recovery point covers every partition of the topic; check that the markers of every subtask were passed")
			}
		}
	}
}

func (d *decision) failClosed(st *projector.State) {
	c := d.f.Control
	p := d.f.Projection
	if !c.Exists || c.Err != nil || c.Partitions != 1 {
		return // nothing to read, or nothing a read would prove
	}
	if p == nil || p.Err != nil {
		why := "it was not read"
		var hints []string
		if p != nil {
			why = p.Err.Error()
			hints = errors.GetAllHints(p.Err)
		}
		d.add(NotCaughtUp, nil, cannot+fmt.Sprintf("cannot prove that the view of control topic %s is caught up: %s", c.Topic, why),
			append(hints, "the gate fails closed whenever it cannot read the control topic to its end; check the brokers, the network and the client configuration, then validate again")...)
		return
	}
	if ok, why := st.Degraded(); ok {
		d.add(Degraded, nil, cannot+"the control-topic projection is degraded: "+why,
			"upgrade kcleanup to a version that understands the newer control record, then validate again")
	}
	if ok, why := st.AtRisk(); ok {
		d.add(HistoryAtRisk, nil, cannot+fmt.Sprintf("accepted history on control topic %s is missing or at risk: %s", c.Topic, why),
			fmt.Sprintf("run a worker for %s (it repairs overwritten keys at once), check `kcleanup doctor --control-topic %s`, then validate again", c.Topic, c.Topic))
	}
	d.unreadable(st, p.Foreign)
}

// unreadable refuses on records whose meaning is unknown: a foreign
// format's (always, while the projection sees them), and other unreadable
// records while their key still holds them (a tombstone retracts one).
func (d *decision) unreadable(st *projector.State, foreign []projector.ForeignRecord) {
	topic := d.f.Control.Topic
	if len(foreign) > 0 {
		var offs []int64
		var ex []string
		for _, r := range foreign {
			offs = append(offs, r.Offset)
			if len(ex) < 3 {
				e := fmt.Sprintf("offset %d key %s", r.Offset, r.Key)
				if r.Status != "" {
					e += " status " + r.Status
				}
				ex = append(ex, e)
			}
		}
		d.add(ForeignFormat, &Detail{Records: offs}, cannot+fmt.Sprintf(
			"control topic %s holds %d record(s) in %s (key = plan ID, value {schemaVersion, status, plan}: %s): kcleanup does not fold them, so the boundary they record is unknown to it",
			topic, len(foreign), projector.FlinkAgents, strings.Join(ex, "; ")),
			"this looks like a control topic written by Flink Agents' own cleanup tool: validate with that tool, or give kcleanup a control topic of its own (kcleanup init --topic "+d.f.Data.Topic+" --control-topic <new name>)")
	}
	isForeign := map[int64]bool{}
	for _, r := range foreign {
		isForeign[r.Offset] = true
	}
	live := map[string]bool{}
	for _, r := range st.Retractions() {
		live[string(r.Key)] = true
	}
	var offs []int64
	var ex []string
	for _, v := range st.Rejected() {
		if !slices.Contains(unreadable, v.Reason) || isForeign[v.Offset] || (v.Key != "" && !live[v.Key]) {
			continue
		}
		offs = append(offs, v.Offset)
		if len(ex) < 3 {
			ex = append(ex, fmt.Sprintf("offset %d %s: %s", v.Offset, v.Reason, v.Detail))
		}
	}
	if len(offs) == 0 {
		return
	}
	what := "so the absence of a committed boundary proves nothing"
	if len(st.Boundary()) > 0 {
		what = "so the boundary may be higher than the one read"
	}
	d.add(UnreadableRecords, &Detail{Records: offs}, cannot+fmt.Sprintf("control topic %s holds %d record(s) the fold cannot read (%s); they are evidence of nothing, %s",
		topic, len(offs), strings.Join(ex, "; "), what),
		fmt.Sprintf("`kcleanup history --control-topic %s` shows each with its writer; if they are garbage, a running worker retracts them (tombstones their keys) after %s, then validate again; if another tool writes this topic, give kcleanup a control topic of its own",
			topic, "a minute"))
}

func (d *decision) finish() Verdict {
	v := d.v
	v.Refusals = nonNilRefusals(v.Refusals)
	v.Hints = []string{}
	v.Notes = []string{}
	v.Checked = []Checked{}
	if len(v.Refusals) == 0 {
		v.Allowed, v.Class = true, Allowed
		v.Notes = append(v.Notes, d.notes...)
		return v
	}
	v.Class = CannotTell
	for _, r := range v.Refusals {
		if r.Class == Refused {
			v.Class = Refused
			break
		}
	}
	first := v.Refusals[0]
	if v.Class == Refused {
		// The top level carries the first proof of harm.
		for _, r := range v.Refusals {
			if r.Class == Refused {
				first = r
				break
			}
		}
	}
	v.Reason, v.Message, v.Hints, v.Detail = first.Reason, first.Message, first.Hints, first.Detail
	return v
}

func ptr[T any](v T) *T { return &v }

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilRefusals(s []Refusal) []Refusal {
	if s == nil {
		return []Refusal{}
	}
	return s
}

// partitionList renders a partition set as "partitions 0-3" or "partitions 0, 2".
func partitionList(ps []int32) string {
	if len(ps) == 0 {
		return "no partitions"
	}
	contiguous := true
	for i, p := range ps {
		contiguous = contiguous && p == ps[0]+int32(i)
	}
	if contiguous && len(ps) > 1 {
		return fmt.Sprintf("partitions %d-%d", ps[0], ps[len(ps)-1])
	}
	var s []string
	for _, p := range ps {
		s = append(s, strconv.Itoa(int(p)))
	}
	return "partitions " + strings.Join(s, ", ")
}
