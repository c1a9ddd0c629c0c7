package projector

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kcleanup/kcleanup/events"
)

// Pin is a pinned recovery point as the log decided it (rules P1-P6 of the
// package doc).
type Pin struct {
	PinID         string
	RecoveryPoint string
	Topic         string
	TopicID       string
	Offsets       events.Offsets
	// Expires is when it stops protecting, judged by the "at" of the
	// records after it; zero: never.
	Expires time.Time
	// Offset is where its PINNED was accepted; At, Actor and Reason are
	// that record's.
	Offset int64
	At     time.Time
	Actor  string
	Reason string
	// Appended is the broker's time of its PINNED (Record.LogAppendTime);
	// zero when the record's timestamp was a writer's (CreateTime).
	Appended time.Time
	// Void holds the partitions the pin protects nothing on: the boundary
	// was already above its offset there when the PINNED was folded (a
	// commit above it landed first).
	Void map[int32]Voided
	// after is the latest offset of a copy of a COMMITTED accepted before
	// this pin: the pin's records must be re-appended after it (Repairs),
	// or the compacted log would fold that commit after the pin.
	after int64
	// Unpinned is the UNPINNED that ended it, nil while none has.
	Unpinned *PinEnd
	// Rejected lists the offsets of the COMMITTED records it rejected;
	// rejectedKeys their keys, in the same order.
	Rejected     []int64
	rejectedKeys []string
}

// Voided is why a pin protects nothing on one partition: the boundary was
// Boundary (set by plan SetBy) when the PINNED was folded.
type Voided struct {
	Boundary int64
	SetBy    string
}

// PinEnd is the UNPINNED that ended a pin.
type PinEnd struct {
	Offset int64
	At     time.Time
	Actor  string
	Reason string
}

// The states of a pin (Pin.Status).
const (
	PinActive   = "active"   // protects every partition it names
	PinPartial  = "partial"  // protects some: a commit above it landed first on the others
	PinVoid     = "void"     // protects nothing: a commit above it landed first on every partition
	PinExpired  = "expired"  // its expiry is past
	PinUnpinned = "unpinned" // an UNPINNED ended it
)

// Status says what the pin does at time t (the "at" of a record after it,
// or, for a person reading status, the time of reading).
func (p Pin) Status(t time.Time) string {
	switch {
	case p.Unpinned != nil:
		return PinUnpinned
	case !p.Expires.IsZero() && !t.Before(p.Expires):
		return PinExpired
	case len(p.Void) == len(p.Offsets):
		return PinVoid
	case len(p.Void) > 0:
		return PinPartial
	}
	return PinActive
}

// Protects reports whether the pin protects partition part at time t.
func (p Pin) Protects(part int32, t time.Time) bool {
	if _, ok := p.Offsets[part]; !ok || p.Unpinned != nil {
		return false
	}
	if !p.Expires.IsZero() && !t.Before(p.Expires) {
		return false
	}
	_, void := p.Void[part]
	return !void
}

// Above returns the lowest partition on which plan is above the pin while
// the pin protects it at time t, and whether there is one.
func (p Pin) Above(plan events.Plan, t time.Time) (int32, bool) {
	if plan.Topic != p.Topic || plan.TopicID != p.TopicID {
		return 0, false
	}
	return lowest(plan.Offsets, func(part int32) bool {
		return p.Protects(part, t) && plan.Offsets[part] > p.Offsets[part]
	})
}

// UnpinCommand is what an operator runs to end the pin.
func (p Pin) UnpinCommand(controlTopic string) string {
	return fmt.Sprintf("kcleanup unpin %s --control-topic %s --reason \"...\"", p.PinID, controlTopic)
}

