package checkpoint

import (
	"encoding/binary"
	"fmt"
	"unicode/utf16"
)

// FormatError says where a checkpoint's bytes stop making sense: the file (as
// the checkpoint names it), the byte offset in that file, and what the reader
// expected there. Every malformed, truncated or foreign input ends in one.
type FormatError struct {
	File     string
	Offset   int64
	Expected string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s, byte %d: expected %s", e.File, e.Offset, e.Expected)
}

// decoder reads Java DataOutputStream encodings (big-endian, modified UTF-8)
// from a byte slice that holds bytes [base, base+len(b)) of file. The first
// failure sticks: later reads return zero values, so a parse loop needs to
// check err only where it could otherwise spin (counts are checked against
// what remains before any loop or allocation).
type decoder struct {
	file string
	b    []byte
	base int64
	off  int
	err  error
	// ctx names the structure being read, for errors (set by the parser,
	// so that no message is built unless one is needed).
	ctx string
}

func (d *decoder) pos() int64 { return d.base + int64(d.off) }

func (d *decoder) remaining() int { return len(d.b) - d.off }

// failAt records what was expected at absolute offset at (the first failure wins).
func (d *decoder) failAt(at int64, format string, args ...any) {
	if d.err == nil {
		msg := fmt.Sprintf(format, args...)
		if d.ctx != "" {
			msg += " (in " + d.ctx + ")"
		}
		d.err = &FormatError{File: d.file, Offset: at, Expected: msg}
	}
}

func (d *decoder) fail(format string, args ...any) { d.failAt(d.pos(), format, args...) }

// take returns the next n bytes, or nil after recording that the input ends
// before what was expected.
func (d *decoder) take(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 {
		d.fail("%s: a length of 0 or more, found %d", what, n)
		return nil
	}
	if n > d.remaining() {
		d.fail("%s (%d bytes), but only %d bytes remain: the file is truncated or not what the checkpoint says it is", what, n, d.remaining())
		return nil
	}
	b := d.b[d.off : d.off+n]
	d.off += n
	return b
}

func (d *decoder) u8(what string) byte {
	b := d.take(1, what)
	if b == nil {
		return 0
	}
	return b[0]
}

func (d *decoder) u16(what string) uint16 {
	b := d.take(2, what)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint16(b)
}

func (d *decoder) i32(what string) int32 {
	b := d.take(4, what)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (d *decoder) i64(what string) int64 {
	b := d.take(8, what)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// count reads an int that counts items of at least minSize bytes each and
// checks it against what remains, so no loop runs and nothing is allocated
// for a count the input cannot hold.
func (d *decoder) count(what string, minSize int) int {
	at := d.pos()
	b := d.take(4, "a count")
	if b == nil {
		return 0
	}
	n := int32(binary.BigEndian.Uint32(b))
	if n < 0 {
		d.failAt(at, "a number of %s, found %d", what, n)
		return 0
	}
	if int64(n)*int64(minSize) > int64(d.remaining()) {
		d.failAt(at, "a number of %s that fits the %d bytes left, found %d", what, d.remaining(), n)
		return 0
	}
	return int(n)
}

// utf reads what DataOutput.writeUTF writes: an unsigned 16-bit length, then
// that many bytes of Java's modified UTF-8.
// skipUTF skips what writeUTF wrote, for strings the reader drops.
func (d *decoder) skipUTF(what string) {
	if n := d.take(2, what); n != nil {
		d.take(int(binary.BigEndian.Uint16(n)), what)
	}
}

// rawUTF returns the bytes of what writeUTF wrote, undecoded.
func (d *decoder) rawUTF(what string) []byte {
	if n := d.take(2, what); n != nil {
		return d.take(int(binary.BigEndian.Uint16(n)), what)
	}
	return nil
}

func (d *decoder) utf(what string) string {
	// The description is built only when take can fail: most strings read have their length.
	desc := what
	if d.err != nil || d.remaining() < 2 {
		desc = what + " (its length)"
	}
	n := d.take(2, desc)
	if n == nil {
		return ""
	}
	at := d.pos()
	b := d.take(int(binary.BigEndian.Uint16(n)), what)
	if b == nil {
		return ""
	}
	s, bad := modifiedUTF8(b)
	if bad >= 0 {
		d.failAt(at+int64(bad), "%s in Java's modified UTF-8", what)
		return ""
	}
	return s
}

// modifiedUTF8 decodes Java's modified UTF-8 (each UTF-16 unit in one to
// three bytes, so a character outside the BMP is a surrogate pair of two
// three-byte sequences) into UTF-8. bad is the offset of the first byte that
// is not such an encoding, or -1.
func modifiedUTF8(b []byte) (s string, bad int) {
	ascii := true
	for _, c := range b {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return string(b), -1
	}
	units := make([]uint16, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c < 0x80:
			units = append(units, uint16(c))
			i++
		case c>>5 == 0x6:
			if i+1 >= len(b) || b[i+1]>>6 != 2 {
				return "", i
			}
			units = append(units, uint16(c&0x1f)<<6|uint16(b[i+1]&0x3f))
			i += 2
		case c>>4 == 0xe:
			if i+2 >= len(b) || b[i+1]>>6 != 2 || b[i+2]>>6 != 2 {
				return "", i
			}
			units = append(units, uint16(c&0x0f)<<12|uint16(b[i+1]&0x3f)<<6|uint16(b[i+2]&0x3f))
			i += 3
		default:
			return "", i
		}
	}
	s, ok := fromUTF16(units)
	if !ok {
		return "", 0
	}
	return s, -1
}

// fromUTF16 turns UTF-16 units into UTF-8; ok is false for a lone surrogate,
// which a Java string may hold but UTF-8 cannot.
func fromUTF16(units []uint16) (string, bool) {
	for i := 0; i < len(units); i++ {
		u := units[i]
		if utf16.IsSurrogate(rune(u)) {
			if u >= 0xdc00 || i+1 == len(units) || units[i+1] < 0xdc00 || units[i+1] > 0xdfff {
				return "", false
			}
			i++
		}
	}
	return string(utf16.Decode(units)), true
}

func errorf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
