package projector

import (
	"encoding/base64"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
)

// testTopic is the data topic of every test unless it says otherwise.
const testTopic = "action-state"

// testEpoch is the "at" of offset 0 in generated records; offset n is n
// seconds later. Fixed, so transcripts and digests are reproducible.
var testEpoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// testTopicID returns a valid Kafka topic ID distinct for each n ≥ 1.
func testTopicID(n byte) string {
	var b [16]byte
	b[0], b[7] = n, 0x5a
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// newPlan builds a plan with its real ID.
func newPlan(rp, topic, topicID string, offsets events.Offsets) events.Plan {
	return events.Plan{
		PlanID:              events.ComputePlanID(rp, topic, topicID, offsets),
		SourceRecoveryPoint: rp,
		Topic:               topic,
		TopicID:             topicID,
		Offsets:             offsets,
	}
}

// envelope builds the envelope of event e for plan p. The caller adds
// Boundary (COMMITTED) and LogStart (APPLIED).
func envelope(p events.Plan, e events.Event, offset int64, actor string) events.Envelope {
	return events.Envelope{
		SchemaVersion: events.SchemaVersion,
		Event:         e,
		PlanID:        p.PlanID,
		Plan:          p,
		At:            testEpoch.Add(time.Duration(offset) * time.Second),
		Actor:         actor,
	}
}

// record encodes an envelope as the record at offset.
func record(offset int64, env events.Envelope) Record {
	k, v := env.Encode()
	return Record{Offset: offset, Key: k, Value: v, Timestamp: env.At}
}

// parseOffsets reads "0:150,1:230"; "" and "none" are empty.
func parseOffsets(t testing.TB, s string) events.Offsets {
	t.Helper()
	o := events.Offsets{}
	if s == "" || s == "none" {
		return o
	}
	for _, part := range strings.Split(s, ",") {
		ps, os, ok := strings.Cut(part, ":")
		if !ok {
			t.Fatalf("offsets %q: expected partition:offset,...", s)
		}
		p, err := strconv.ParseInt(ps, 10, 32)
		if err != nil {
			t.Fatalf("offsets %q: %v", s, err)
		}
		off, err := strconv.ParseInt(os, 10, 64)
		if err != nil {
			t.Fatalf("offsets %q: %v", s, err)
		}
		o[int32(p)] = off
	}
	return o
}

// compact is what Kafka's log cleaner leaves: the last record of every key,
// in offset order; with dropTombstones, a key whose last record is a
// tombstone disappears entirely (as once delete.retention.ms passed).
func compact(log []Record, dropTombstones bool) []Record {
	last := map[string]int{}
	for i, r := range log {
		last[string(r.Key)] = i
	}
	var out []Record
	for i, r := range log {
		if last[string(r.Key)] == i && !(dropTombstones && r.Value == nil) {
			out = append(out, r)
		}
	}
	return out
}

// compactBelow is one run of Kafka's log cleaner when only the records
// below offset below are older than min.compaction.lag: such a record is
// removed when a later record of its key is also below it. Newer records
// neither go nor remove anything; tombstones stay (delete.retention).
func compactBelow(log []Record, below int64) []Record {
	last := map[string]int64{}
	for _, r := range log {
		if r.Offset < below {
			last[string(r.Key)] = r.Offset
		}
	}
	var out []Record
	for _, r := range log {
		if l, ok := last[string(r.Key)]; ok && r.Offset < l {
			continue
		}
		out = append(out, r)
	}
	return out
}

// fold folds records into a new State.
func fold(records []Record) *State {
	s := New(KeepAudit())
	for _, r := range records {
		s.Step(r)
	}
	return s
}

// opStates maps each plan ID to its state, for comparing projections.
func opStates(s *State) map[string]fsm.State {
	m := map[string]fsm.State{}
	for _, o := range s.Operations() {
		m[o.PlanID] = o.State
	}
	return m
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// snapshot is what a record kept as evidence of an erased COMMITTED
// (ReasonCommitMissing) must not change: the committed boundary, the
// lifecycle state of every operation, what is pending, and an existing
// binding.
type snapshot struct {
	committed      events.Offsets
	states         map[string]fsm.State
	pending        []string
	bound          bool
	topic, topicID string
	boundary       events.Offsets
}

func snap(s *State) snapshot {
	sn := snapshot{committed: s.boundary.Clone(), states: opStates(s), boundary: s.Boundary()}
	for _, o := range s.Pending() {
		sn.pending = append(sn.pending, o.PlanID)
	}
	sn.topic, sn.topicID, sn.bound = s.Binding()
	return sn
}

// evidenceChange says what an evidence record changed beyond what it may
// (new PLANNED operations, a binding where there was none, a higher
// Boundary), or "".
func (a snapshot) evidenceChange(s *State) string {
	b := snap(s)
	if !a.committed.Equal(b.committed) {
		return "the committed boundary moved from " + a.committed.String() + " to " + b.committed.String()
	}
	for id, st := range b.states {
		if was, ok := a.states[id]; ok && was != st || !ok && st != fsm.Planned {
			return "operation " + id + " moved to " + st.String()
		}
	}
	if !slices.Equal(a.pending, b.pending) {
		return "pending operations changed"
	}
	if a.bound && (b.topic != a.topic || b.topicID != a.topicID) {
		return "the binding changed"
	}
	for p, off := range a.boundary {
		if b.boundary[p] < off {
			return "Boundary fell"
		}
	}
	return ""
}