// pins is the fold's state of the pin events.
type pins struct {
	list []*Pin
	byID map[string]int
	// held: the offset of the latest accepted (or duplicate) record of each
	// pin key; overwritten: a held key a tombstone or garbage overwrote
	// (Repairs re-appends it), with the overwrite's offset.
	held        map[string]int64
	overwritten map[string]int64
	// rejectedKeys: the COMMITTED keys a pin rejected. Their retraction is
	// Now: were a repair to move the pin past one of them, the compacted
	// log would accept it.
	rejectedKeys map[string]bool
	// retracted: the keys of rejectedKeys a tombstone retracted once. Such
	// a commit was rejected in a view that read the full order, so a later
	// record under its key is never a pin dispute (pinDisputes): a dispute
	// would stop every view from retracting it.
	retracted map[string]bool
	// disputed: the keys of rejectedKeys in a pin dispute (pinDisputes),
	// with the pin; it lasts while the key holds only rejected records.
	disputed map[string]string
}

// Pins returns every accepted pin in log order (copies).
func (s *State) Pins() []Pin {
	out := make([]Pin, 0, len(s.pin.list))
	for _, p := range s.pin.list {
		out = append(out, clonePin(p))
	}
	return out
}

// Pin returns the pin with this ID, if the log holds it.
func (s *State) Pin(id string) (Pin, bool) {
	i, ok := s.pin.byID[id]
	if !ok {
		return Pin{}, false
	}
	return clonePin(s.pin.list[i]), true
}

// PinAbove returns the first pin (in log order) that protects a partition
// at time t on which plan is above it: a COMMITTED of plan at t would be
// rejected (ReasonPinned). The protocol refuses such a plan before writing.
func (s *State) PinAbove(plan events.Plan, t time.Time) (Pin, int32, bool) {
	for _, p := range s.pin.list {
		if part, ok := p.Above(plan, t); ok {
			return clonePin(p), part, true
		}
	}
	return Pin{}, 0, false
}

func clonePin(p *Pin) Pin {
	c := *p
	c.Offsets = p.Offsets.Clone()
	c.Void = maps.Clone(p.Void)
	c.Rejected = slices.Clone(p.Rejected)
	if p.Unpinned != nil {
		e := *p.Unpinned
		c.Unpinned = &e
	}
	return c
}

// pinRule is rule P4: the pin a COMMITTED that raises the boundary is
// above, judged at the COMMITTED's own "at". The verdict names it.
func (s *State) pinRule(v Verdict, env events.Envelope) (Verdict, bool) {
	for _, p := range s.pin.list {
		part, above := p.Above(env.Plan, env.At)
		if !above {
			continue
		}
		key := events.Key(env.PlanID, events.Committed) // v.Key is set later (the fold builds it only when it must)
		p.Rejected = append(p.Rejected, v.Offset)
		p.rejectedKeys = append(p.rejectedKeys, key)
		s.pin.rejectedKeys[key] = true
		expiry := "no expiry"
		if !p.Expires.IsZero() {
			expiry = "expires " + p.Expires.Format(time.RFC3339)
		}
		return reject(v, ReasonPinned, fmt.Sprintf(
			"partition %d: plan offset %d is above pin %s (recovery point %s, offset %d, pinned at offset %d by %s: %s; %s); nothing above an active pin is committed: unpin it (kcleanup unpin %s) or wait for its expiry",
			part, env.Plan.Offsets[part], p.PinID, p.RecoveryPoint, p.Offsets[part], p.Offset, p.Actor, p.Reason, expiry, p.PinID)), true
	}
	return v, false
}

