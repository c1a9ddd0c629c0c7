package events

import (
	"maps"
	"math"
	"slices"
	"strconv"
)

// Partitions returns the partitions of o in ascending numeric order.
func (o Offsets) Partitions() []int32 {
	return slices.Sorted(maps.Keys(o))
}

// String renders o the one way people read offsets: "0=40 1=30", partitions
// ascending, separated by one space; "none" when o is empty. Every table,
// message and report uses it (contract C5); JSON keeps its object shape.
func (o Offsets) String() string {
	if len(o) == 0 {
		return "none"
	}
	b := make([]byte, 0, 12*len(o))
	for i, p := range o.Partitions() {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, int64(p), 10)
		b = append(b, '=')
		b = strconv.AppendInt(b, o[p], 10)
	}
	return string(b)
}

// Clone returns a copy of o (nil for nil).
func (o Offsets) Clone() Offsets { return maps.Clone(o) }

// Equal reports whether o and other hold the same partitions and offsets.
func (o Offsets) Equal(other Offsets) bool { return maps.Equal(o, other) }

// validateOffsets checks offsets built in code: at least one partition, no
// negative partition or offset.
func validateOffsets(field string, o Offsets) *fieldError {
	if len(o) == 0 {
		return fieldErrorf(field, "is empty: expected at least one partition")
	}
	for _, p := range o.Partitions() {
		if p < 0 {
			return fieldErrorf(field, "has partition %d: expected partitions 0 to %d", p, math.MaxInt32)
		}
		if o[p] < 0 {
			return fieldErrorf(keyPath(field, strconv.Itoa(int(p))), "is %d: expected an offset of 0 or more", o[p])
		}
	}
	return nil
}

// offsetsFromNode reads {"0":100,"1":150}: canonical partition keys, integer
// offsets of 0 or more, at least one partition. Duplicates were rejected by
// parseJSON.
func offsetsFromNode(field string, n node) (Offsets, *fieldError) {
	if n.kind != kindObject {
		return nil, wrongKind(field, n, `an object of partition to offset, like {"0":100}`)
	}
	if len(n.members) == 0 {
		return nil, fieldErrorf(field, "is empty: expected at least one partition")
	}
	o := make(Offsets, len(n.members))
	for _, m := range n.members {
		p, ok := parsePartition(m.name)
		if !ok {
			return nil, fieldErrorf(keyPath(field, m.name), "is not a canonical partition number: expected a decimal number from 0 to %d, without sign, spaces or leading zeros", math.MaxInt32)
		}
		if _, dup := o[p]; dup { // unreachable after parseJSON; kept for safety
			return nil, fieldErrorf(keyPath(field, m.name), "appears more than once: expected each partition exactly once")
		}
		if m.value.kind != kindNumber {
			return nil, wrongKind(keyPath(field, m.name), m.value, "an integer offset of 0 or more")
		}
		off, ok := parseCount(m.value.text)
		if !ok {
			return nil, fieldErrorf(keyPath(field, m.name), "is %s: expected an integer offset from 0 to %d, without fraction or exponent", m.value.text, int64(math.MaxInt64))
		}
		o[p] = off
	}
	return o, nil
}

// keyPath names a partition key inside field: offsets["00"].
func keyPath(field, key string) string {
	return field + "[" + strconv.Quote(key) + "]"
}

// parsePartition accepts exactly the keys Offsets are written with:
// ^(0|[1-9][0-9]{0,9})$ and at most MaxInt32.
func parsePartition(s string) (int32, bool) {
	if s == "" || len(s) > 10 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if v > math.MaxInt32 {
		return 0, false
	}
	return int32(v), true
}

// parseCount parses a non-negative decimal integer literal into an int64.
func parseCount(s string) (int64, bool) {
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

// appendOffsets writes o as a JSON object with keys in ascending numeric
// order. indent "" writes it compact; otherwise one partition per line.
func appendOffsets(b []byte, o Offsets, indent string) []byte {
	b = append(b, '{')
	for i, p := range o.Partitions() {
		if i > 0 {
			b = append(b, ',')
		}
		if indent != "" {
			b = append(b, '\n')
			b = append(b, indent...)
			b = append(b, "  "...)
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(p), 10)
		b = append(b, '"', ':')
		if indent != "" {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, o[p], 10)
	}
	if indent != "" && len(o) > 0 {
		b = append(b, '\n')
		b = append(b, indent...)
	}
	return append(b, '}')
}

func wrongKind(field string, n node, expected string) *fieldError {
	if n.kind == kindNull {
		return fieldErrorf(field, "is null: expected %s", expected)
	}
	return fieldErrorf(field, "is %s: expected %s", n.kind, expected)
}
