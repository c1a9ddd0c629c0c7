package protocol

import (
	"fmt"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
)

// The mirror steps (docs/design.md, "The Flink Agents mirror"): a run meets
// them only while the projection has a mirror attached.
const (
	// ReadMirror: read the attached mirror as the Flink Agents job reads
	// it, read_committed to the end offset captured first, with its live
	// topic ID and settings (Report.Mirror).
	ReadMirror Kind = "read-mirror"
	// WriteMirror: write Step.Mirror to the mirror, linearizably: fence
	// every other mirror writer, read the mirror to its end, check the
	// write with MirrorWrite on what was read, then write and commit; a
	// write MirrorWrite says is not needed is not made. Report.Err on any
	// failure (marked ErrBlocked when MirrorWrite refuses it).
	WriteMirror Kind = "write-mirror"
)

// MirrorKinds lists the mirror steps, apart from Kinds: only a run with a
// mirror attached meets them. The simulation (protocol/sim) requires both.
func MirrorKinds() []Kind { return []Kind{ReadMirror, WriteMirror} }

// MirrorView is the attached mirror as ReadMirror found it.
type MirrorView struct {
	Topic string
	// Missing: the topic does not exist.
	Missing bool
	// TopicID, Partitions and CleanupPolicy are the live topic's.
	TopicID       string
	Partitions    []int32
	CleanupPolicy string
	// MaxMessageBytes is the topic's max.message.bytes; 0 when not known.
	MaxMessageBytes int
	// Fold is the job's fold of every record below the end offset
	// captured first (read_committed, once the last stable offset reached
	// it).
	Fold *flinkagents.Fold
	// Visible holds, by offset, when the brokers made each record readable
	// to a read_committed reader: the broker timestamp of its
	// transaction's commit marker, or a record's own timestamp outside a
	// transaction. A record whose time is not known has no entry
	// (RestoreGrace).
	Visible map[int64]time.Time
	// ReadAt is the reader's clock when the read ended: the restore grace
	// judges by it whether its time has come, never when it began.
	ReadAt time.Time
}

// MirrorRecord is a record for the mirror: the plan under its ID as key,
// with a status (Step.Mirror of WriteMirror). Topic and TopicID name the
// attached mirror (ReadMirror needs only those).
type MirrorRecord struct {
	Topic   string
	TopicID string
	Status  flinkagents.Status
	Plan    events.Plan
}

// detachHint is the way out of every mirror that cannot be kept in step.
func detachHint(topic, dataTopic string) string {
	return "nothing was deleted for the plan; fix the mirror topic " + topic +
		" (or detach it: kcleanup mirror detach --topic " + dataTopic + " --reason …; the Flink Agents job then no longer learns the boundary from it)"
}

// CheckMirror says why the attached mirror (topic, with the ID it was
// attached with, of the data topic named in hints) cannot be kept in step
// now, or nil: missing, recreated,
// not the job's settings, or a fold the job itself cannot recover from.
func CheckMirror(topic, topicID, dataTopic string, v MirrorView) error {
	switch {
	case v.Missing:
		return errors.WithHint(errors.Mark(errors.Newf("mirror topic %s does not exist", topic), ErrBlocked),
			"create it (one partition, cleanup.policy=compact: kcleanup init --topic "+dataTopic+" --mirror-topic "+topic+"); "+detachHint(topic, dataTopic))
	case v.TopicID != topicID:
		return errors.WithHint(errors.Mark(errors.Newf(
			"mirror topic %s now has topic ID %s, not %s, the one it was attached with: it was recreated", topic, v.TopicID, topicID), ErrBlocked),
			"attach the new topic again (kcleanup mirror attach "+topic+" --topic "+dataTopic+" seeds it with the boundary); "+detachHint(topic, dataTopic))
	}
	if err := flinkagents.CheckTopic(topic, v.Partitions, v.CleanupPolicy); err != nil {
		hint := "a Flink Agents job refuses this topic too; " + detachHint(topic, dataTopic)
		if len(v.Partitions) != 1 || v.Partitions[0] != 0 {
			hint = "a Flink Agents job refuses this topic too; nothing was deleted for the plan; " + newMirrorHint("<broker>", dataTopic) +
				"; or detach this one (kcleanup mirror detach --topic " + dataTopic + " --reason …)"
		}
		return errors.WithHint(errors.Mark(errors.Wrapf(err, "mirror topic %s", topic), ErrBlocked), hint)
	}
	if v.Fold == nil {
		return errors.AssertionFailedf("mirror topic %s: no fold reported", topic)
	}
	if err := v.Fold.Err(); err != nil {
		return errors.WithHint(errors.Mark(errors.Wrapf(err, "mirror topic %s: the Flink Agents job cannot recover from it", topic), ErrBlocked),
			"kcleanup writes nothing that would make the job's fold fail, so another writer did; "+detachHint(topic, dataTopic))
	}
	return nil
}