// foldPin is Step for a record under a pin key (events.IsPinKey).
func (s *State) foldPin(r Record, env events.Envelope, err error) Verdict {
	s.next = r.Offset + 1
	v := Verdict{Offset: r.Offset, Key: string(r.Key), At: r.Timestamp}
	_, v.Event, _ = events.ParsePinKey(r.Key)
	key := string(r.Key)
	_, heldKey := s.pin.held[key]
	switch {
	case r.Value == nil || err != nil:
		reason, what := s.unreadValue(r, v.Key, err)
		switch {
		case heldKey:
			if _, ok := s.pin.overwritten[key]; !ok {
				s.pin.overwritten[key] = r.Offset
			}
			if reason == ReasonNewerSchema || reason == ReasonUnknownEvent {
				v = reject(v, reason, fmt.Sprintf("%v; it also overwrites the pin event accepted under this key", err))
			} else {
				v = reject(v, ReasonOverwritesAccepted, fmt.Sprintf(
					"OVERWRITE: key %s holds the pin event accepted at offset %d, and this record is %s; compaction would erase it, so it must be re-appended (Repairs)",
					key, s.pin.held[key], what))
			}
		case r.Value == nil:
			v = reject(v, ReasonTombstone, "a tombstone (nil value) is never a valid control record")
		default:
			v = reject(v, reason, err.Error())
		}
	default:
		v.At, v.Actor = verdictAt(&env, r), env.Actor
		v = s.applyPin(v, r.Offset, env)
		if v.Outcome != Rejected {
			s.pin.held[key] = r.Offset
			delete(s.pin.overwritten, key)
		}
	}
	_, held := s.pin.held[key]
	v = s.keepVerdict(r, v, held)
	if m := v.Maintenance; m != nil && m.Kind == MaintenanceRepair && v.Event == events.Pinned && v.Outcome == Duplicate {
		if id, _, err := events.ParsePinKey(r.Key); err == nil {
			if i, ok := s.pin.byID[id]; ok {
				if read, ok := readHeader(r); ok {
					s.pinRepaired(s.pin.list[i], read)
				}
			}
		}
	}
	if s.lean && v.Outcome == Accepted {
		v.Key, v.Detail = "", "" // as for every accepted record in StepDecodedLean
	}
	return v
}

// applyPin folds a decoded pin event (rules P2, P3, P5).
func (s *State) applyPin(v Verdict, offset int64, env events.Envelope) Verdict {
	b := env.Pin
	i, known := s.pin.byID[b.PinID]
	if env.Event == events.Unpinned {
		if !known {
			return reject(v, ReasonUnknownPin, fmt.Sprintf("UNPINNED names pin %s, which this control topic does not hold: nothing to unpin", b.PinID))
		}
		p := s.pin.list[i]
		if p.Unpinned != nil {
			v.Outcome = Duplicate
			v.Detail = fmt.Sprintf("pin %s was unpinned at offset %d; no change", p.PinID, p.Unpinned.Offset)
			return v
		}
		p.Unpinned = &PinEnd{Offset: offset, At: env.At, Actor: env.Actor, Reason: b.Reason}
		v.Outcome = Accepted
		v.Detail = fmt.Sprintf("unpinned %s (recovery point %s): %s", p.PinID, p.RecoveryPoint, b.Reason)
		return v
	}
	if known {
		// Same key, and the pin ID is the hash of the content: the same pin.
		v.Outcome = Duplicate
		v.Detail = fmt.Sprintf("same pin as the PINNED accepted at offset %d; no change", s.pin.list[i].Offset)
		return v
	}
	if s.bound && (b.Topic != s.topic || b.TopicID != s.topicID) {
		return reject(v, ReasonWrongTopic, fmt.Sprintf(
			"the pin is for topic %s (ID %s) but this control topic governs %s (ID %s)", b.Topic, b.TopicID, s.topic, s.topicID))
	}
	p := &Pin{PinID: b.PinID, RecoveryPoint: b.RecoveryPoint, Topic: b.Topic, TopicID: b.TopicID, Offsets: b.Offsets.Clone(),
		Expires: b.Expires, Offset: offset, At: env.At, Actor: env.Actor, Reason: b.Reason, Appended: s.clock.appended}
	// P5: what a commit above it condemned before it landed stays condemned.
	var void []string
	for _, part := range p.Offsets.Partitions() {
		if cur, ok := s.boundary[part]; ok && cur > p.Offsets[part] {
			if p.Void == nil {
				p.Void = map[int32]Voided{}
			}
			setBy := ""
			if by, ok := s.setBy[part]; ok {
				setBy = s.ops[by].id.String()
			}
			p.Void[part] = Voided{Boundary: cur, SetBy: setBy}
			void = append(void, fmt.Sprintf("partition %d (boundary %d, set by plan %s)", part, cur, setBy))
		}
	}
	s.pin.byID[p.PinID] = len(s.pin.list)
	s.pin.list = append(s.pin.list, p)
	v.Outcome = Accepted
	v.Detail = fmt.Sprintf("pinned %s from %s: offsets %s", p.PinID, p.RecoveryPoint, p.Offsets.String())
	switch {
	case len(void) == len(p.Offsets):
		v.Detail += "; VOID: a commit above it landed first on every partition: " + strings.Join(void, ", ")
	case len(void) > 0:
		v.Detail += "; PARTIAL: a commit above it landed first on " + strings.Join(void, ", ")
	}
	return v
}

