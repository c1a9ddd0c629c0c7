package events

import "bytes"

// AddMarkers adds every marker of a markers document (what ParseMarkers
// reads: one marker object or a non-empty array of them) to the plan, in
// order, and returns how many markers it read. An error of the document is
// returned worded as ReadMarkers words it. An error of the plan (Add's) is
// kept and returned by Plan, after the rest of the document has been read,
// so that a document that does not parse is reported first. After an error
// of the document the builder must not be used.
//
// It gives what ReadMarkers and Add give, faster: a document in the form
// Encode writes (see addCanonical) is read once, each marker's offsets
// straight into the running minimum, with no map per marker. Any other
// document, valid or not, is read from its first unusual marker on by
// ReadMarkers and Add, which decide and word every error
// (FuzzAddMarkers holds the two paths to the same plan or error).
func (b *PlanBuilder) AddMarkers(data []byte) (int, error) {
	done, whole := b.addCanonical(data)
	if whole {
		return done, nil
	}
	// The strict path from marker done on; the markers before it are added.
	n := 0
	err := ReadMarkersReusing(bytes.NewReader(data), func(i int, m Marker) (bool, error) {
		n = i + 1
		if i < done {
			return false, nil
		}
		first := b.n == 0 // the builder keeps marker 0, and so its map
		b.Add(m)          // a plan error is kept for Plan
		return first, nil
	})
	if err != nil {
		return n, err
	}
	return n, nil
}

// addCanonical is AddMarkers' fast path. It reads the document only in the
// form Encode writes each marker (fixed field order, no whitespace, no
// escapes, partitions in ascending order), markers alone or in an array
// with whitespace between them, after an optional UTF-8 byte order mark. It
// adds each marker it reads in that form, and returns how many it added and
// whether that was the whole document. It stops at the first byte out of
// that form, and also at a marker that would make a plan error (the strict
// path words that one): it never rejects.
//
// A marker after the first is read straight into the running minimum, and
// only when the first marker's partitions are 0..n-1 (the usual case) and
// this one names them in that order. A marker it stops in may have lowered
// some minimums already: the strict path then adds the same marker again,
// which lowers them to the same values (a minimum does not change when a
// value is taken twice), or the document or the plan fails.
func (b *PlanBuilder) addCanonical(data []byte) (int, bool) {
	if b.err != nil {
		return 0, false
	}
	r := canonicalReader{b: data}
	if bytes.HasPrefix(data, utf8BOM) {
		r.i = len(utf8BOM)
	}
	r.space()
	if r.i < len(r.b) && r.b[r.i] == '{' {
		if !b.addCanonicalMarker(&r) {
			return 0, false
		}
		r.space()
		return 1, r.i == len(r.b)
	}
	if !r.lit("[") {
		return 0, false
	}
	for n := 0; ; n++ {
		r.space()
		if !b.addCanonicalMarker(&r) {
			return n, false
		}
		r.space()
		if r.lit(",") {
			continue
		}
		if !r.lit("]") {
			return n + 1, false
		}
		r.space()
		return n + 1, r.i == len(r.b)
	}
}

// addCanonicalMarker reads one marker in Encode's form (with its Source or
// without) and adds it; false, with the builder's count and subtasks
// unchanged, at anything else.
func (b *PlanBuilder) addCanonicalMarker(r *canonicalReader) bool {
	if !r.lit(`{"schemaVersion":1,"topic":`) {
		return false
	}
	topic, ok := r.str()
	if !ok || !r.lit(`,"topicId":`) {
		return false
	}
	topicID, ok := r.str()
	if !ok || !r.lit(`,"offsets":`) {
		return false
	}
	if b.n == 0 {
		o, ok := r.offsets()
		if !ok {
			return false
		}
		src, ok := r.source()
		if !ok || !r.lit("}") {
			return false
		}
		m := Marker{Topic: string(topic), TopicID: string(topicID), Offsets: o, Source: src}
		if m.check() != nil {
			return false
		}
		return b.Add(m) == nil
	}
	if !b.dense || string(topic) != b.first.Topic || string(topicID) != b.first.TopicID {
		return false
	}
	if !r.denseOffsets(b.mins.slice) {
		return false
	}
	src, ok := r.source()
	if !ok || !r.lit("}") {
		return false
	}
	// An error leaves the subtasks as they were: the strict path adds this marker again.
	if b.subtasks.add(b.n, src) != nil {
		return false
	}
	b.n++
	return true
}

