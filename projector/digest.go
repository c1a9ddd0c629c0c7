package projector

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"maps"
	"slices"
	"strconv"
	"time"
)

// Digest returns the lowercase hex SHA-256 of a canonical encoding of the
// state: next offset, degraded flag and reason, binding, boundary with the
// plan that set each partition, every operation (plan, state, boundary, log
// start, attempts, implied steps, history, where its latest copies are) in
// order of first appearance, the commit order, the keys awaiting repair or
// retraction, and the verdict of every record that was not accepted. Two
// replicas that folded the same records have the same digest (I4); nothing
// depends on map iteration order.
func (s *State) Digest() string {
	h := sha256.New()
	d := digestWriter{h: h}
	d.line("kcleanup-projection", "1")
	d.line("next", strconv.FormatInt(s.next, 10))
	d.line("degraded", strconv.FormatBool(s.degraded), strconv.Quote(s.degradedReason))
	s.writeCore(h)
	for _, k := range slices.Sorted(maps.Keys(s.overwritten)) {
		d.line("overwritten", strconv.Quote(k), strconv.FormatInt(s.overwritten[k].at, 10), strconv.FormatBool(s.overwritten[k].evidence))
	}
	for _, o := range s.ops {
		latest := o.latest()
		d.line("copies", o.id.String(), strconv.Itoa(int(o.held)), strconv.FormatInt(latest[0], 10),
			strconv.FormatInt(latest[1], 10), strconv.FormatInt(latest[2], 10), strconv.FormatInt(latest[3], 10))
	}
	s.writeMirrorRepairs(d)
	s.writePinRepairs(d)
	d.line("commits", strconv.Itoa(len(s.commits)), "reorder-from", strconv.Itoa(s.reorderFrom))
	for _, r := range s.Retractions() {
		d.line("retraction", strconv.Quote(string(r.Key)), strconv.FormatInt(r.Offset, 10), formatTime(r.Timestamp))
	}
	// Rejections only: duplicates are in others only with KeepAudit, and a
	// projection with an audit has the same digest as one without.
	rejected := s.Rejected()
	d.line("rejections", strconv.Itoa(len(rejected)))
	for _, v := range rejected {
		d.line("verdict", strconv.FormatInt(v.Offset, 10), strconv.Quote(v.Key), string(v.Outcome),
			string(v.Reason), string(v.Event), v.PlanID, formatTime(v.At), strconv.Quote(v.Actor), strconv.Quote(v.Detail))
		if m := v.Maintenance; m != nil {
			d.line("maintenance", strconv.Quote(m.Kind), strconv.Quote(m.Actor), strconv.Quote(m.Reason))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// writeCore writes the binding, the boundary and the operations: the part of
// the state a rejected or duplicate record must never change.
func (s *State) writeCore(h hash.Hash) {
	d := digestWriter{h: h}
	d.line("binding", strconv.FormatBool(s.bound), strconv.Quote(s.topic), strconv.Quote(s.topicID))
	for _, p := range s.boundary.Partitions() {
		d.line("boundary", strconv.Itoa(int(p)), strconv.FormatInt(s.boundary[p], 10), s.setByID(p))
	}
	for _, o := range s.ops {
		pl := s.plan(o)
		d.line("op", pl.PlanID, string(o.state()), strconv.Quote(pl.SourceRecoveryPoint), strconv.Quote(pl.Topic),
			strconv.Quote(pl.TopicID), formatOffsets(pl.Offsets), formatOffsets(o.boundaryOffsets()), formatOffsets(o.logStartOffsets()),
			strconv.Itoa(o.deletes()), strconv.Itoa(int(o.accepted)), strconv.Itoa(int(o.implied)), strconv.FormatBool(o.covered))
		for _, st := range s.exportSteps(o) {
			d.line("step", strconv.FormatInt(st.Offset, 10), string(st.Event), formatTime(st.At), strconv.Quote(st.Actor))
		}
		if o.evidence != 0 {
			d.line("evidence", strconv.Itoa(int(o.evidence)), formatOffsets(o.proofLogStart()))
			for _, st := range o.proofSteps() {
				d.line("proof", strconv.FormatInt(st.Offset, 10), string(st.Event), formatTime(st.At), strconv.Quote(st.Actor))
			}
		}
	}
	s.writeMirrorCore(d)
	s.writePinCore(d)
}

// coreDigest hashes writeCore alone; tests use it to prove a rejection
// changed nothing but the list of rejections.
func (s *State) coreDigest() string {
	h := sha256.New()
	s.writeCore(h)
	return hex.EncodeToString(h.Sum(nil))
}

type digestWriter struct{ h hash.Hash }

// line writes space-separated fields and a newline. Free text is quoted by
// the caller, so no field can forge a separator.
func (d digestWriter) line(fields ...string) {
	for i, f := range fields {
		if i > 0 {
			d.h.Write([]byte{' '})
		}
		d.h.Write([]byte(f))
	}
	d.h.Write([]byte{'\n'})
}

func formatTime(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}
