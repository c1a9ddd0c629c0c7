package projector

import (
	"fmt"
	"time"

	"github.com/kcleanup/kcleanup/events"
)

// Declaration is an operator's no-tombstones declaration as the log decided
// it (issue 35 item 8): the latest accepted NO_TOMBSTONES_DECLARED, and
// what ended it, if anything. Latest wins, by offset, as compaction keeps
// only the latest record of its one key.
type Declaration struct {
	events.Declaration
	// Offset is where its NO_TOMBSTONES_DECLARED was accepted; At and Actor
	// are that record's: who declared and when.
	Offset int64
	At     time.Time
	Actor  string
	// Withdrawn is what ended it, nil while nothing has: a
	// NO_TOMBSTONES_WITHDRAWN, or any other record over its key (a null
	// value, garbage), which ends it too: withdrawing is the safe direction.
	Withdrawn *DeclarationEnd
}

// DeclarationEnd is the record that ended a declaration.
type DeclarationEnd struct {
	Offset int64
	At     time.Time
	Actor  string
	Reason string
}

// InForce reports whether the declaration holds: declared and not ended.
func (d Declaration) InForce() bool { return d.Withdrawn == nil }

// Covers reports whether the declaration, in force, covers partition part
// of topic (name and ID) from offset from on: it names the partition, and
// from is at or above its Since there.
func (d Declaration) Covers(topic, topicID string, part int32, from int64) bool {
	since, ok := d.Since[part]
	return d.InForce() && d.Topic == topic && d.TopicID == topicID && ok && from >= since
}

// Declaration returns the latest declaration the log holds (in force or
// ended), and whether there is one.
func (s *State) Declaration() (Declaration, bool) {
	if s.decl == nil {
		return Declaration{}, false
	}
	d := *s.decl
	d.Since = d.Since.Clone()
	if d.Withdrawn != nil {
		e := *d.Withdrawn
		d.Withdrawn = &e
	}
	return d, true
}

// foldDeclaration is Step for a record under the declaration key
// (events.IsDeclarationKey). A record this build cannot read degrades the
// projection (unreadValue) when it is newer, as for pins; any record over
// the key that is not a valid declaration event ends the declaration in
// force, so that the log before and after compaction (which keeps only the
// latest record of the key) decides the same.
func (s *State) foldDeclaration(r Record, env events.Envelope, err error) Verdict {
	s.next = r.Offset + 1
	v := Verdict{Offset: r.Offset, Key: string(r.Key), At: r.Timestamp}
	if err == nil {
		v.Event = env.Event
	}
	end := func(actor, why string) {
		if s.decl != nil && s.decl.Withdrawn == nil {
			s.decl.Withdrawn = &DeclarationEnd{Offset: r.Offset, At: v.At, Actor: actor, Reason: why}
		}
	}
	switch {
	case r.Value == nil || err != nil:
		reason, what := s.unreadValue(r, v.Key, err)
		if r.Value == nil {
			v = reject(v, ReasonTombstone, "a tombstone (nil value) is never a valid control record; it ends the no-tombstones declaration, if one is in force")
		} else {
			v = reject(v, reason, err.Error())
		}
		end("", "overwritten by "+what)
	case s.bound && env.Event == events.NoTombstonesDeclared && (env.Declaration.Topic != s.topic || env.Declaration.TopicID != s.topicID):
		v.At, v.Actor = verdictAt(&env, r), env.Actor
		v = reject(v, ReasonWrongTopic, fmt.Sprintf("the declaration is for topic %s (ID %s) but this control topic governs %s (ID %s)",
			env.Declaration.Topic, env.Declaration.TopicID, s.topic, s.topicID))
		end(env.Actor, "overwritten by a declaration for another topic")
	case env.Event == events.NoTombstonesDeclared:
		v.At, v.Actor = verdictAt(&env, r), env.Actor
		d := env.Declaration
		s.decl = &Declaration{Declaration: events.Declaration{Topic: d.Topic, TopicID: d.TopicID, Since: d.Since.Clone(), Reason: d.Reason},
			Offset: r.Offset, At: env.At, Actor: env.Actor}
		v.Outcome = Accepted
		v.Detail = fmt.Sprintf("declared: the job writes no tombstones to %s since %s: %s", d.Topic, d.Since.String(), d.Reason)
	default:
		v.At, v.Actor = verdictAt(&env, r), env.Actor
		if s.decl == nil || s.decl.Withdrawn != nil {
			v.Outcome = Duplicate
			v.Detail = "no no-tombstones declaration is in force; no change"
			break
		}
		end(env.Actor, env.Declaration.Reason)
		v.Outcome = Accepted
		v.Detail = fmt.Sprintf("the no-tombstones declaration of offset %d is withdrawn: %s", s.decl.Offset, env.Declaration.Reason)
	}
	v = s.keepVerdict(r, v, false)
	if s.lean && v.Outcome == Accepted {
		v.Key, v.Detail = "", ""
	}
	return v
}