// pinReorderFrom is the acceptance offset from which commits and pin
// events must be re-appended (-1: none): the earliest pin whose key was
// overwritten, whose PINNED a later copy of an earlier COMMITTED moved past,
// or whose UNPINNED has a later copy past a commit accepted after it.
func (s *State) pinReorderFrom() int64 {
	from := int64(-1)
	earlier := func(o int64) {
		if from < 0 || o < from {
			from = o
		}
	}
	for _, p := range s.pin.list {
		_, pinned := s.pin.overwritten[events.PinKey(p.PinID, events.Pinned)]
		_, unpinned := s.pin.overwritten[events.PinKey(p.PinID, events.Unpinned)]
		switch {
		case pinned || unpinned || s.pinMoved(p):
			earlier(p.Offset)
		case p.Unpinned != nil && s.unpinMoved(p):
			earlier(p.Unpinned.Offset)
		}
	}
	return from
}

// unpinMoved reports whether the latest copy of p's UNPINNED is after the
// latest copy of a COMMITTED accepted after the UNPINNED: compacted, that
// commit would be folded while the pin still protects.
func (s *State) unpinMoved(p *Pin) bool {
	copyAt := s.pin.held[events.PinKey(p.PinID, events.Unpinned)]
	if copyAt == p.Unpinned.Offset {
		return false
	}
	for i := len(s.commits) - 1; i >= 0; i-- {
		o := s.ops[s.commits[i]]
		if o.acceptedOffset(events.Committed) < p.Unpinned.Offset {
			break
		}
		if o.latest()[eventIndex(events.Committed)] < copyAt {
			return true
		}
	}
	return false
}

// firstPinEventAfter is the acceptance offset of the first PINNED or
// UNPINNED accepted after offset.
func (s *State) firstPinEventAfter(offset int64) (int64, bool) {
	first, found := int64(0), false
	for _, p := range s.pin.list {
		for _, o := range []int64{p.Offset, unpinOffset(p)} {
			if o > offset && (!found || o < first) {
				first, found = o, true
			}
		}
	}
	return first, found
}

func unpinOffset(p *Pin) int64 {
	if p.Unpinned == nil {
		return -1
	}
	return p.Unpinned.Offset
}

// pinRepairs re-encodes the pin events accepted at or after from (-1:
// none), with their acceptance offsets, for Repairs to merge with the
// commits in acceptance order.
func (s *State) pinRepairs(from int64) []Record {
	if from < 0 {
		return nil
	}
	var out []Record
	for _, p := range s.pin.list {
		if p.Offset >= from {
			env := events.Envelope{SchemaVersion: events.PinSchemaVersion, Event: events.Pinned, At: p.At, Actor: p.Actor,
				Pin: &events.Pin{PinID: p.PinID, RecoveryPoint: p.RecoveryPoint, Topic: p.Topic, TopicID: p.TopicID, Offsets: p.Offsets, Expires: p.Expires, Reason: p.Reason}}
			key, value := env.Encode()
			out = append(out, Record{Offset: p.Offset, Key: key, Value: value, Timestamp: p.At})
		}
		if e := p.Unpinned; e != nil && e.Offset >= from {
			key, value := events.NewUnpin(p.PinID, e.Reason, e.At, e.Actor).Encode()
			out = append(out, Record{Offset: e.Offset, Key: key, Value: value, Timestamp: e.At})
		}
	}
	return out
}

