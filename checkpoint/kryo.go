package checkpoint

import (
	"fmt"

	"github.com/kcleanup/kcleanup/events"
)

// Line is the Flink line that wrote a checkpoint, inferred from its metadata
// version. It decides the Kryo that wrote `TypeInformation.of(Object.class)`
// elements: nothing in the element bytes says which.
type Line int

const (
	// Flink1 is Flink 1.x (metadata version 3 or 4; 1.16 to 1.20 write 4): Kryo 2.24.
	Flink1 Line = 1
	// Flink2 is Flink 2.x (metadata version 5 and later): Kryo 5.
	Flink2 Line = 2
)

func (l Line) String() string {
	switch l {
	case Flink1:
		return "Flink 1.x (Kryo 2)"
	case Flink2:
		return "Flink 2.x (Kryo 5)"
	}
	return fmt.Sprintf("Line(%d)", int(l))
}

func lineOf(version int) Line {
	if version >= 5 {
		return Flink2
	}
	return Flink1
}

// MarkerClass is the Java class of a versioned recovery marker.
const MarkerClass = "org.apache.flink.agents.runtime.actionstate.KafkaActionStateRecoveryMarker"

// Kryo's default registrations (the same in Kryo 2.24 and 5.x; Flink's own
// registrations start at 73 and register neither maps nor the marker).
const (
	kryoIDInt  = 0 // int and Integer
	kryoIDLong = 7 // long and Long
)

var kryoMaps = map[string]bool{"java.util.HashMap": true, "java.util.LinkedHashMap": true}

// Element is one element of the union state recoveryMarker: a versioned
// marker, or a legacy Map<Integer, Long> (Legacy non-nil).
type Element struct {
	Marker *RecoveryMarker
	Legacy events.Offsets
}

// RecoveryMarker is a KafkaActionStateRecoveryMarker as Flink stored it,
// before the marker rules are applied (Checkpoint.Markers applies them).
type RecoveryMarker struct {
	SchemaVersion int32
	Topic         string
	TopicID       string
	Offsets       events.Offsets
}

// DecodeElement decodes one element written by Flink's KryoSerializer
// (Kryo.writeClassAndObject with reference tracking) for the given line, and
// returns the number of bytes it took. The error's Offset is into b.
//
// The layout, fields in name order as Kryo's FieldSerializer writes them:
//
//	class name → MarkerClass, reference NOT_NULL,
//	offsets: class name → java.util.HashMap, reference, size, then
//	         per entry NOT_NULL zigzag-varint key, NOT_NULL zigzag-varlong value,
//	schemaVersion: zigzag varint,
//	topic, topicId: reference (NOT_NULL or back-reference), Kryo string.
//
// Kryo 2 writes a map's size as n, Kryo 5 as n+1 (0 is a null map); a
// legacy map's keys and values each carry their class (Integer, Long).
func DecodeElement(b []byte, line Line) (Element, int, error) {
	k := &kryoDecoder{b: b, line: line}
	e := k.element()
	if k.err != nil {
		return Element{}, k.off, k.err
	}
	return e, k.off, nil
}

type kryoDecoder struct {
	b     []byte
	off   int
	line  Line
	err   error
	names []string // class names by name ID, in the order first written
	refs  []any    // objects by reference ID
}

func (k *kryoDecoder) failAt(at int, format string, args ...any) {
	if k.err == nil {
		k.err = &FormatError{Offset: int64(at), Expected: fmt.Sprintf(format, args...)}
	}
}

func (k *kryoDecoder) byte1(what string) byte {
	if k.err != nil {
		return 0
	}
	if k.off >= len(k.b) {
		k.failAt(k.off, "%s, but the element ends", what)
		return 0
	}
	c := k.b[k.off]
	k.off++
	return c
}

// varint reads Kryo's variable-length int (7 bits a byte, least significant
// first, at most 5 bytes), zigzag-decoded unless positive.
func (k *kryoDecoder) varint(what string, positive bool) int32 {
	at := k.off
	var v uint32
	for i := 0; i < 5; i++ {
		c := k.byte1(what)
		if k.err != nil {
			return 0
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			break
		}
		if i == 4 {
			k.failAt(at, "%s as a variable-length int of at most 5 bytes", what)
			return 0
		}
	}
	if positive {
		return int32(v)
	}
	return int32(v>>1) ^ -int32(v&1)
}

// varlong reads Kryo's variable-length long: up to 8 bytes of 7 bits, then a
// ninth byte of all 8.
func (k *kryoDecoder) varlong(what string) int64 {
	var v uint64
	for i := 0; i < 9; i++ {
		c := k.byte1(what)
		if k.err != nil {
			return 0
		}
		if i == 8 {
			v |= uint64(c) << 56
			break
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			break
		}
	}
	return int64(v>>1) ^ -int64(v&1)
}

