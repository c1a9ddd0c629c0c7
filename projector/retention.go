package projector

import (
	"fmt"
	"slices"
	"time"

	"github.com/kcleanup/kcleanup/events"
)

// Policy is a retention policy as the log decided it: the latest accepted
// RETENTION_SET, and the RETENTION_CLEARED that ended it, if any.
type Policy struct {
	events.Retention
	// Offset is where its RETENTION_SET was accepted; At and Actor are that
	// record's: who set it and when.
	Offset int64
	At     time.Time
	Actor  string
	// Cleared is the RETENTION_CLEARED that ended it, nil while none has.
	Cleared *PolicyEnd
}

// PolicyEnd is the RETENTION_CLEARED that ended a policy.
type PolicyEnd struct {
	Offset int64
	At     time.Time
	Actor  string
	Reason string
}

// Name is how a plan's actor and a person name the policy: the control
// offset of its RETENTION_SET, unique on its control topic.
func (p Policy) Name() string { return fmt.Sprintf("retention@%d", p.Offset) }

// Active reports whether the policy is followed: set and not cleared.
func (p Policy) Active() bool { return p.Cleared == nil }

// Retention returns the latest policy the log holds (active or cleared),
// and whether there is one.
func (s *State) Retention() (Policy, bool) {
	if s.policy == nil {
		return Policy{}, false
	}
	p := *s.policy
	p.Watch = slices.Clone(p.Watch)
	if p.Cleared != nil {
		c := *p.Cleared
		p.Cleared = &c
	}
	return p, true
}

// ActiveRetention returns the policy the owner follows now, if any.
func (s *State) ActiveRetention() (Policy, bool) {
	p, ok := s.Retention()
	return p, ok && p.Active()
}

// foldRetention is Step for a record under a retention key
// (events.IsRetentionKey): latest wins, by offset. A record this build
// cannot read degrades the projection (unreadValue), as for pins.
func (s *State) foldRetention(r Record, env events.Envelope, err error) Verdict {
	s.next = r.Offset + 1
	v := Verdict{Offset: r.Offset, Key: string(r.Key), At: r.Timestamp}
	if err == nil {
		v.Event = env.Event
	}
	switch {
	case r.Value == nil || err != nil:
		reason, _ := s.unreadValue(r, v.Key, err)
		if r.Value == nil {
			v = reject(v, ReasonTombstone, "a tombstone (nil value) is never a valid control record")
		} else {
			v = reject(v, reason, err.Error())
		}
	case s.bound && env.Retention.Topic != s.topic:
		v.At, v.Actor = verdictAt(&env, r), env.Actor
		v = reject(v, ReasonWrongTopic, fmt.Sprintf("the policy is for topic %s but this control topic governs %s", env.Retention.Topic, s.topic))
	case env.Event == events.RetentionSet:
		v.At, v.Actor = verdictAt(&env, r), env.Actor
		p := &Policy{Retention: *env.Retention, Offset: r.Offset, At: env.At, Actor: env.Actor}
		p.Watch = slices.Clone(p.Watch)
		s.policy = p
		v.Outcome = Accepted
		v.Detail = fmt.Sprintf("retention policy %s set: watch %v every %s, min advance %d: %s", p.Name(), p.Watch, p.Every, p.MinAdvance, p.Reason)
	default:
		v.At, v.Actor = verdictAt(&env, r), env.Actor
		if s.policy == nil || s.policy.Cleared != nil {
			v.Outcome = Duplicate
			v.Detail = "no retention policy is set; no change"
			break
		}
		s.policy.Cleared = &PolicyEnd{Offset: r.Offset, At: env.At, Actor: env.Actor, Reason: env.Retention.Reason}
		v.Outcome = Accepted
		v.Detail = fmt.Sprintf("retention policy %s cleared: %s", s.policy.Name(), env.Retention.Reason)
	}
	// held: never retract (tombstone) a retention key while a policy is held,
	// or compaction could erase the accepted record under it.
	v = s.keepVerdict(r, v, s.policy != nil)
	if s.lean && v.Outcome == Accepted {
		v.Key, v.Detail = "", ""
	}
	return v
}