// A pin dispute (docs/design.md §12, "The pin's repair window, and the pin
// dispute"): a COMMITTED this view rejected for a pin, still unretracted,
// that another worker's view accepted: that worker re-appended it (a
// repair of the COMMITTED itself: workers repair only what they accepted),
// or had read it (header kcleanup-read) before it re-appended that pin's
// PINNED (header kcleanup-maintenance: repair). Workers retract the commits a pin rejected
// before they re-append the pin (Retraction.Now comes first), so that
// worker did not reject this commit: in the full log the commit came first,
// voided the pin, and a later copy of it moved past the pin, which Repairs
// then re-appended after the copy; the log cleaner has removed the
// commit's first record but not yet the pin's. This view cannot tell the
// full log's order: it is at risk (its boundary may be below the one
// committed), it never retracts the commit (that would erase a commit the
// full log accepted), and a worker reads the log afresh once the cleaner
// has removed the pin's first record.
type pinDispute struct {
	key    string // the COMMITTED's
	pinID  string
	offset int64 // of the rejected COMMITTED
}

// pinRepaired notes a worker's repair of p's PINNED, written by a view
// that had folded the log below offset read: every commit p rejected that
// this writer had read (its record below read), whose key still holds only
// rejected records and that no tombstone retracted yet, is disputed from
// now on (a later copy of it is a copy of the commit the full log may have
// accepted). A commit the writer had not read yet proves nothing: it may
// have landed between that writer's read and its repair.
func (s *State) pinRepaired(p *Pin, read int64) {
	for _, k := range p.rejectedKeys {
		if r, ok := s.rejectedOnly[k]; ok && r.offset < read {
			s.pinDispute(k, p.PinID)
		}
	}
}

// pinDispute puts the rejected COMMITTED key in a pin dispute with the pin
// pinID, unless a tombstone already retracted it.
func (s *State) pinDispute(key, pinID string) {
	if s.pin.retracted[key] {
		return
	}
	if s.pin.disputed == nil {
		s.pin.disputed = map[string]string{}
	}
	if _, ok := s.pin.disputed[key]; !ok {
		s.pin.disputed[key] = pinID
	}
}

// pinRepairRejected notes that this view rejected for a pin the COMMITTED
// under key at offset, a worker's repair: workers re-append only what their
// view accepted, so another view had this commit before the pin. Unless a
// tombstone already retracted the key, it is a pin dispute.
func (s *State) pinRepairRejected(key string, offset int64) {
	for _, p := range s.pin.list {
		if n := len(p.Rejected); n > 0 && p.Rejected[n-1] == offset {
			s.pinDispute(key, p.PinID)
			return
		}
	}
}

// isRepair reports whether a record carries a worker's repair header
// (HeaderMaintenance MaintenanceRepair).
func isRepair(r Record) bool {
	for _, h := range r.Headers {
		if h.Key == HeaderMaintenance {
			return string(h.Value) == MaintenanceRepair
		}
	}
	return false
}

// readHeader is the record's HeaderRead, if it has a valid one. A repair
// without it (an older kcleanup's) disputes nothing, as before.
func readHeader(r Record) (int64, bool) {
	for _, h := range r.Headers {
		if h.Key == HeaderRead {
			n, err := strconv.ParseInt(string(h.Value), 10, 64)
			return n, err == nil && n >= 0
		}
	}
	return 0, false
}

// pinDisputes returns the pin disputes of this view, by key.
func (s *State) pinDisputes() []pinDispute {
	var out []pinDispute
	for _, k := range slices.Sorted(maps.Keys(s.pin.disputed)) {
		if r, ok := s.rejectedOnly[k]; ok {
			out = append(out, pinDispute{key: k, pinID: s.pin.disputed[k], offset: r.offset})
		}
	}
	return out
}

// pinDisputed reports whether the rejected COMMITTED under key is in a pin
// dispute: retracting it could erase a commit the full log accepted.
func (s *State) pinDisputed(key string) bool {
	if _, ok := s.pin.disputed[key]; !ok {
		return false
	}
	_, ok := s.rejectedOnly[key]
	return ok
}