// MirrorWrite checks, on the mirror as read, that writing w keeps the
// job's fold valid and its boundary defined: the key is unused or holds
// the same plan, no COMMITTED follows an APPLIED, the plan names the
// topic, topic ID and partition set of every stored plan and is
// comparable with each. needed is false when the mirror already holds the
// plan with w's status or a later one (APPLIED). err is marked ErrBlocked.
func MirrorWrite(v MirrorView, w MirrorRecord) (needed bool, err error) {
	if err := CheckMirror(w.Topic, w.TopicID, w.Plan.Topic, v); err != nil {
		return false, err
	}
	plan := flinkagents.FromKcleanup(w.Plan)
	needed = true
	blocked := func(format string, args ...any) (bool, error) {
		return false, errors.WithHint(errors.Mark(errors.Newf("mirror topic %s: plan %s cannot be written: "+format,
			append([]any{w.Topic, w.Plan.PlanID}, args...)...), ErrBlocked), detachHint(w.Topic, w.Plan.Topic))
	}
	if n := MirrorRecordBytes(w); v.MaxMessageBytes > 0 && n > v.MaxMessageBytes {
		_, err := blocked("its record takes up to %d bytes, above the mirror's max.message.bytes %d: the broker would refuse it", n, v.MaxMessageBytes)
		return false, errors.WithHint(err, fmt.Sprintf("raise it: kafka-configs --bootstrap-server <broker> --alter --entity-type topics --entity-name %s --add-config max.message.bytes=%d", w.Topic, MirrorMaxMessageBytes(n)))
	}
	for _, o := range v.Fold.Operations() {
		s := o.Plan
		if s.PlanID == plan.PlanID {
			if !s.Equal(plan) {
				return blocked("the mirror holds another plan under the same ID (offset %d)", o.First)
			}
			if o.Status == w.Status || o.Status == flinkagents.Applied {
				needed = false // already there; never COMMITTED after APPLIED
			}
			continue
		}
		if s.Topic != plan.Topic || s.TopicID != plan.TopicID {
			return blocked("the mirror holds plan %s for topic %s (topic ID %s), not %s (topic ID %s): the job would refuse to recover",
				s.PlanID, s.Topic, s.TopicID, plan.Topic, plan.TopicID)
		}
		if !samePartitionSet(s.Offsets, plan.Offsets) {
			return blocked("the plan's partition set %v differs from the job's %v (plan %s): the job would refuse to recover",
				plan.Offsets.Partitions(), s.Offsets.Partitions(), s.PlanID)
		}
		if !comparable(s.Offsets, plan.Offsets) {
			return blocked("it is incomparable with plan %s (%s vs %s): the job would refuse to recover (incomparable boundaries)",
				s.PlanID, plan.Offsets, s.Offsets)
		}
	}
	return needed, nil
}

// mirrorBatchOverhead bounds what a one-record batch adds to the key and
// value: the batch header (61 bytes) and the record's own varints.
const mirrorBatchOverhead = 61 + 32

// MirrorRecordBytes is the most the record batch carrying w can take on
// the broker (uncompressed; compression only shrinks it).
func MirrorRecordBytes(w MirrorRecord) int {
	return mirrorBatchOverhead + len(w.Plan.PlanID) + len(flinkagents.EncodeValue(w.Status, w.Plan))
}

// MirrorMaxMessageBytes is a max.message.bytes that holds a record of n
// bytes, rounded up to a whole KiB.
func MirrorMaxMessageBytes(n int) int { return (n + 1023) / 1024 * 1024 }

