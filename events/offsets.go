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
//
// It fills a slice of the right size and sorts it, rather than
// slices.Sorted(maps.Keys(o)), which grows its slice through an iterator:
// that was 14% of a replay's CPU (docs/benchmarks.md, B5 profile).
func (o Offsets) Partitions() []int32 {
	return o.appendPartitions(make([]int32, 0, len(o)))
}

// appendPartitions appends the partitions, ascending, to ps.
func (o Offsets) appendPartitions(ps []int32) []int32 {
	n := len(ps)
	for p := range o {
		ps = append(ps, p)
	}
	slices.Sort(ps[n:])
	return ps
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

// SamePartitions reports whether o and other name the same partitions,
// whatever their offsets.
func (o Offsets) SamePartitions(other Offsets) bool {
	if len(o) != len(other) {
		return false
	}
	for p := range o {
		if _, ok := other[p]; !ok {
			return false
		}
	}
	return true
}

// validateOffsets checks offsets built in code: at least one partition, no
// negative partition or offset.
func validateOffsets(field string, o Offsets) *fieldError {
	if len(o) == 0 {
		return fieldErrorf(field, "is empty: expected at least one partition")
	}
	valid := true
	for p, off := range o {
		valid = valid && p >= 0 && off >= 0
	}
	if valid {
		return nil // no sort needed to name the lowest bad partition
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
	// reuse, when not nil, is an emptied map offsetsFast fills instead of
	// making one (ReadMarkersReusing).
	reuse Offsets
}

const offsetsExpected = `an object of partition to offset, like {"0":100}`

func (f *offsetsField) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if f.set {
		return twice
	}
	f.set = true
	raw, err := dec.ReadValue()
	if err != nil {
		return err
	}
	o, ok := offsetsFast(raw, f.reuse)
	if !ok {
		var ferr *fieldError
		if o, ferr = offsetsTokens(raw); ferr != nil {
			return atValue(dec, ferr)
		}
	}
	f.v = o
	return nil
}

// offsetsFast reads an offsets object that the decoder has validated, in
// the form every writer uses (canonical keys and offsets, no escapes), in
// one pass over its bytes and into a map sized once. Anything else, even
// valid, returns false for offsetsTokens, which decides and words it.
//
// It exists because the library's token reader costs two calls per entry
// and cannot size the map: offset maps have one entry per partition, and
// markers of 10,000 partitions spent three quarters of their decoding there
// (docs/benchmarks.md, B4).
func offsetsFast(raw []byte, reuse Offsets) (Offsets, bool) {
	n := bytes.Count(raw, []byte{':'})
	if n == 0 || raw[0] != '{' {
		return nil, false
	}
	o := reuse
	if o == nil {
		o = make(Offsets, n)
	} else {
		clear(o)
	}
	i := 1
	for {
		i = skipSpace(raw, i)
		if i >= len(raw) || raw[i] != '"' {
			return nil, false
		}
		j := i + 1
		for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
			j++
		}
		if j >= len(raw) || raw[j] != '"' {
			return nil, false
		}
		p, ok := parsePartition(raw[i+1 : j])
		if !ok {
			return nil, false
		}
		i = skipSpace(raw, j+1)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = skipSpace(raw, i+1)
		k := i
		for k < len(raw) && raw[k] >= '0' && raw[k] <= '9' {
			k++
		}
		off, ok := parseCount(raw[i:k])
		if !ok {
			return nil, false
		}
		before := len(o)
		o[p] = off
		if len(o) == before {
			return nil, false // a partition twice
		}
		i = skipSpace(raw, k)
		if i >= len(raw) {
			return nil, false
		}
		switch raw[i] {
		case ',':
			i++
		case '}':
			return o, true
		default:
			return nil, false // a fraction or an exponent
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// offsetsTokens reads an offsets object token by token, and words what is
// wrong with it; paths are relative to the object.
func offsetsTokens(raw jsontext.Value) (Offsets, *fieldError) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	if raw.Kind() != '{' {
		return nil, wrongKind("", kindOf(raw.Kind()), offsetsExpected)
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, fieldErrorf("", "is not valid JSON: %v", err)
	}
	o := make(Offsets, 4)
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return nil, fieldErrorf("", "is not valid JSON: %v", err)
		}
		key := unquote(name)
		p, ok := parsePartition(key)
		if !ok {
			return nil, fieldErrorf(keyPath("", key), "is not a canonical partition number: expected a decimal number from 0 to %d, without sign, spaces or leading zeros", math.MaxInt32)
		}
		value, err := dec.ReadValue()
		if err != nil {
			return nil, fieldErrorf(keyPath("", key), "is not valid JSON: %v", err)
		}
		if value.Kind() != '0' {
			return nil, wrongKind(keyPath("", key), kindOf(value.Kind()), "an integer offset of 0 or more")
		}
		off, ok := parseCount(value)
		if !ok {
			return nil, fieldErrorf(keyPath("", key), "is %s: expected an integer offset from 0 to %d, without fraction or exponent", value, int64(math.MaxInt64))
		}
		if _, dup := o[p]; dup {
			return nil, twice
		}
		o[p] = off
	}
	if len(o) == 0 {
		return nil, fieldErrorf("", "is empty: expected at least one partition")
	}
	return o, nil
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