// pinAtRisk is the pins' part of AtRisk: an accepted pin event overwritten
// and not repaired.
func (s *State) pinAtRisk() []string {
	var risks []string
	for _, d := range s.pinDisputes() {
		risks = append(risks, fmt.Sprintf(
			"key %s holds a COMMITTED (offset %d) rejected for pin %s that another worker's view accepted (it re-appended the commit, or re-appended the pin after reading the commit without retracting it): in the full log this commit may have come first and the log cleaner removed its first record but not yet the pin's; this reader cannot tell the boundary, retracts nothing and deletes nothing (read the control topic afresh, e.g. restart the worker, once the cleaner has caught up)",
			d.key, d.offset, d.pinID))
	}
	for _, k := range slices.Sorted(maps.Keys(s.pin.overwritten)) {
		risks = append(risks, fmt.Sprintf(
			"key %s holds a pin event accepted at offset %d, overwritten at offset %d and not repaired yet: if the log cleaner runs first, the pins read from this control topic change (a running worker re-appends it)",
			k, s.pin.held[k], s.pin.overwritten[k]))
	}
	return risks
}

// writePinCore is the pins' part of the digest's core.
func (s *State) writePinCore(d digestWriter) {
	for _, p := range s.pin.list {
		d.line("pin", p.PinID, fmt.Sprint(p.Offset), fmt.Sprintf("%q", p.RecoveryPoint), fmt.Sprintf("%q", p.Topic), fmt.Sprintf("%q", p.TopicID),
			formatOffsets(p.Offsets), formatTime(p.Expires), formatTime(p.At), fmt.Sprintf("%q", p.Actor))
		for _, part := range slices.Sorted(maps.Keys(p.Void)) {
			d.line("pin-void", fmt.Sprint(part), fmt.Sprint(p.Void[part].Boundary), p.Void[part].SetBy)
		}
		if e := p.Unpinned; e != nil {
			d.line("unpinned", fmt.Sprint(e.Offset), formatTime(e.At), fmt.Sprintf("%q", e.Actor))
		}
	}
}

// writePinRepairs is the pins' part of the digest outside the core: which
// commits each pin rejected (a rejection changes no core) and the pin keys
// awaiting repair.
func (s *State) writePinRepairs(d digestWriter) {
	for _, p := range s.pin.list {
		d.line("pin-rejected", p.PinID, fmt.Sprint(p.Rejected))
		d.line("pin-copies", p.PinID, fmt.Sprint(s.pin.held[events.PinKey(p.PinID, events.Pinned)]),
			fmt.Sprint(s.pin.held[events.PinKey(p.PinID, events.Unpinned)]), fmt.Sprint(p.after))
	}
	for _, k := range slices.Sorted(maps.Keys(s.pin.overwritten)) {
		d.line("pin-overwritten", fmt.Sprintf("%q", k), fmt.Sprint(s.pin.overwritten[k]))
	}
}

// commitCopied notes a later copy, at offset, of the accepted COMMITTED of
// plan planID: every pin accepted after that COMMITTED must follow the copy
// again, since compaction keeps only the latest copy (pinRepairs).
//
// A copy whose "at" is not the accepted record's (another writer's retry of
// the same plan, made while a pin protected) would be judged by that time
// in a compacted log, which keeps only the latest copy: the accepted
// record is re-appended after it, and the commits after it in their order
// (as for a moved commit, State.reorderFrom).
func (s *State) commitCopied(planID string, offset int64, at time.Time) {
	oi, ok := s.lookup(planID)
	if !ok {
		return
	}
	o := s.ops[oi]
	if st, ok := o.firstStep(events.Committed); ok && !st.at().Equal(at) {
		if _, _, above := s.PinAbove(s.plan(o), at); above {
			s.reorderFrom = min(s.reorderFrom, int(o.seq))
		}
	}
	accepted := o.acceptedOffset(events.Committed)
	for _, p := range s.pin.list {
		if p.Offset > accepted && offset > p.after {
			p.after = offset
		}
	}
}

// pinMoved reports whether the latest copies of p's records are out of
// the order the full log decided: a commit accepted before the pin has a
// copy after the PINNED, or the UNPINNED is before the PINNED's latest copy.
func (s *State) pinMoved(p *Pin) bool {
	pinned := s.pin.held[events.PinKey(p.PinID, events.Pinned)]
	if p.after > pinned {
		return true
	}
	return p.Unpinned != nil && s.pin.held[events.PinKey(p.PinID, events.Unpinned)] < pinned
}