// MirrorWriteRetry says whether a failed attempt of a WriteMirror is run
// again from its fence (err as the attempt failed, code its Kafka error
// code, 0 when none): every failure but a refusal, that is MirrorWrite's
// (ErrBlocked), a missing ACL (ErrUnauthorized, Denied), or credentials
// the brokers refuse (PermanentRequest). Re-running is safe whatever
// happened: the next fence aborts or completes what this writer left, and
// its fresh read shows whether the record is there. Typically another
// writer fenced this one (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH,
// INVALID_TXN_STATE), or a request timed out.
func MirrorWriteRetry(err error, code int16) bool {
	return err != nil && !errors.Is(err, ErrBlocked) && !errors.Is(err, ErrUnauthorized) && !PermanentRequest(code)
}

// MirrorCovers reports whether the job's effective boundary on the mirror
// is at or above the plan on every plan partition: recovery from the mirror
// then refuses every recovery point the plan's deletion could harm.
func MirrorCovers(v MirrorView, plan events.Plan) bool {
	if v.Fold == nil || v.Fold.Err() != nil {
		return false
	}
	b, err := v.Fold.Boundary(plan.Topic, plan.TopicID, plan.Offsets.Partitions())
	if err != nil {
		return false
	}
	for p, off := range plan.Offsets {
		if b[p] < off {
			return false
		}
	}
	return true
}

// MirrorEffective is the job's effective boundary on the mirror for the
// data topic (name, ID, partitions), or the job's error.
func MirrorEffective(v MirrorView, topic, topicID string, partitions []int32) (events.Offsets, error) {
	if v.Fold == nil {
		return nil, errors.New("mirror not read")
	}
	return v.Fold.Boundary(topic, topicID, partitions)
}

func samePartitionSet(a, b events.Offsets) bool {
	if len(a) != len(b) {
		return false
	}
	for p := range a {
		if _, ok := b[p]; !ok {
			return false
		}
	}
	return true
}

// comparable: one is at or above the other on every partition (same set).
func comparable(a, b events.Offsets) bool {
	ge, le := true, true
	for p, x := range a {
		ge = ge && x >= b[p]
		le = le && x <= b[p]
	}
	return ge || le
}

// withMirror runs the mirror steps for the run's plan with status want,
// then continues with then; without a mirror attached it continues at once.
func (r *Run) withMirror(st *projector.State, want flinkagents.Status, then func(*projector.State) Step) Step {
	att, ok := st.Mirror()
	if !ok {
		return then(st)
	}
	r.mirror = &mirrorRun{topic: att.Topic, topicID: att.TopicID, want: want, then: then}
	r.phase = phaseMirrorRead
	return Step{Kind: ReadMirror, Mirror: MirrorRecord{Topic: att.Topic, TopicID: att.TopicID}}
}

// mirrorRun is the state of the mirror steps within a run.
type mirrorRun struct {
	topic, topicID string
	want           flinkagents.Status
	then           func(*projector.State) Step
	wrote          bool
	// dry: only check that the plan could be written (mirrorPrecheck).
	dry bool
}

// mirrorPrecheck, before COMMITTED: with a mirror attached, read it and
// check that the plan's COMMITTED could be written to it (or is not
// needed); a mirror that could not be kept in step blocks the run with
// nothing written. Then continues with then.
func (r *Run) mirrorPrecheck(st *projector.State, then func(*projector.State) Step) Step {
	step := r.withMirror(st, flinkagents.Committed, then)
	if r.mirror != nil && r.phase == phaseMirrorRead {
		r.mirror.dry = true
	}
	return step
}

