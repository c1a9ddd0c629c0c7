package flinkagents

import (
	"fmt"
	"slices"

	"github.com/kcleanup/kcleanup/events"
)

// Record is one control-topic record, as read with read_committed. Key nil
// means no key; Value nil means a tombstone.
type Record struct {
	Offset     int64
	Key, Value []byte
}

// Entry is one folded record and what the fold made of it.
type Entry struct {
	Offset int64
	Key    []byte
	// Status and PlanID are set when the value parsed.
	Status Status
	PlanID string
	// Err is the record's failure; the fold stops at the first one.
	Err *Error
	// Unread: the record follows a failure, so the job never reads it.
	Unread bool
}

// Fold is the job's fold of a control topic (its readOperations with
// applyControlRecord), record by record in offset order. It is pure. Like
// the job, it stops at the first failure: Err is then set for good.
type Fold struct {
	ops     map[string]*Operation
	order   []string // keys in first-appearance order (the job's LinkedHashMap)
	entries []Entry
	err     *Error
}

// New returns an empty fold.
func New() *Fold { return &Fold{ops: map[string]*Operation{}} }

// Step folds one record and returns its failure, if any.
func (f *Fold) Step(r Record) *Error {
	e := Entry{Offset: r.Offset, Key: r.Key}
	defer func() { f.entries = append(f.entries, e) }()
	if f.err != nil {
		e.Unread = true
		return nil
	}
	e.Err = f.apply(r, &e)
	f.err = e.Err
	return e.Err
}

func (f *Fold) apply(r Record, e *Entry) *Error {
	if r.Key == nil {
		return recordError(r.Offset, ReasonNoKey, "", "Kafka cleanup control record must have a plan ID key")
	}
	key := string(r.Key)
	if r.Value == nil {
		return recordError(r.Offset, ReasonTombstone, key,
			"Kafka cleanup control topic contains a tombstone for plan %s; cleanup boundaries cannot be deleted", quote(key))
	}
	status, plan, err := ParseValue(r.Value)
	if err != nil {
		err.Offset = r.Offset
		if err.PlanID == "" {
			err.PlanID = key
		}
		return err
	}
	e.Status, e.PlanID = status, plan.PlanID
	if !utf8Key(r.Key) || key != plan.PlanID {
		return recordError(r.Offset, ReasonKeyMismatch, plan.PlanID,
			"Cleanup control record key %s does not match its plan ID %s", quote(key), plan.PlanID)
	}
	prev := f.ops[key]
	if prev != nil && !prev.Plan.Equal(plan) {
		return recordError(r.Offset, ReasonChangedPlan, key,
			"Cleanup control record changed immutable plan %s (first written at offset %d)", key, prev.First)
	}
	if prev != nil && prev.Status == Applied && status != Applied {
		return recordError(r.Offset, ReasonRegressed, key,
			"Cleanup control record regressed applied plan %s (APPLIED at offset %d, then %s)", key, prev.Last, status)
	}
	if prev == nil {
		prev = &Operation{Plan: plan, First: r.Offset}
		f.ops[key] = prev
		f.order = append(f.order, key)
	}
	prev.Status, prev.Last = status, r.Offset
	return nil
}

