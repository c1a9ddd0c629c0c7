package projector

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kcleanup/kcleanup/events"
)

// Mirror is the Flink Agents mirror attached to the control topic: the
// topic, in Flink Agents' control format, that every apply and every
// worker keeps in step with the boundary (docs/design.md, "The Flink
// Agents mirror").
type Mirror struct {
	Topic   string
	TopicID string
	// Offset is the latest copy of the ATTACHED record that attached it
	// (a repair or a retry moves it); At, Actor and Reason are that
	// record's.
	Offset int64
	At     time.Time
	Actor  string
	Reason string
	// HasGrace: the attachment carries a restore grace, RestoreGrace
	// (events.MirrorGraceSchemaVersion); an attachment of version 2 has
	// none, and the protocol applies its default (protocol.MirrorGrace).
	HasGrace     bool
	RestoreGrace time.Duration
}

// MirrorChange is one accepted mirror event, for the audit.
type MirrorChange struct {
	Offset  int64
	Event   events.Event
	Topic   string
	TopicID string
	At      time.Time
	Actor   string
	Reason  string
	// HasGrace and RestoreGrace are an ATTACHED's restore grace.
	HasGrace     bool
	RestoreGrace time.Duration
	// Effect says what it changed: "attached", "replaced <topic>",
	// "detached", or "no change" (a detach of a mirror not attached).
	Effect string
}

// mirrorRecord is an accepted mirror event as a repair re-encodes it.
type mirrorRecord struct {
	offset int64
	env    events.Envelope // with Mirror set
}

func (m *mirrorRecord) key() string { return events.MirrorKey(m.env.Mirror.Topic, m.env.Event) }

// mirrors is the fold's state of the mirror events. The attached mirror is
// decided by the latest accepted ATTACHED (lastAttach) and whether an
// accepted DETACHED of the same topic follows it (lastDetach). Compaction
// keeps the latest record of every key, so it keeps both of those records
// and the order between them: the compacted log attaches the same mirror
// (rule M4 of projector/doc.go) unless one of their keys is overwritten,
// which Repairs then answers.
type mirrors struct {
	lastAttach *mirrorRecord
	lastDetach *mirrorRecord // nil unless it detached lastAttach's topic
	// held: the content of the latest accepted record of each mirror key.
	held map[string]mirrorRecord
	// overwritten: a deciding key (lastAttach's or lastDetach's) whose
	// record a tombstone or an undecodable value overwrote, by key, with
	// the offset of that overwrite; Repairs re-appends the deciding records.
	overwritten map[string]int64
	history     []MirrorChange
}

// Mirror returns the attached mirror, if one is.
func (s *State) Mirror() (Mirror, bool) {
	a := s.mirror.lastAttach
	if a == nil || s.mirror.lastDetach != nil {
		return Mirror{}, false
	}
	m := a.env.Mirror
	return Mirror{Topic: m.Topic, TopicID: m.TopicID, Offset: a.offset, At: a.env.At, Actor: a.env.Actor, Reason: m.Reason,
		HasGrace: m.HasGrace, RestoreGrace: m.RestoreGrace}, true
}

// MirrorHistory returns every accepted mirror event in log order.
func (s *State) MirrorHistory() []MirrorChange { return slices.Clone(s.mirror.history) }

// unreadValue is why a mirror or pin record holds no event: a tombstone, or
// a value that does not decode. One from a newer kcleanup degrades the
// projection (it may forbid what this build would allow).
func (s *State) unreadValue(r Record, key string, err error) (reason Reason, what string) {
	if r.Value == nil {
		return ReasonTombstone, "a tombstone"
	}
	reason = decodeReason(err)
	if reason == ReasonNewerSchema || reason == ReasonUnknownEvent {
		s.degrade(r.Offset, key, err)
	}
	return reason, fmt.Sprintf("an undecodable value (%v)", err)
}

// foldMirror is Step for a record under a mirror key (events.IsMirrorKey).
func (s *State) foldMirror(r Record, env events.Envelope, err error) Verdict {
	s.next = r.Offset + 1
	v := Verdict{Offset: r.Offset, Key: string(r.Key), At: r.Timestamp}
	_, v.Event, _ = events.ParseMirrorKey(r.Key)
	key := string(r.Key)
	_, heldKey := s.mirror.held[key]
	switch {
	case r.Value == nil || err != nil:
		reason, what := s.unreadValue(r, v.Key, err)
		switch {
		case heldKey && (reason == ReasonNewerSchema || reason == ReasonUnknownEvent):
			s.mirrorOverwritten(key, r.Offset)
			v = reject(v, reason, fmt.Sprintf("%v; it also overwrites the mirror event accepted under this key", err))
		case heldKey:
			h := s.mirror.held[key]
			v = reject(v, ReasonOverwritesAccepted, fmt.Sprintf(
				"OVERWRITE: key %s holds the mirror event accepted at offset %d, and this record is %s; compaction would erase it%s",
				key, h.offset, what, s.mirrorOverwritten(key, r.Offset)))
		case r.Value == nil:
			v = reject(v, ReasonTombstone, "a tombstone (nil value) is never a valid control record")
		default:
			v = reject(v, reason, err.Error())
		}
	default:
		v.At, v.Actor = verdictAt(&env, r), env.Actor
		v = s.applyMirror(v, r.Offset, env)
	}
	_, held := s.mirror.held[string(r.Key)]
	return s.keepVerdict(r, v, held)
}