// mirrorRead decides on what ReadMirror reported: continue when the
// mirror shows what it must, else write it (once; then read it back).
func (r *Run) mirrorRead(st *projector.State, rep Report) Step {
	m := r.mirror
	if err := CheckMirror(m.topic, m.topicID, r.plan.Topic, rep.Mirror); err != nil {
		return Step{Kind: Blocked, Err: err}
	}
	rec := MirrorRecord{Topic: m.topic, TopicID: m.topicID, Status: m.want, Plan: r.plan}
	if m.dry {
		if _, err := MirrorWrite(rep.Mirror, rec); err != nil {
			return Step{Kind: Blocked, Err: errors.WithHint(err, "nothing was written: the plan is not committed")}
		}
		r.mirror = nil
		return m.then(st)
	}
	switch m.want {
	case flinkagents.Committed:
		if MirrorCovers(rep.Mirror, r.plan) {
			note := say("mirror", "mirror %s shows a boundary at or above plan %s: a Flink Agents job reading it refuses the same recovery points", m.topic, r.planID)
			if r.mode != modeMirrorSync {
				// A job may have passed its check just before the mirror
				// showed the plan: nothing is deleted until the grace is out.
				g, wait := RestoreGrace(rep.Mirror, r.plan, MirrorGrace(st, r.cfg.RestoreGrace), r.cfg.GraceSeen)
				if wait {
					return graceStep(g).withNote(note)
				}
				if g.Grace > 0 {
					note = append(note, say("grace", "restore grace of %s since %s is out", g.Grace, g.From.UTC().Format(time.RFC3339))...)
				}
			}
			r.mirrored = m.topic + "/" + m.topicID
			return m.then(st).withNote(note)
		}
		if op, _ := st.Operation(r.planID); op.Covered && r.mode != modeMirrorSync {
			// A plan the boundary already covers is not mirrored: the plan
			// that set the boundary is, by the owning worker's mirror sync.
			return Step{Kind: Wait, Err: errors.WithHint(errors.Newf(
				"mirror %s does not show the boundary yet, and plan %s raises nothing on the control topic: nothing is deleted until the mirror shows the boundary",
				m.topic, r.planID), "the owning worker brings the mirror up to date (mirror sync); kcleanup mirror sync does it at once")}
		}
	case flinkagents.Applied:
		held := false
		for _, o := range rep.Mirror.Fold.Operations() {
			if o.Plan.PlanID == r.planID {
				held = true
				if o.Status == flinkagents.Applied {
					return m.then(st)
				}
			}
		}
		if !held && MirrorCovers(rep.Mirror, r.plan) {
			return m.then(st) // a later plan covers it in the mirror: nothing to mark
		}
	}
	if m.wrote {
		return Step{Kind: Wait, Err: errors.Newf("mirror %s: the %s record for plan %s was committed but is not read back", m.topic, m.want, r.planID)}
	}
	// A view at risk (a disputed conflict above all) may hold the full
	// log's loser as its plan: once in the mirror, the winner, incomparable
	// with it, could never follow. Nothing is written until history is whole.
	if err := atRisk(st); err != nil {
		return Step{Kind: Blocked, Err: errors.WithHint(err, "the mirror is written once the control topic's history is whole again; nothing is deleted meanwhile")}
	}
	if _, err := MirrorWrite(rep.Mirror, rec); err != nil {
		return Step{Kind: Blocked, Err: err}
	}
	r.phase = phaseMirrorWritten
	return Step{Kind: WriteMirror, Mirror: rec}
}

// mirrorWritten: read the mirror back, the record must be durable.
func (r *Run) mirrorWritten(rep Report) Step {
	m := r.mirror
	m.wrote = true
	r.phase = phaseMirrorRead
	note := say("mirror", "%s %s written to mirror %s", m.want, r.planID, m.topic)
	if !rep.MirrorWrote {
		note = say("mirror", "%s %s not written to mirror %s: read afresh inside the transaction, the mirror needed no such record", m.want, r.planID, m.topic)
	}
	return Step{Kind: ReadMirror, Mirror: MirrorRecord{Topic: m.topic, TopicID: m.topicID}, Notes: note}
}

func (s Step) withNote(notes []Progress) Step {
	s.Notes = append(notes, s.Notes...)
	return s
}

// NewMirrorSync brings the attached mirror up to the boundary: it writes
// the plan that set the boundary (with its status on the control topic)
// unless the mirror's effective boundary already covers it. Attaching a
// mirror runs it, and the owning worker runs it on every pass, so the
// mirror agrees with the boundary from the start and a plan covered on the
// control topic never needs mirroring.
func NewMirrorSync(cfg Config) *Run {
	return &Run{mode: modeMirrorSync, cfg: cfg}
}

// mirrorSyncStart: the plan that sets the boundary, then the mirror steps.
func (r *Run) mirrorSyncStart(st *projector.State) Step {
	if err := Degraded(st, r.cfg.ControlTopic); err != nil {
		return Step{Kind: Blocked, Err: err}
	}
	att, ok := st.Mirror()
	if !ok {
		return Step{Kind: Done, Notes: say("mirror", "no mirror is attached")}
	}
	op, ok := BoundaryPlan(st)
	if !ok {
		if len(st.Boundary()) == 0 {
			return Step{Kind: Done, Notes: say("mirror", "no boundary yet: nothing to mirror (a Flink Agents job refuses to recover from an empty control topic: set kafkaActionStateCleanupControlTopic only once the mirror holds a plan)")}
		}
		return Step{Kind: Blocked, Err: errors.WithHint(errors.Mark(errors.Newf(
			"the boundary %s is not the plan of any one committed operation, so no single Flink Agents record can carry it to mirror %s", st.Boundary(), att.Topic), ErrBlocked),
			"apply a plan made from a recovery point at or above the boundary; the mirror then holds it")}
	}
	r.plan, r.planID, r.state = op.Plan, op.PlanID, op.State
	want := flinkagents.Committed
	if op.State == fsm.Applied {
		want = flinkagents.Applied
	}
	return r.withMirror(st, want, func(*projector.State) Step {
		return Step{Kind: Done, Notes: say("mirror", "mirror %s agrees with the boundary (plan %s)", att.Topic, op.PlanID)}
	})
}