// utf8Key: a key that is not UTF-8 reaches the job as U+FFFD replacements,
// which never equal a plan ID.
func utf8Key(k []byte) bool {
	for _, c := range k {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// Err is the failure the fold stopped at, or nil.
func (f *Fold) Err() error {
	if f.err == nil {
		return nil
	}
	return f.err
}

// Entries lists every record folded, in offset order.
func (f *Fold) Entries() []Entry { return slices.Clone(f.entries) }

// Operations lists the plans in order of first appearance, with their
// latest status.
func (f *Fold) Operations() []Operation {
	out := make([]Operation, 0, len(f.order))
	for _, k := range f.order {
		out = append(out, *f.ops[k])
	}
	return out
}

// Effective checks what the job checks of the stored plans, against the
// first plan's topic, topic ID and partitions (the job checks them against
// the live topic: see Boundary), and returns the effective boundary, the
// per-partition maximum over every plan, COMMITTED or APPLIED. An empty
// fold is ReasonEmpty: the job refuses to recover from it.
func (f *Fold) Effective() (events.Offsets, error) {
	if f.err != nil {
		return nil, f.err
	}
	if len(f.order) == 0 {
		return nil, &Error{Reason: ReasonEmpty, Offset: -1,
			Detail: "Kafka cleanup control topic contains no committed boundary"}
	}
	first := f.ops[f.order[0]].Plan
	return f.Boundary(first.Topic, first.TopicID, first.Offsets.Partitions())
}

// Boundary is the job's getCommittedBoundary for the topic with this name,
// ID and partitions: every plan must be for them, every two plans
// comparable, and the result is the effective boundary.
func (f *Fold) Boundary(topic, topicID string, partitions []int32) (events.Offsets, error) {
	if f.err != nil {
		return nil, f.err
	}
	if len(f.order) == 0 {
		return nil, &Error{Reason: ReasonEmpty, Offset: -1,
			Detail: "Kafka cleanup control topic contains no committed boundary"}
	}
	want := events.Offsets{}
	for _, p := range partitions {
		want[p] = 0
	}
	plans := make([]Plan, 0, len(f.order))
	for _, k := range f.order {
		op := f.ops[k]
		p := op.Plan
		if p.Topic != topic || p.TopicID != topicID {
			return nil, &Error{Reason: ReasonOtherTopic, Offset: op.First, PlanID: p.PlanID,
				Detail: fmt.Sprintf("Cleanup control topic contains a boundary for a different Kafka topic: plan %s is for %s (topic ID %s), not %s (topic ID %s)",
					p.PlanID, quote(p.Topic), quote(p.TopicID), quote(topic), quote(topicID))}
		}
		if !p.Offsets.SamePartitions(want) {
			return nil, &Error{Reason: ReasonPartitionSet, Offset: op.First, PlanID: p.PlanID,
				Detail: fmt.Sprintf("Cleanup control topic contains a different Kafka partition set: plan %s covers partitions %v, the topic has %v",
					p.PlanID, p.Offsets.Partitions(), want.Partitions())}
		}
		plans = append(plans, p)
	}
	if a, b, ok := incomparable(plans); ok {
		return nil, &Error{Reason: ReasonIncomparable, Offset: f.ops[b.PlanID].First, PlanID: a.PlanID, Other: b.PlanID,
			Detail: fmt.Sprintf("Cleanup control topic contains incomparable boundaries %s and %s: neither is at or above the other on every partition (%s vs %s)",
				a.PlanID, b.PlanID, a.Offsets, b.Offsets)}
	}
	boundary := events.Offsets{}
	for _, p := range plans {
		for part, off := range p.Offsets {
			boundary[part] = max(boundary[part], off)
		}
	}
	return boundary, nil
}

// SetBy returns the plan that first set the boundary's offset on partition
// p (the first plan in fold order holding the maximum), or "".
func (f *Fold) SetBy(p int32) string {
	best, id := int64(-1), ""
	for _, k := range f.order {
		if off, ok := f.ops[k].Plan.Offsets[p]; ok && off > best {
			best, id = off, k
		}
	}
	return id
}

// incomparable finds two plans neither of which is at or above the other on
// every partition. All plans hold the same partitions. Lexicographic order
// over ascending partitions extends "at or above everywhere", so the plans
// are pairwise comparable exactly when each is covered by the next once
// sorted: n log n instead of the job's n² pairs, with the same answer.
func incomparable(plans []Plan) (Plan, Plan, bool) {
	if len(plans) < 2 {
		return Plan{}, Plan{}, false
	}
	parts := plans[0].Offsets.Partitions()
	sorted := slices.Clone(plans)
	slices.SortStableFunc(sorted, func(a, b Plan) int {
		for _, p := range parts {
			if c := compareInt(a.Offsets[p], b.Offsets[p]); c != 0 {
				return c
			}
		}
		return 0
	})
	for i := 1; i < len(sorted); i++ {
		lo, hi := sorted[i-1], sorted[i]
		for _, p := range parts {
			if lo.Offsets[p] > hi.Offsets[p] {
				return lo, hi, true
			}
		}
	}
	return Plan{}, Plan{}, false
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Validate is the job's recovery check (rebuildState with
// validateRecoveryOffsets) for a recovery point with these markers: the
// markers are merged as the job merges them (one topic and partition set,
// the minimum offset per partition), every plan must be for that topic,
// and every offset must be at or above the effective boundary. nil means
// the job restores this recovery point.
func (f *Fold) Validate(markers []events.Marker) error {
	if f.err != nil {
		return f.err
	}
	if len(markers) == 0 {
		if len(f.order) == 0 {
			return &Error{Reason: ReasonEmpty, Offset: -1, Detail: "Kafka cleanup control topic contains no committed boundary"}
		}
		return &Error{Reason: ReasonMarkers, Offset: -1,
			Detail: "Cannot initialize Kafka action state without a recovery marker because a cleanup boundary is committed"}
	}
	merged := events.Offsets{}
	m0 := markers[0]
	for i, m := range markers {
		if m.Topic != m0.Topic || m.TopicID != m0.TopicID {
			return &Error{Reason: ReasonMarkers, Offset: -1,
				Detail: fmt.Sprintf("Recovery markers do not reference one physical Kafka topic: marker %d is for %s (%s), marker 0 for %s (%s)", i, m.Topic, m.TopicID, m0.Topic, m0.TopicID)}
		}
		if i > 0 && !m.Offsets.SamePartitions(m0.Offsets) {
			return &Error{Reason: ReasonMarkers, Offset: -1,
				Detail: fmt.Sprintf("Recovery markers contain different Kafka partition sets: marker %d has %v, marker 0 has %v", i, m.Offsets.Partitions(), m0.Offsets.Partitions())}
		}
		for p, off := range m.Offsets {
			if cur, ok := merged[p]; !ok || off < cur {
				merged[p] = off
			}
		}
	}
	boundary, err := f.Boundary(m0.Topic, m0.TopicID, merged.Partitions())
	if err != nil {
		return err
	}
	for _, p := range boundary.Partitions() {
		if merged[p] < boundary[p] {
			return &Error{Reason: ReasonBelowBoundary, Offset: -1, PlanID: f.SetBy(p), Topic: m0.Topic,
				Partition: p, Requested: merged[p], Boundary: boundary[p]}
		}
	}
	return nil
}
