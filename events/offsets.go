package events

import (
	"bytes"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
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

// offsetsField reads {"0":100,"1":150}: canonical partition keys, integer
// offsets of 0 or more, at least one partition, none twice (also not spelled
// with escapes: "\u0030" is "0").
type offsetsField struct {
	v   Offsets
	set bool
}

const offsetsExpected = `an object of partition to offset, like {"0":100}`

func (f *offsetsField) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if f.set {
		return twice
	}
	f.set = true
	if k := dec.PeekKind(); k != '{' {
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		return atValue(dec, wrongKind("", kindOf(v.Kind()), offsetsExpected))
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	o := make(Offsets, 4)
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return err
		}
		key := name[1 : len(name)-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			key = []byte(unquote(name))
		}
		p, ok := parsePartition(key)
		if !ok {
			return atValue(dec, fieldErrorf("", "is not a canonical partition number: expected a decimal number from 0 to %d, without sign, spaces or leading zeros", math.MaxInt32))
		}
		value, err := dec.ReadValue()
		if err != nil {
			return err
		}
		if value.Kind() != '0' {
			return atValue(dec, wrongKind("", kindOf(value.Kind()), "an integer offset of 0 or more"))
		}
		off, ok := parseCount(value)
		if !ok {
			return atValue(dec, fieldErrorf("", "is %s: expected an integer offset from 0 to %d, without fraction or exponent", value, int64(math.MaxInt64)))
		}
		if _, dup := o[p]; dup {
			return twice
		}
		o[p] = off
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	if len(o) == 0 {
		return atValue(dec, fieldErrorf("", "is empty: expected at least one partition"))
	}
	f.v = o
	return nil
}

// keyPath names a partition key inside field: offsets["00"].
func keyPath(field, key string) string {
	return field + "[" + strconv.Quote(key) + "]"
}

// parsePartition accepts exactly the keys Offsets are written with:
// ^(0|[1-9][0-9]{0,9})$ and at most MaxInt32.
func parsePartition[T ~string | ~[]byte](s T) (int32, bool) {
	if len(s) == 0 || len(s) > 10 || (s[0] == '0' && len(s) > 1) {
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

// parseCount parses a non-negative decimal integer literal (no sign, no
// leading zero, no fraction or exponent) into an int64.
func parseCount[T ~string | ~[]byte](s T) (int64, bool) {
	if len(s) == 0 || len(s) > 19 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0') // 19 digits cannot overflow a uint64
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
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
