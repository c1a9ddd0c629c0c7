package checkpoint

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/klauspost/compress/snappy"
)

// Snappy framing as xerial's SnappyFramedOutputStream writes it (Flink's
// SnappyStreamCompressionDecorator, on with execution.checkpointing.
// snapshot-compression): chunks of a type byte, a 3-byte little-endian
// length, a masked CRC-32C of the uncompressed data and the data. Flink
// flushes the stream before it records each element's offset, so an element
// starts at a chunk and its offset counts compressed bytes.
const (
	chunkCompressed   = 0x00
	chunkUncompressed = 0x01
	chunkStreamID     = 0xff
	// maxChunkData bounds one chunk's uncompressed data: xerial writes blocks
	// of 64 KiB; the format allows 64 KiB + 0 too, nothing larger.
	maxChunkData = 1 << 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maxElementBytes bounds what one compressed element may inflate to, so
// memory stays bounded whatever the chunks declare.
const maxElementBytes = 64 << 20

// unframe decompresses the Snappy chunks of b (which starts at byte base of
// file) and returns the uncompressed bytes.
func unframe(file string, b []byte, base int64) ([]byte, error) {
	var out []byte
	for off := 0; off < len(b); {
		fail := func(format string, args ...any) error {
			d := &decoder{file: file, base: base}
			d.failAt(base+int64(off), format, args...)
			return d.err
		}
		if len(b)-off < 4 {
			return nil, fail("a Snappy chunk header (4 bytes), found %d bytes", len(b)-off)
		}
		kind := b[off]
		n := int(b[off+1]) | int(b[off+2])<<8 | int(b[off+3])<<16
		if n > len(b)-off-4 {
			return nil, fail("a Snappy chunk of %d bytes, but only %d bytes remain", n, len(b)-off-4)
		}
		body := b[off+4 : off+4+n]
		switch {
		case kind == chunkCompressed || kind == chunkUncompressed:
			if n < 4 {
				return nil, fail("a Snappy data chunk with its checksum, found %d bytes", n)
			}
			sum := binary.LittleEndian.Uint32(body)
			data := body[4:]
			if kind == chunkCompressed {
				dl, err := snappy.DecodedLen(data)
				if err != nil || dl > maxChunkData {
					return nil, fail("a Snappy block of at most %d bytes", maxChunkData)
				}
				if len(out)+dl > maxElementBytes {
					return nil, fail("an element of at most %d bytes uncompressed", maxElementBytes)
				}
				dec, err := snappy.Decode(make([]byte, dl), data)
				if err != nil {
					return nil, fail("a valid Snappy block: %v", err)
				}
				data = dec
			} else if len(data) > maxChunkData {
				return nil, fail("an uncompressed Snappy chunk of at most %d bytes", maxChunkData)
			}
			if masked(crc32.Checksum(data, castagnoli)) != sum {
				return nil, fail("a Snappy chunk whose CRC-32C matches its data: the file is corrupted")
			}
			out = append(out, data...)
		case kind == chunkStreamID:
			if string(body) != "sNaPpY" {
				return nil, fail("the Snappy stream identifier \"sNaPpY\"")
			}
		case kind >= 0x80:
			// Skippable (padding and reserved) chunks.
		default:
			return nil, fail("a Snappy chunk type (0, 1, 0x80-0xff), found 0x%02x", kind)
		}
		off += 4 + n
	}
	return out, nil
}

// masked is the Snappy framing format's checksum mask.
func masked(c uint32) uint32 { return (c>>15 | c<<17) + 0xa282ead8 }