// str reads Kryo's string (Output.writeString or writeAscii, the same in
// Kryo 2 and 5): either ASCII with the last byte's high bit set, or a
// length (chars+1, 0 for null) in a flagged varint, then each UTF-16 unit in
// one to three bytes (so characters outside the BMP come as surrogate pairs).
func (k *kryoDecoder) str(what string) (s string, null bool) {
	at := k.off
	c := k.byte1(what)
	if k.err != nil {
		return "", false
	}
	if c&0x80 == 0 {
		start := at
		// Byte by byte without byte1: its description, built for every byte,
		// was most of the cost of a cold retention round (BenchmarkFollowRound10000).
		for c&0x80 == 0 {
			if k.off >= len(k.b) {
				k.failAt(k.off, "%s (ASCII, its last byte marked), but the element ends", what)
				return "", false
			}
			c = k.b[k.off]
			k.off++
		}
		b := make([]byte, k.off-start)
		copy(b, k.b[start:k.off])
		b[len(b)-1] &= 0x7f
		return string(b), false
	}
	// The length: 6 bits in the first byte, bit 0x40 says more follow.
	n := uint32(c & 0x3f)
	if c&0x40 != 0 {
		shift := 6
		for i := 0; ; i++ {
			c = k.byte1(what + "'s length")
			if k.err != nil {
				return "", false
			}
			n |= uint32(c&0x7f) << shift
			shift += 7
			if c&0x80 == 0 {
				break
			}
			if i == 3 {
				k.failAt(at, "%s's length in at most 5 bytes", what)
				return "", false
			}
		}
	}
	switch n {
	case 0:
		return "", true
	case 1:
		return "", false
	}
	chars := int(n - 1)
	// Each char takes at least one byte: check before allocating.
	if chars > len(k.b)-k.off {
		k.failAt(at, "%s of %d chars, but only %d bytes remain", what, chars, len(k.b)-k.off)
		return "", false
	}
	units := make([]uint16, chars)
	for i := range units {
		uat := k.off
		c := k.byte1(what)
		switch c >> 4 {
		case 0, 1, 2, 3, 4, 5, 6, 7:
			units[i] = uint16(c)
		case 12, 13:
			c2 := k.byte1(what)
			units[i] = uint16(c&0x1f)<<6 | uint16(c2&0x3f)
		case 14:
			c2 := k.byte1(what)
			c3 := k.byte1(what)
			units[i] = uint16(c&0x0f)<<12 | uint16(c2&0x3f)<<6 | uint16(c3&0x3f)
		default:
			k.failAt(uat, "%s: a char in Kryo's UTF-8 (a lead byte), found 0x%02x", what, c)
		}
		if k.err != nil {
			return "", false
		}
	}
	s, ok := fromUTF16(units)
	if !ok {
		k.failAt(at, "%s of whole characters, found a lone UTF-16 surrogate", what)
		return "", false
	}
	return s, false
}

// class reads Kryo's class: 0 null, 1 a name (by name ID, the name itself
// the first time), else a registration ID + 2. It returns the class name, or
// "#id" for a registered class.
func (k *kryoDecoder) class(what string) (name string, id int, null bool) {
	at := k.off
	v := k.varint(what+"'s class", true)
	switch {
	case k.err != nil:
		return "", 0, false
	case v == 0:
		return "", 0, true
	case v == 1:
		nat := k.off
		nameID := int(k.varint(what+"'s class name ID", true))
		if k.err != nil {
			return "", 0, false
		}
		if nameID < len(k.names) && nameID >= 0 {
			return k.names[nameID], -1, false
		}
		if nameID != len(k.names) {
			k.failAt(nat, "%s's class name ID %d or less, found %d", what, len(k.names), nameID)
			return "", 0, false
		}
		n, isNull := k.str(what + "'s class name")
		if isNull && k.err == nil {
			k.failAt(nat, "%s's class name, found null", what)
		}
		k.names = append(k.names, n)
		return n, -1, false
	case v < 0:
		k.failAt(at, "%s's class (a registration ID), found %d", what, v)
		return "", 0, false
	}
	return "", int(v - 2), false
}

// reference reads the reference marker Kryo writes before an object that
// tracks references: 0 null, 1 a new object, n ≥ 2 the object of ID n-2.
func (k *kryoDecoder) reference(what string) (back any, null bool) {
	at := k.off
	v := k.varint(what+"'s reference", true)
	switch {
	case k.err != nil:
		return nil, false
	case v == 0:
		return nil, true
	case v == 1:
		return nil, false
	case int(v-2) < len(k.refs) && v > 1:
		return k.refs[v-2], false
	}
	k.failAt(at, "%s's reference (0 null, 1 new, or an earlier object's ID + 2 below %d), found %d", what, len(k.refs)+2, v)
	return nil, false
}

