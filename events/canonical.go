package events

import (
	"bytes"
	"time"
	"unicode/utf8"
)

// canonical is the fast path of Decode: it accepts a plan event's record
// only in exactly the form Encode writes it (fixed field order, no
// whitespace, no escapes, a time in UTC), and returns ok false for anything
// else, valid or not. It never rejects: decode then takes the strict path,
// which decides and words every error. So the fast path changes what a
// record costs, never what it means (FuzzCanonical holds it to that).
//
// A repeat of a plan the Decoder has verified (the COMMITTED, DELETING and
// APPLIED of a PLANNED) is compared by bytes at its known place; a new plan
// is read in one pass and checked by Plan.check, the rules of ParsePlan.
// Mirror events and events this build does not know take the strict path.
func canonical(d *Decoder, key, value []byte) (Envelope, bool) {
	// The key: <64 lowercase hex digits>/<a known plan event>.
	if len(key) < 66 || key[64] != '/' {
		return Envelope{}, false
	}
	id := key[:64]
	// The plan verified last is this record's, usually (an operation's
	// records come in a row): its ID, equal, is 64 lowercase hex digits.
	c, known := d.lastVerified(id)
	if !known {
		if !isPlanID(id) {
			return Envelope{}, false
		}
		c, known = d.verified(id)
	}
	ev, ok := knownEvent(key[65:])
	if !ok {
		return Envelope{}, false
	}
	r := canonicalReader{b: value}
	if !r.lit(`{"schemaVersion":1,"event":"`) || !r.lit(string(ev)) || !r.lit(`","planId":"`) || !r.litBytes(id) || !r.lit(`","plan":`) {
		return Envelope{}, false
	}
	var p Plan
	var planOffsets []byte // the plan's offsets object, as this record has it
	if known && bytes.HasPrefix(r.b[r.i:], c.raw) {
		// The plan object ends at its closing brace, so equal bytes here
		// are the whole plan: verified before, under this plan ID.
		if c.offsets >= 0 {
			planOffsets = r.b[r.i+c.offsets : r.i+len(c.raw)-1]
		}
		r.i += len(c.raw)
		p = c.plan
	} else {
		start := r.i
		var offsetsAt int
		if p, offsetsAt, ok = r.plan(d, id); !ok || p.check() != nil {
			return Envelope{}, false
		}
		if d != nil { // Decode without a Decoder shares no map
			planOffsets = value[offsetsAt : r.i-1]
		}
		d.remember(value[start:r.i], offsetsAt-start, p)
	}
	if !r.lit(`,"at":"`) {
		return Envelope{}, false
	}
	at, ok := r.time()
	if !ok || !r.lit(`","actor":`) {
		return Envelope{}, false
	}
	actor, ok := r.actor(d)
	if !ok {
		return Envelope{}, false
	}
	env := Envelope{SchemaVersion: SchemaVersion, Event: ev, PlanID: p.PlanID, Plan: p, At: at, Actor: actor}
	switch ev {
	case Committed:
		if !r.lit(`,"boundary":`) {
			return Envelope{}, false
		}
		env.Boundary, ok = r.offsetsLike(planOffsets, p.Offsets)
	case Applied:
		if !r.lit(`,"logStart":`) {
			return Envelope{}, false
		}
		env.LogStart, ok = r.offsetsLike(planOffsets, p.Offsets)
	}
	if !ok || !r.lit(`}`) || r.i != len(r.b) {
		return Envelope{}, false
	}
	return env, true
}

// knownEvent is the Event constant a key names, without allocating.
func knownEvent(b []byte) (Event, bool) {
	for _, e := range lifecycle {
		if string(b) == string(e) {
			return e, true
		}
	}
	return "", false
}

// verified is the plan the Decoder remembers under id (none without a Decoder).
func (d *Decoder) verified(id []byte) (verifiedPlan, bool) {
	if d == nil {
		return verifiedPlan{}, false
	}
	c, ok := d.plans[string(id)]
	if ok {
		d.last = c
	}
	return c, ok
}

// lastVerified is the plan the Decoder verified or found last, when its ID
// is id.
func (d *Decoder) lastVerified(id []byte) (verifiedPlan, bool) {
	if d == nil || d.last.plan.PlanID != string(id) {
		return verifiedPlan{}, false
	}
	return d.last, true
}

// canonicalReader walks one record in Encode's form; every method returns
// false, never an error, at the first byte out of that form.
type canonicalReader struct {
	b []byte
	i int
}

func (r *canonicalReader) lit(s string) bool {
	if len(r.b)-r.i < len(s) || string(r.b[r.i:r.i+len(s)]) != s {
		return false
	}
	r.i += len(s)
	return true
}

func (r *canonicalReader) litBytes(s []byte) bool {
	if !bytes.HasPrefix(r.b[r.i:], s) {
		return false
	}
	r.i += len(s)
	return true
}

