package projector

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"hash/maphash"
	"iter"
	"slices"
	"sort"
	"time"

	"github.com/kcleanup/kcleanup/events"
)

// This file holds the compact forms an operation keeps its plan's offsets
// and its history in. A projection holds every operation of a control topic
// for as long as it runs, and each operation is read by few rules; so they
// are stored for size (docs/benchmarks.md, B5), and expanded into the
// exported types (events.Offsets, Step) only when read.

// partOffset is one partition's offset.
type partOffset struct {
	p   int32
	off int64
}

// partOffsetSize is the bytes a partition takes in offs: its number (4) and
// its offset (8), little-endian.
const partOffsetSize = 12

// offs is a plan's offsets sorted by partition, 12 bytes a partition (an
// events.Offsets map takes at least 192 bytes for up to eight). It is a
// view of the start of op.data.
type offs []byte

// appendOffsets appends m's offsets, sorted by partition, to b.
func appendOffsets(b []byte, m events.Offsets) []byte {
	var small [16]int32 // a plan of up to 16 partitions sorts on the stack
	ps := small[:0]
	for p := range m {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	for _, p := range ps {
		b = binary.LittleEndian.AppendUint32(b, uint32(p))
		b = binary.LittleEndian.AppendUint64(b, uint64(m[p]))
	}
	return b
}

// compactOffsets is m's offsets in their compact form.
func compactOffsets(m events.Offsets) offs {
	return offs(appendOffsets(make([]byte, 0, partOffsetSize*len(m)), m))
}

// len is the number of partitions.
func (c offs) len() int { return len(c) / partOffsetSize }

// at is the i-th partition's offset, in partition order.
func (c offs) at(i int) partOffset {
	b := c[partOffsetSize*i : partOffsetSize*(i+1)]
	return partOffset{int32(binary.LittleEndian.Uint32(b)), int64(binary.LittleEndian.Uint64(b[4:]))}
}

// all yields every partition's offset in partition order.
func (c offs) all() iter.Seq[partOffset] {
	return func(yield func(partOffset) bool) {
		for i := range c.len() {
			if !yield(c.at(i)) {
				return
			}
		}
	}
}

// get is the offset of partition p.
func (c offs) get(p int32) (int64, bool) {
	n := c.len()
	if n <= 8 {
		for i := range n {
			if po := c.at(i); po.p == p {
				return po.off, true
			}
		}
		return 0, false
	}
	i, ok := sort.Find(n, func(i int) int { return cmp.Compare(p, c.at(i).p) })
	if !ok {
		return 0, false
	}
	return c.at(i).off, true
}

// equal reports whether m holds exactly these partitions and offsets.
func (c offs) equal(m events.Offsets) bool {
	if c.len() != len(m) {
		return false
	}
	for i := range c.len() {
		po := c.at(i)
		if off, ok := m[po.p]; !ok || off != po.off {
			return false
		}
	}
	return true
}

// offsets is the exported form (a new map).
func (c offs) offsets() events.Offsets {
	m := make(events.Offsets, c.len())
	for i := range c.len() {
		po := c.at(i)
		m[po.p] = po.off
	}
	return m
}

// step is one accepted record of an operation's history, decoded.
type step struct {
	offset int64
	sec    int64 // at, in Unix seconds and nanoseconds (in UTC, as decoded)
	nsec   int32
	ev     uint8  // eventIndex
	actor  uint32 // index in State.actorNames
}

func (st step) event() events.Event { return lifecycle[st.ev] }
func (st step) at() time.Time       { return time.Unix(st.sec, int64(st.nsec)).UTC() }

// history is an operation's accepted steps, each encoded as varints: event
// and actor, then offset, seconds and nanoseconds as differences from the
// step before. A step takes about 8 bytes (the first about 16) instead of
// the 40 of a struct; every value round-trips exactly.
type history []byte

func (h history) append(last, st step) history { return appendStep(h, last, st) }

// appendStep appends step st, encoded against last, to b.
func appendStep(b []byte, last, st step) []byte {
	b = binary.AppendUvarint(b, uint64(st.ev)|uint64(st.actor)<<2)
	b = binary.AppendVarint(b, st.offset-last.offset)
	b = binary.AppendVarint(b, st.sec-last.sec)
	return binary.AppendVarint(b, int64(st.nsec)-int64(last.nsec))
}

// all yields the steps in order, with their index.
func (h history) all() iter.Seq2[int, step] {
	return func(yield func(int, step) bool) {
		var st step
		for i, b := 0, []byte(h); len(b) > 0; i++ {
			head, n := binary.Uvarint(b)
			b = b[n:]
			dOff, n := binary.Varint(b)
			b = b[n:]
			dSec, n := binary.Varint(b)
			b = b[n:]
			dNsec, n := binary.Varint(b)
			b = b[n:]
			st = step{offset: st.offset + dOff, sec: st.sec + dSec, nsec: int32(int64(st.nsec) + dNsec),
				ev: uint8(head & 3), actor: uint32(head >> 2)}
			if !yield(i, st) {
				return
			}
		}
	}
}

// at returns step i.
func (h history) at(i int) step {
	for j, st := range h.all() {
		if j == i {
			return st
		}
	}
	return step{}
}

// last returns the last step (zero when there is none).
func (h history) last() step {
	st, _ := h.lastAndLen()
	return st
}

// lastAndLen returns the last step (zero when there is none) and the
// number of steps.
func (h history) lastAndLen() (step, int) {
	var out step
	n := 0
	for _, st := range h.all() {
		out = st
		n++
	}
	return out, n
}

// latest is, per event (eventIndex), the offset of its last step (0 when
// it has none).
func (h history) latest() [4]int64 {
	var out [4]int64
	for _, st := range h.all() {
		out[st.ev] = st.offset
	}
	return out
}

// count is the number of steps of event e.
func (h history) count(e events.Event) int {
	n := 0
	for _, st := range h.all() {
		if st.event() == e {
			n++
		}
	}
	return n
}

// planID is a plan ID as the 32 bytes of its SHA-256, where its text, 64
// hex digits, takes 80 bytes with its header: every operation keeps one,
// and the map of operations is keyed by it (docs/benchmarks.md, B5).
type planID [32]byte

// parsePlanID reads a plan ID's text: exactly 64 lowercase hex digits (as
// events checks it), else ok is false.
func parsePlanID(s string) (id planID, ok bool) {
	if len(s) != 2*len(id) {
		return id, false
	}
	for i := range id {
		hi, ok1 := fromHex(s[2*i])
		lo, ok2 := fromHex(s[2*i+1])
		if !ok1 || !ok2 {
			return planID{}, false
		}
		id[i] = hi<<4 | lo
	}
	return id, true
}

// mustPlanID is parsePlanID for a plan events has verified.
func mustPlanID(s string) planID {
	id, ok := parsePlanID(s)
	if !ok {
		panic("projector: not a verified plan ID: " + s)
	}
	return id
}

func fromHex(c byte) (byte, bool) {
	v := hexValue[c]
	return v, v < 16
}

// hexValue is the value of each lowercase hex digit, 0xff for any other byte.
var hexValue = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range []byte("0123456789abcdef") {
		t[c] = byte(i)
	}
	return t
}()