// BoundaryPlan is the accepted plan whose offsets are the boundary on
// every partition (an APPLIED one first, else the first planned): the one
// record that carries the boundary to a mirror. ok is false when there is
// none. Such a plan committed no earlier than the commit that last raised
// the boundary (projector.CommittedSinceRise), so only those are read: the
// daemon asks up to once a second with a mirror attached.
func BoundaryPlan(st *projector.State) (projector.Operation, bool) {
	b := st.Boundary()
	if len(b) == 0 {
		return projector.Operation{}, false
	}
	var found projector.Operation
	ok := false
	for _, op := range st.CommittedSinceRise() {
		switch op.State {
		case fsm.Committed, fsm.Deleting, fsm.Applied:
		default:
			continue
		}
		if !op.Plan.Offsets.Equal(b) {
			continue
		}
		if !ok || (op.State == fsm.Applied && found.State != fsm.Applied) {
			found, ok = op, true
		}
	}
	return found, ok
}

// mirrorName says which mirror a run last checked, for the second check
// before the deletion.
func mirrorName(st *projector.State) string {
	if m, ok := st.Mirror(); ok {
		return m.Topic + "/" + m.TopicID
	}
	return ""
}

// withMirrorNeeds adds to need what keeping the attached mirror in step
// needs, when one is attached.
func withMirrorNeeds(st *projector.State, need []Permission, write bool) []Permission {
	att, ok := st.Mirror()
	if !ok {
		return need
	}
	if !write {
		return append(need, MirrorCheckNeeds(att.Topic)...)
	}
	return append(need, MirrorNeeds(att.Topic)...)
}

// MirrorTransactionalID is the one transactional.id every kcleanup process
// writes a mirror topic with: a writer's InitProducerID fences every
// earlier writer of the same mirror, which makes the mirror writes
// linearizable (docs/design.md §11).
func MirrorTransactionalID(mirrorTopic string) string { return "kcleanup-mirror-" + mirrorTopic }

// MirrorRead: reading the mirror as the job does (docs/deploy.md, "Kafka ACLs").
func MirrorRead(mirror string) Permission {
	return Permission{"Read", "topic", mirror, "read the Flink Agents mirror topic"}
}

// MirrorWriteTopic: writing the mirror's records.
func MirrorWriteTopic(mirror string) Permission {
	return Permission{"Write", "topic", mirror, "write the Flink Agents mirror topic"}
}

// MirrorDescribeConfigs: the mirror's cleanup.policy, checked before writing.
func MirrorDescribeConfigs(mirror string) Permission {
	return Permission{"DescribeConfigs", "topic", mirror, "check the mirror topic's cleanup.policy"}
}

// MirrorTxn: the mirror writer's transactional ID (Write, which implies Describe).
func MirrorTxn(mirror string) Permission {
	return Permission{"Write", "transactional-id", MirrorTransactionalID(mirror), "write the mirror in a transaction (Write and Describe on the transactional ID)"}
}

// MirrorCheckNeeds are what checking a plan against the mirror needs
// (reading it and its configs), as a --no-wait submitter does before COMMITTED.
func MirrorCheckNeeds(mirror string) []Permission {
	return []Permission{MirrorRead(mirror), MirrorDescribeConfigs(mirror)}
}

// MirrorNeeds are what keeping a mirror in step needs. The transactional
// ID's cannot be asked of Metadata: a missing one shows as
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED at the first write, naming it.
func MirrorNeeds(mirror string) []Permission {
	return []Permission{MirrorRead(mirror), MirrorWriteTopic(mirror), MirrorDescribeConfigs(mirror), MirrorTxn(mirror)}
}