// source reads what Encode writes of a marker's Source after its offsets
// (,"checkpointId":42,"operator":{"uid":…,"uidHash":…},"parallelism":2,"subtask":0):
// nil and true when the marker has none; false at anything out of that form
// or out of range, which the strict path words.
func (r *canonicalReader) source() (*MarkerSource, bool) {
	if !r.lit(`,"checkpointId":`) {
		return nil, true
	}
	var s MarkerSource
	id, ok := r.count()
	if !ok || !r.lit(`,"operator":{`) {
		return nil, false
	}
	s.CheckpointID = id
	if r.lit(`"uid":`) {
		uid, ok := r.str()
		if !ok || len(uid) == 0 { // Encode leaves an empty uid out
			return nil, false
		}
		s.OperatorUID = string(uid)
		if r.lit(`,"uidHash":`) {
			if s.OperatorUIDHash, ok = r.uidHash(); !ok {
				return nil, false
			}
		}
	} else if r.lit(`"uidHash":`) {
		if s.OperatorUIDHash, ok = r.uidHash(); !ok {
			return nil, false
		}
	}
	if !r.lit(`},"parallelism":`) {
		return nil, false
	}
	p, ok := r.count()
	if !ok || p > MaxParallelism || !r.lit(`,"subtask":`) {
		return nil, false
	}
	st, ok := r.count()
	if !ok || st > MaxParallelism {
		return nil, false
	}
	s.Parallelism, s.Subtask = int32(p), int32(st)
	if s.check() != nil {
		return nil, false
	}
	return &s, true
}

func (r *canonicalReader) uidHash() (string, bool) {
	h, ok := r.str()
	if !ok || !isUIDHash(string(h)) {
		return "", false
	}
	return string(h), true
}

// count reads an integer of 0 or more in canonical form.
func (r *canonicalReader) count() (int64, bool) {
	j := r.i
	for j < len(r.b) && r.b[j] >= '0' && r.b[j] <= '9' {
		j++
	}
	v, ok := parseCount(r.b[r.i:j])
	if ok {
		r.i = j
	}
	return v, ok
}

// denseOffsets reads {"0":100,"1":150,...}, exactly the partitions 0 to
// len(mins)-1 in order with canonical offsets, lowering mins as it goes.
func (r *canonicalReader) denseOffsets(mins []int64) bool {
	if !r.lit("{") {
		return false
	}
	b, i := r.b, r.i
	for p := range mins {
		if p > 0 {
			if i >= len(b) || b[i] != ',' {
				return false
			}
			i++
		}
		if i >= len(b) || b[i] != '"' {
			return false
		}
		j := i + 1
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		got, ok := parsePartition(b[i+1 : j])
		if !ok || int(got) != p || j+1 >= len(b) || b[j] != '"' || b[j+1] != ':' {
			return false
		}
		k := j + 2
		for k < len(b) && b[k] >= '0' && b[k] <= '9' {
			k++
		}
		off, ok := parseCount(b[j+2 : k])
		if !ok {
			return false
		}
		if off < mins[p] {
			mins[p] = off
		}
		i = k
	}
	if i >= len(b) || b[i] != '}' {
		return false
	}
	r.i = i + 1
	return true
}

// space skips JSON whitespace.
func (r *canonicalReader) space() {
	r.i = skipSpace(r.b, r.i)
}