// String is the plan ID's text.
func (id planID) String() string { return hex.EncodeToString(id[:]) }

// is reports whether s is this plan ID's text.
func (id planID) is(s string) bool {
	other, ok := parsePlanID(s)
	return ok && other == id
}

// opIndex finds an operation by plan ID: an open-addressing table (linear
// probing, at most three quarters full) of indices into State.ops, whose
// operations hold the IDs. A Go map keyed by the 32-byte ID took about 60
// bytes an operation; this takes 5 to 11 (docs/benchmarks.md, B5). The hash
// is seeded, so plan IDs chosen to collide cannot be made to, and the seed
// changes where an index sits, never what is found.
type opIndex struct {
	seed  maphash.Seed
	slots []int32 // index in ops + 1; 0 is empty
	n     int
	// last is the index + 1 of the operation find found last (0: none): an
	// operation's records come close together in a log (its four records
	// in a row, usually), and checking it first spares the hash and the
	// table's cache miss.
	last int32
}

func newOpIndex() opIndex { return opIndex{seed: maphash.MakeSeed()} }

// find returns the index in ops of the operation of id.
func (x *opIndex) find(ops []*op, id planID) (int32, bool) {
	if x.last > 0 && ops[x.last-1].id == id {
		return x.last - 1, true
	}
	if len(x.slots) == 0 {
		return -1, false
	}
	mask := uint64(len(x.slots) - 1)
	for i := maphash.Comparable(x.seed, id) & mask; ; i = (i + 1) & mask {
		s := x.slots[i]
		if s == 0 {
			return -1, false
		}
		if ops[s-1].id == id {
			x.last = s
			return s - 1, true
		}
	}
}

// add indexes ops[oi], whose ID is not indexed yet.
func (x *opIndex) add(ops []*op, oi int32) {
	if (x.n+1)*4 > len(x.slots)*3 {
		old := x.slots
		x.slots = make([]int32, max(64, 2*len(old)))
		for _, s := range old {
			if s != 0 {
				x.put(ops, s)
			}
		}
	}
	x.put(ops, oi+1)
	x.n++
	x.last = oi + 1
}

func (x *opIndex) put(ops []*op, slot int32) {
	mask := uint64(len(x.slots) - 1)
	i := maphash.Comparable(x.seed, ops[slot-1].id) & mask
	for x.slots[i] != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = slot
}