// applyMirror folds an accepted mirror event (rules M3 and M4).
func (s *State) applyMirror(v Verdict, offset int64, env events.Envelope) Verdict {
	m := env.Mirror
	key := events.MirrorKey(m.Topic, env.Event)
	rec := mirrorRecord{offset: offset, env: env}
	prev, hadKey := s.mirror.held[key]
	was, attached := s.Mirror()
	change := MirrorChange{Offset: offset, Event: env.Event, Topic: m.Topic, TopicID: m.TopicID, At: env.At, Actor: env.Actor, Reason: m.Reason,
		HasGrace: m.HasGrace, RestoreGrace: m.RestoreGrace}
	if env.Event == events.MirrorAttached {
		s.mirror.lastAttach, s.mirror.lastDetach = &rec, nil
		// Only the deciding keys can need a repair (see mirrors).
		clear(s.mirror.overwritten)
		switch {
		case attached && was.Topic == m.Topic && was.TopicID == m.TopicID && (was.HasGrace != m.HasGrace || was.RestoreGrace != m.RestoreGrace):
			// The attachment's restore grace changes (kcleanup mirror grace).
			change.Effect = "restore grace " + graceText(was.HasGrace, was.RestoreGrace) + " -> " + graceText(m.HasGrace, m.RestoreGrace)
			v.Detail = fmt.Sprintf("mirror %s (topic ID %s): %s: %s", m.Topic, m.TopicID, change.Effect, m.Reason)
		case attached && was.Topic == m.Topic && was.TopicID == m.TopicID:
			change.Effect = "no change"
			v.Detail = fmt.Sprintf("mirror %s (topic ID %s) is already attached; no change", m.Topic, m.TopicID)
		case attached:
			change.Effect = "replaced " + was.Topic
			v.Detail = fmt.Sprintf("mirror %s (topic ID %s) attached, replacing %s (topic ID %s)%s: %s", m.Topic, m.TopicID, was.Topic, was.TopicID, withGrace(m), m.Reason)
		default:
			change.Effect = "attached"
			v.Detail = fmt.Sprintf("mirror %s (topic ID %s) attached%s: %s", m.Topic, m.TopicID, withGrace(m), m.Reason)
		}
	} else {
		a := s.mirror.lastAttach
		switch {
		case a != nil && a.env.Mirror.Topic == m.Topic:
			// Detaching again moves the deciding DETACHED to this copy.
			s.mirror.lastDetach = &rec
			delete(s.mirror.overwritten, key)
			change.Effect = "detached"
			if !attached {
				change.Effect = "no change"
			}
			v.Detail = fmt.Sprintf("mirror %s detached: %s", m.Topic, m.Reason)
		default:
			change.Effect = "no change"
			v.Detail = fmt.Sprintf("mirror %s is not attached; no change: %s", m.Topic, m.Reason)
		}
	}
	s.mirror.held[key] = rec
	v.Outcome = Accepted
	if hadKey && change.Effect == "no change" && sameMirror(prev.env, env) {
		// The same event again (a repair, a retry): nothing changes.
		v.Outcome = Duplicate
		v.Detail = fmt.Sprintf("same content as the mirror event accepted at offset %d; no change", prev.offset)
		return v
	}
	s.mirror.history = append(s.mirror.history, change)
	return v
}

// sameMirror compares the content of two mirror events: event, topic,
// topic ID and restore grace (not at, actor or reason, like plan records).
func sameMirror(a, b events.Envelope) bool {
	return a.Event == b.Event && a.Mirror.Topic == b.Mirror.Topic && a.Mirror.TopicID == b.Mirror.TopicID &&
		a.Mirror.HasGrace == b.Mirror.HasGrace && a.Mirror.RestoreGrace == b.Mirror.RestoreGrace
}

// withGrace says an attachment's restore grace in a verdict's detail.
func withGrace(m *events.Mirror) string {
	if !m.HasGrace {
		return ""
	}
	return " with restore grace " + m.RestoreGrace.String()
}