func (k *kryoDecoder) element() Element {
	at := k.off
	name, id, null := k.class("the element")
	switch {
	case k.err != nil:
		return Element{}
	case null:
		k.failAt(at, "an element, found null")
		return Element{}
	case id >= 0:
		k.failAt(at, "an element of class %s or a Map<Integer, Long>, found Kryo registration ID %d", MarkerClass, id)
		return Element{}
	}
	rat := k.off
	if back, isNull := k.reference("the element"); k.err == nil && (isNull || back != nil) {
		k.failAt(rat, "a new object (reference marker 1) for the element")
		return Element{}
	}
	switch {
	case name == MarkerClass:
		m := &RecoveryMarker{}
		k.refs = append(k.refs, m)
		k.marker(m)
		return Element{Marker: m}
	case kryoMaps[name]:
		k.refs = append(k.refs, name)
		return Element{Legacy: k.offsetsMap("the legacy marker", false)}
	}
	k.failAt(at, "an element of class %s or a java.util.HashMap (a legacy marker), found class %q", MarkerClass, name)
	return Element{}
}

func (k *kryoDecoder) marker(m *RecoveryMarker) {
	// offsets: the field's type is the interface Map, so its class is written.
	at := k.off
	name, id, null := k.class("the marker's offsets")
	switch {
	case k.err != nil:
		return
	case null:
		k.failAt(at, "the marker's offsets, found null")
		return
	case id >= 0 || !kryoMaps[name]:
		k.failAt(at, "the marker's offsets as a java.util.HashMap, found %s", className(name, id))
		return
	}
	rat := k.off
	if back, isNull := k.reference("the marker's offsets"); k.err == nil && (isNull || back != nil) {
		k.failAt(rat, "a new map (reference marker 1) for the marker's offsets")
		return
	}
	k.refs = append(k.refs, name)
	m.Offsets = k.offsetsMap("the marker's offsets", true)
	m.SchemaVersion = k.varint("the marker's schemaVersion", false)
	m.Topic = k.stringField("the marker's topic")
	m.TopicID = k.stringField("the marker's topicId")
}

// stringField reads a String field: final, so no class, but reference-tracked.
func (k *kryoDecoder) stringField(what string) string {
	at := k.off
	back, null := k.reference(what)
	switch {
	case k.err != nil:
		return ""
	case null:
		k.failAt(at, "%s, found null", what)
		return ""
	case back != nil:
		s, ok := back.(stringRef)
		if !ok {
			k.failAt(at, "%s, found a reference to an object that is not a string", what)
			return ""
		}
		return string(s)
	}
	s, isNull := k.str(what)
	if isNull && k.err == nil {
		k.failAt(at, "%s, found a null string", what)
	}
	k.refs = append(k.refs, stringRef(s))
	return s
}

type stringRef string

// offsetsMap reads a MapSerializer's body for Map<Integer, Long>. typed: the
// map is a field declared Map<Integer, Long>, so Kryo knows the (final) key
// and value classes from the generics and writes only a null marker before
// each; otherwise each key and value carries its class.
func (k *kryoDecoder) offsetsMap(what string, typed bool) events.Offsets {
	at := k.off
	n := int64(k.varint("the size of "+what, true))
	if k.err != nil {
		return nil
	}
	if k.line == Flink2 {
		if n == 0 {
			k.failAt(at, "%s, found a null map", what)
			return nil
		}
		n-- // Kryo 5 writes size+1
	}
	// An entry takes at least 4 bytes.
	if n < 0 || n*4 > int64(len(k.b)-k.off) {
		k.failAt(at, "%s's size (entries that fit the %d bytes left), found %d", what, len(k.b)-k.off, n)
		return nil
	}
	offsets := make(events.Offsets, n)
	for i := int64(0); i < n && k.err == nil; i++ {
		kat := k.off
		key := k.boxed("a key of "+what, typed, kryoIDInt)
		value := k.boxed("a value of "+what, typed, kryoIDLong)
		if k.err != nil {
			break
		}
		if key < -1<<31 || key >= 1<<31 {
			k.failAt(kat, "%s's key as an int", what)
			break
		}
		if _, dup := offsets[int32(key)]; dup {
			k.failAt(kat, "%s's keys distinct, found %d twice", what, key)
			break
		}
		offsets[int32(key)] = value
	}
	return offsets
}

// boxed reads an Integer (wantID kryoIDInt) or Long (kryoIDLong).
func (k *kryoDecoder) boxed(what string, typed bool, wantID int) int64 {
	at := k.off
	if typed {
		// writeObjectOrNull of a class without references: 0 null, 1 not null.
		switch m := k.byte1(what); {
		case k.err != nil:
			return 0
		case m == 0:
			k.failAt(at, "%s, found null", what)
			return 0
		case m != 1:
			k.failAt(at, "%s's null marker (0 or 1), found %d", what, m)
			return 0
		}
	} else {
		name, id, null := k.class(what)
		switch {
		case k.err != nil:
			return 0
		case null:
			k.failAt(at, "%s, found null", what)
			return 0
		case id != wantID:
			k.failAt(at, "%s of class %s, found %s", what, className("", wantID), className(name, id))
			return 0
		}
	}
	if wantID == kryoIDInt {
		return int64(k.varint(what, false))
	}
	return k.varlong(what)
}

func className(name string, id int) string {
	switch {
	case id == kryoIDInt:
		return "Integer"
	case id == kryoIDLong:
		return "Long"
	case id >= 0:
		return fmt.Sprintf("Kryo registration ID %d", id)
	}
	return fmt.Sprintf("%q", name)
}
