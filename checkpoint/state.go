package checkpoint

import (
	"context"
	"slices"

	"github.com/cockroachdb/errors"
)

// stateReader reads the operator state streams of the operators holding
// recoveryMarker.
type stateReader struct {
	ctx  context.Context
	st   Store
	line Line
}

func (r *stateReader) operator(o *operatorMeta) (Operator, error) {
	op := Operator{UID: o.uid, UIDHash: o.hash(), Name: o.name, Parallelism: o.parallelism, MaxParallelism: o.maxParallelism}
	subtasks := slices.Clone(o.subtasks)
	slices.SortFunc(subtasks, func(a, b subtaskMeta) int { return a.index - b.index })
	for _, s := range subtasks {
		if s.managed == nil || s.managed.state(StateName) == nil {
			continue
		}
		sub, err := r.subtask(s.index, s.managed)
		if err != nil {
			return Operator{}, errors.Wrapf(err, "operator %s, subtask %d", op.label(), s.index)
		}
		op.Subtasks = append(op.Subtasks, sub)
	}
	return op, nil
}

// stream is a state stream: size bytes, starting at byte base of file,
// either inline (b) or read on demand from f.
type stream struct {
	file string
	b    []byte
	f    File
	base int64
	size int64
}

func (s stream) close() {
	if s.f != nil {
		s.f.Close()
	}
}

// read returns bytes [off, off+n) of the stream. Only what the reader
// decodes is read: the proxy's first bytes and the span of the recovery
// markers, never the other states of the stream.
func (s stream) read(off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off+n > s.size {
		return nil, errors.Mark(&FormatError{File: s.file, Offset: s.base + off, Expected: errorf("%d bytes within the stream of %d bytes", n, s.size)}, ErrFormat)
	}
	if s.f == nil {
		return s.b[off : off+n], nil
	}
	b := make([]byte, n)
	if got, err := s.f.ReadAt(b, s.base+off); int64(got) < n {
		return nil, errors.Mark(errors.Wrapf(err, "read the state file %s (%d of %d bytes at %d)", s.file, got, n, s.base+off), ErrStateFile)
	}
	return b, nil
}

// open opens the stream of a stream handle: inline in the metadata, or a
// file (a segment's window of it), whose size must be what the metadata
// declares. The caller closes it.
func (r *stateReader) open(h streamHandle) (stream, error) {
	switch h.kind {
	case handleByteStream:
		return stream{file: MetadataFile, b: h.inline, base: h.inAt, size: int64(len(h.inline))}, nil
	case handleEmptySegmentFile:
		return stream{file: MetadataFile}, nil
	}
	path, bad := modifiedUTF8(h.path)
	if bad >= 0 {
		return stream{}, errors.Mark(&FormatError{File: MetadataFile, Offset: h.pathAt + 2 + int64(bad), Expected: "a state file's path in Java's modified UTF-8"}, ErrFormat)
	}
	f, err := r.st.Open(r.ctx, path)
	if err != nil {
		return stream{}, errors.Mark(errors.WithHint(errors.Wrapf(err, "open the state file %s", path),
			"the checkpoint names this file but it cannot be opened: was the checkpoint directory copied or moved without its state files, or deleted in part?"), ErrStateFile)
	}
	size := f.Size()
	start, n := int64(0), size
	if h.kind == handleSegmentFile {
		start, n = h.start, h.size
		if start+n > size || start+n < start {
			f.Close()
			return stream{}, errors.Mark(&FormatError{File: path, Offset: size, Expected: errorf("a segment of %d bytes at %d, but the file has %d bytes", n, start, size)}, ErrFormat)
		}
	} else if h.size >= 0 && h.size != size {
		f.Close()
		return stream{}, errors.Mark(errors.WithHint(&FormatError{File: path, Offset: min(size, h.size), Expected: errorf("%d bytes, as the metadata declares, found a file of %d bytes", h.size, size)},
			"the state file is truncated or was replaced"), ErrFormat)
	}
	return stream{file: path, f: f, base: start, size: n}, nil
}