// graceText is an attachment's restore grace for a verdict's detail.
func graceText(has bool, d time.Duration) string {
	if !has {
		return "unset (version 2)"
	}
	return d.String()
}

// mirrorOverwritten records an overwrite of an accepted mirror key and says
// whether a repair is due: only the deciding records matter (see mirrors).
func (s *State) mirrorOverwritten(key string, offset int64) string {
	deciding := s.mirror.lastAttach != nil && s.mirror.lastAttach.key() == key ||
		s.mirror.lastDetach != nil && s.mirror.lastDetach.key() == key
	if !deciding {
		return "; it no longer decides which mirror is attached, so nothing needs repairing"
	}
	if _, ok := s.mirror.overwritten[key]; !ok {
		s.mirror.overwritten[key] = offset
	}
	return ", which decides which mirror is attached, so it must be re-appended (Repairs)"
}

// keepVerdict keeps the verdict of a mirror or pin record as fold keeps
// those of plan records, and tracks the key for Retractions: a key that
// never held an accepted event (held false) and holds a rejected record
// (not a newer build's, not a tombstone) is retracted like any other.
func (s *State) keepVerdict(r Record, v Verdict, held bool) Verdict {
	if v.Outcome != Accepted && len(r.Headers) > 0 {
		if v.Maintenance = maintenance(r, v); v.Maintenance != nil {
			if s.maintained == nil {
				s.maintained = map[string]int{}
			}
			s.maintained[v.Maintenance.Kind]++
		}
	}
	if s.audited || v.Outcome == Rejected {
		if s.audited {
			s.audit = append(s.audit, auditEntry{offset: r.Offset, op: -1, idx: int32(len(s.others))})
		}
		s.others = append(s.others, v)
	}
	key := string(r.Key)
	switch {
	case v.Outcome != Rejected || held:
		delete(s.rejectedOnly, key)
	case r.Value == nil || v.Reason == ReasonNewerSchema || v.Reason == ReasonUnknownEvent:
		delete(s.rejectedOnly, key)
	default:
		s.rejectedOnly[key] = retraction{offset: r.Offset, timestamp: r.Timestamp}
	}
	return v
}

// mirrorRepairs are the deciding mirror records, re-encoded in their order,
// when one of their keys was overwritten: appended again, they decide the
// same attachment in the compacted log.
func (s *State) mirrorRepairs() []Record {
	if len(s.mirror.overwritten) == 0 {
		return nil
	}
	var out []Record
	for _, m := range []*mirrorRecord{s.mirror.lastAttach, s.mirror.lastDetach} {
		if m == nil {
			continue
		}
		key, value := m.env.Encode()
		out = append(out, Record{Offset: m.offset, Key: key, Value: value, Timestamp: m.env.At})
	}
	return out
}

// mirrorAtRisk is the mirror's part of AtRisk: a deciding record
// overwritten and not repaired.
func (s *State) mirrorAtRisk() []string {
	var risks []string
	for _, k := range slices.Sorted(maps.Keys(s.mirror.overwritten)) {
		risks = append(risks, fmt.Sprintf(
			"key %s holds the mirror event that decides which Flink Agents mirror is attached, overwritten at offset %d and not repaired yet: if the log cleaner runs first, the attachment read from this control topic changes (a running worker re-appends it; check that one owns the control topic)",
			k, s.mirror.overwritten[k]))
	}
	return risks
}

// writeMirrorCore is the mirror's part of the digest's core: what the
// attachment is, not where the latest copies of its records are (a
// duplicate moves those: writeMirrorRepairs has them).
func (s *State) writeMirrorCore(d digestWriter) {
	if m, ok := s.Mirror(); ok {
		d.line("mirror", fmt.Sprintf("%q", m.Topic), fmt.Sprintf("%q", m.TopicID), graceText(m.HasGrace, m.RestoreGrace))
	}
	for _, c := range s.mirror.history {
		d.line("mirror-event", fmt.Sprint(c.Offset), string(c.Event), fmt.Sprintf("%q", c.Topic), fmt.Sprintf("%q", c.TopicID), fmt.Sprintf("%q", c.Effect))
	}
}

// writeMirrorRepairs is the mirror's part of the digest's repairs.
func (s *State) writeMirrorRepairs(d digestWriter) {
	for _, m := range []*mirrorRecord{s.mirror.lastAttach, s.mirror.lastDetach} {
		if m != nil {
			d.line("mirror-copy", fmt.Sprintf("%q", m.key()), fmt.Sprint(m.offset))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.mirror.overwritten)) {
		d.line("mirror-overwritten", fmt.Sprintf("%q", k), fmt.Sprint(s.mirror.overwritten[k]))
	}
}