// str reads a JSON string without escapes or control characters and
// returns what is between its quotes, valid UTF-8. Encode escapes only
// quotes, backslashes, control characters and U+2028/U+2029: a string
// with any of them takes the strict path.
func (r *canonicalReader) str() ([]byte, bool) {
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return nil, false
	}
	start := r.i + 1
	for j := start; j < len(r.b); j++ {
		switch c := r.b[j]; {
		case c == '"':
			s := r.b[start:j]
			if !utf8.Valid(s) {
				return nil, false
			}
			r.i = j + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// plan reads the plan object in Encode's form, its planId id, and returns
// where its offsets object starts; the caller checks it (Plan.check).
func (r *canonicalReader) plan(d *Decoder, id []byte) (Plan, int, bool) {
	if !r.lit(`{"schemaVersion":1,"planId":"`) || !r.litBytes(id) || !r.lit(`","sourceRecoveryPoint":`) {
		return Plan{}, 0, false
	}
	rp, ok := r.str()
	if !ok || !r.lit(`,"topic":`) {
		return Plan{}, 0, false
	}
	topic, ok := r.str()
	if !ok || !r.lit(`,"topicId":`) {
		return Plan{}, 0, false
	}
	topicID, ok := r.str()
	if !ok || !r.lit(`,"offsets":`) {
		return Plan{}, 0, false
	}
	offsetsAt := r.i
	o, ok := r.offsets()
	if !ok || !r.lit(`}`) {
		return Plan{}, 0, false
	}
	p := Plan{PlanID: string(id), SourceRecoveryPoint: string(rp), Offsets: o}
	p.Topic, p.TopicID = d.same(topic, topicID)
	return p, offsetsAt, true
}

// same returns the topic and topic ID as strings, the ones of the last
// plan when equal: a control topic's plans are all for one data topic.
func (d *Decoder) same(topic, topicID []byte) (string, string) {
	if d == nil {
		return string(topic), string(topicID)
	}
	if string(topic) != d.topic {
		d.topic = string(topic)
	}
	if string(topicID) != d.topicID {
		d.topicID = string(topicID)
	}
	return d.topic, d.topicID
}

// offsetsLike reads an offsets object, sharing the plan's map when its bytes
// are the plan's offsets object (planOffsets): a COMMITTED's boundary and
// an APPLIED's log start usually are.
func (r *canonicalReader) offsetsLike(planOffsets []byte, plan Offsets) (Offsets, bool) {
	// An offsets object ends at its first closing brace: equal bytes up to
	// it are equal objects.
	if len(planOffsets) > 0 && bytes.HasPrefix(r.b[r.i:], planOffsets) {
		r.i += len(planOffsets)
		return plan, true
	}
	return r.offsets()
}

// offsets reads {"0":100,"1":150}: at least one partition, canonical keys
// and offsets (parsePartition, parseCount), none twice.
func (r *canonicalReader) offsets() (Offsets, bool) {
	end := bytes.IndexByte(r.b[r.i:], '}')
	if end < 0 || r.b[r.i] != '{' {
		return nil, false
	}
	n := bytes.Count(r.b[r.i:r.i+end], []byte{':'})
	if n == 0 {
		return nil, false
	}
	o := make(Offsets, n)
	i := r.i + 1
	for {
		if r.b[i] != '"' {
			return nil, false
		}
		j := i + 1
		for r.b[j] >= '0' && r.b[j] <= '9' {
			j++
		}
		p, ok := parsePartition(r.b[i+1 : j])
		if !ok || r.b[j] != '"' || r.b[j+1] != ':' {
			return nil, false
		}
		k := j + 2
		for r.b[k] >= '0' && r.b[k] <= '9' {
			k++
		}
		off, ok := parseCount(r.b[j+2 : k])
		if !ok {
			return nil, false
		}
		if _, dup := o[p]; dup {
			return nil, false
		}
		o[p] = off
		switch r.b[k] {
		case ',':
			i = k + 1
		case '}':
			r.i = k + 1
			return o, true
		default:
			return nil, false
		}
	}
}

// time reads the at field's text as Encode writes it, in UTC:
// 2006-01-02T15:04:05[.999999999]Z, with the ranges time.Parse checks.
// What it returns is what the strict path's time.Parse(...).UTC() returns.
func (r *canonicalReader) time() (time.Time, bool) {
	end := bytes.IndexByte(r.b[r.i:], '"')
	if end < 0 {
		return time.Time{}, false
	}
	s := r.b[r.i : r.i+end]
	if !rfc3339Shape(s) || s[len(s)-1] != 'Z' {
		return time.Time{}, false
	}
	num := func(s []byte) int {
		n := 0
		for _, c := range s {
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := num(s[0:4]), num(s[5:7]), num(s[8:10])
	hour, minute, sec := num(s[11:13]), num(s[14:16]), num(s[17:19])
	if month < 1 || month > 12 || day < 1 || day > daysIn(time.Month(month), year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if frac := s[19 : len(s)-1]; len(frac) > 0 { // ".999": rfc3339Shape allows 1 to 9 digits
		nsec = num(frac[1:])
		for range 10 - len(frac) {
			nsec *= 10
		}
	}
	r.i += end
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

func daysIn(m time.Month, year int) int {
	if m == time.February {
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	}
	return 31 - int(m-1)%7%2
}

// actor reads the actor string. The Decoder keeps the last actor it
// accepted: a worker writes many records, and the same text is then
// neither checked nor copied again.
func (r *canonicalReader) actor(d *Decoder) (string, bool) {
	b, ok := r.str()
	if !ok {
		return "", false
	}
	if d != nil && d.actor != "" && string(b) == d.actor {
		return d.actor, true
	}
	s := string(b)
	if checkActor("", s) != nil {
		return "", false
	}
	if d != nil {
		d.actor = s
	}
	return s, true
}