// subtask decodes one subtask's elements of recoveryMarker. The stream
// starts with OperatorBackendSerializationProxy: its version (an int; 6 in
// Flink 1.17 to 2.x) and, from version 6, whether the states are
// Snappy-compressed. The rest of the proxy (the states' serializer
// snapshots) is not needed: each element's offset is in the metadata, and it
// ends where the next element of any state of the stream begins, or at the
// stream's end.
func (r *stateReader) subtask(index int, h *operatorStateHandle) (Subtask, error) {
	sub := Subtask{Index: index}
	st := h.state(StateName)
	if len(st.offsets) == 0 {
		return sub, nil
	}
	if st.mode != modeUnion {
		return sub, errors.Mark(&FormatError{File: MetadataFile, Offset: h.at, Expected: errorf("the state %s in union mode (1), found mode %d", StateName, st.mode)}, ErrFormat)
	}
	s, err := r.open(h.stream)
	if err != nil {
		return sub, err
	}
	defer s.close()
	head, err := s.read(0, min(5, s.size))
	if err != nil {
		return sub, err
	}
	d := &decoder{file: s.file, b: head, base: s.base}
	version := d.i32("the operator state's serialization proxy version")
	if d.err == nil && (version < 1 || version > 6) {
		d.failAt(s.base, "an operator state serialization proxy version (1 to 6), found %d", version)
	}
	compressed := false
	if version == 6 {
		at := d.pos()
		switch d.u8("whether the operator state is compressed") {
		case 0:
		case 1:
			compressed = true
		default:
			d.failAt(at, "a boolean (whether the operator state is compressed)")
		}
	}
	if d.err != nil {
		return sub, errors.Mark(d.err, ErrFormat)
	}
	header := int64(d.off)
	var bounds []int64
	for _, o := range h.states {
		bounds = append(bounds, o.offsets...)
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	// Each element's end, and the span of all of them, read at once when it
	// is small (it is: a marker takes tens of bytes a partition), else
	// element by element; an element larger than maxElementBytes is refused,
	// so a crafted offset into a huge file cannot make the reader hold it.
	ends := make([]int64, len(st.offsets))
	lo, hi := s.size, int64(0)
	for i, off := range st.offsets {
		if off < header || off >= s.size {
			return sub, errors.Mark(&FormatError{File: MetadataFile, Offset: h.at, Expected: errorf("offsets of %s within its stream (%d to %d bytes), found %d for element %d", StateName, header, s.size, off, i)}, ErrFormat)
		}
		ends[i] = s.size
		if j, _ := slices.BinarySearch(bounds, off+1); j < len(bounds) {
			ends[i] = bounds[j]
		}
		if ends[i]-off > maxElementBytes {
			return sub, errors.Mark(&FormatError{File: s.file, Offset: s.base + off, Expected: errorf("element %d of %s to take at most %d bytes, found %d before the next offset or the end", i, StateName, maxElementBytes, ends[i]-off)}, ErrFormat)
		}
		lo, hi = min(lo, off), max(hi, ends[i])
	}
	var span []byte
	if hi-lo <= maxElementBytes {
		if span, err = s.read(lo, hi-lo); err != nil {
			return sub, err
		}
	}
	for i, off := range st.offsets {
		var region []byte
		if span != nil {
			region = span[off-lo : ends[i]-lo]
		} else if region, err = s.read(off, ends[i]-off); err != nil {
			return sub, err
		}
		at := s.base + off
		if compressed {
			region, err = unframe(s.file, region, at)
			if err != nil {
				return sub, errors.Mark(err, ErrFormat)
			}
		}
		e, n, err := DecodeElement(region, r.line)
		if err == nil && n != len(region) {
			err = &FormatError{Offset: int64(n), Expected: errorf("the element to end at byte %d, as the next offset says; it ended at %d", len(region), n)}
		}
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				return sub, err
			}
			where := errorf("element %d of %s at byte %d", i, StateName, at)
			if compressed {
				where += errorf(" (Snappy-compressed; byte %d of it uncompressed)", fe.Offset)
				fe.Offset = at
			} else {
				fe.Offset += at
			}
			fe.File = s.file
			fe.Expected += errorf(" [%s, read as written by %s]", where, r.line)
			return sub, errors.Mark(errors.WithHint(fe, "if the metadata's Flink line is right the element is corrupted; kcleanup decodes Kryo 2 for metadata version 4 (Flink 1.x) and Kryo 5 for version 5 and later (Flink 2.x)"), ErrFormat)
		}
		if e.Marker != nil {
			sub.Markers = append(sub.Markers, *e.Marker)
		} else {
			sub.Legacy = append(sub.Legacy, e.Legacy)
		}
	}
	return sub, nil
}
