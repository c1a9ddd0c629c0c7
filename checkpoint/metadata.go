package checkpoint

import (
	"encoding/hex"
)

// The numbers of Flink's Checkpoints and MetadataV2V3SerializerBase.
const (
	metadataMagic    = 0x4960672d // Checkpoints.HEADER_MAGIC_NUMBER
	masterStateMagic = 0xc96b1696 // MetadataV2V3SerializerBase.MASTER_STATE_MAGIC_NUMBER
	// javaSerializationMagic starts what ObjectOutputStream writes: version 4
	// and later end the metadata with the CheckpointProperties so written.
	javaSerializationMagic = 0xaced0005
)

// Handle kinds (MetadataV2V3SerializerBase's type bytes).
const (
	handleNull                     = 0
	handleByteStream               = 1
	handleFile                     = 2
	handleKeyGroups                = 3
	handlePartitionableOperator    = 4
	handleIncrementalKeyGroups     = 5
	handleRelativeFile             = 6
	handleSavepointKeyGroups       = 7
	handleChangelog                = 8
	handleChangelogByteIncrement   = 9
	handleChangelogFileIncrement   = 10
	handleIncrementalKeyGroupsV2   = 11
	handleKeyGroupsV2              = 12
	handleChangelogFileIncrementV2 = 13
	handleChangelogV2              = 14
	handleSegmentFile              = 15
	handleEmptySegmentFile         = 16
	handleSegmentOperator          = 17
)

// Channel state handle kinds of ChannelStateHandleSerializerV2 (version 6 and later).
const (
	channelInput        = 1
	channelOutput       = 2
	channelMergedInput  = 3
	channelMergedOutput = 4
)

// Operator state distribution modes (OperatorStateHandle.Mode ordinals).
const (
	modeSplitDistribute = 0
	modeUnion           = 1
	modeBroadcast       = 2
)

// maxNesting bounds how deep keyed handles may nest (a changelog handle holds
// keyed handles): Flink nests at most two levels, and a crafted file must not
// exhaust the stack.
const maxNesting = 8

// metadata is what the reader keeps of a _metadata file: every operator with
// its managed operator state handles; keyed, raw, channel and coordinator
// state is checked and skipped.
type metadata struct {
	version      int
	checkpointID int64
	operators    []operatorMeta
}

type operatorMeta struct {
	name, uid      string // version 5 and later; "" when not recorded
	id             [16]byte
	parallelism    int
	maxParallelism int
	fullyFinished  bool
	subtasks       []subtaskMeta
}

func (o *operatorMeta) hash() string { return hex.EncodeToString(o.id[:]) }

type subtaskMeta struct {
	index    int
	finished bool
	managed  *operatorStateHandle // nil when the subtask has no managed operator state
}

// operatorStateHandle is an OperatorStreamStateHandle: each state's name,
// mode and element offsets, and where its stream is.
type operatorStateHandle struct {
	states []stateOffsets
	stream streamHandle
	at     int64 // where the handle starts in _metadata, for errors
}

type stateOffsets struct {
	name    string
	mode    byte
	offsets []int64
}

// streamHandle says where a state stream's bytes are: inline in _metadata
// (ByteStreamStateHandle), a file named relative to the checkpoint directory
// (RelativeFileStateHandle) or by its full path (FileStateHandle), or a
// segment of a file (SegmentFileStateHandle of file merging).
type streamHandle struct {
	kind   byte
	inline []byte
	inAt   int64  // offset of inline in _metadata
	path   []byte // relative or absolute, as the checkpoint names it (modified UTF-8)
	pathAt int64
	start  int64 // segment start
	size   int64 // declared state size (-1 unknown)
}

// parseMetadata reads a _metadata file of versions 3 to 7. It keeps what
// names operators and their managed operator state; everything else is
// walked by the lengths the format declares and dropped.
func parseMetadata(file string, b []byte) (*metadata, error) {
	d := &decoder{file: file, b: b}
	if magic := d.i32("Flink's checkpoint metadata magic number 0x4960672d"); d.err == nil && uint32(magic) != metadataMagic {
		d.failAt(0, "Flink's checkpoint metadata magic number 0x4960672d, found 0x%08x: this is not a Flink checkpoint or savepoint _metadata file", uint32(magic))
	}
	version := int(d.i32("the metadata format version"))
	if d.err != nil {
		return nil, d.err
	}
	if version < 3 || version > 7 {
		d.failAt(4, "a metadata format version this reader knows (3 to 7: Flink 1.15 and earlier write 3, 1.16 to 1.20 write 4, 2.0 writes 5, 2.1 to 2.3 write 6), found %d", version)
		return nil, d.err
	}
	m := &metadata{version: version}
	p := &metaParser{d: d, version: version}
	at := d.pos()
	m.checkpointID = d.i64("the checkpoint ID")
	if d.err == nil && m.checkpointID < 0 {
		d.failAt(at, "a checkpoint ID of 0 or more, found %d", m.checkpointID)
	}
	masters := d.count("master states", 8)
	for i := 0; i < masters && d.err == nil; i++ {
		at := d.pos()
		if magic := d.i32("a master state's magic number"); d.err == nil && uint32(magic) != masterStateMagic {
			d.failAt(at, "a master state's magic number 0xc96b1696, found 0x%08x", uint32(magic))
		}
		at = d.pos()
		n := d.i32("a master state's length")
		if d.err == nil && n <= 0 {
			d.failAt(at, "a positive master state length, found %d", n)
		}
		d.take(int(n), "a master state")
	}
	ops := d.count("operators", 16+8+1+4)
	for i := 0; i < ops && d.err == nil; i++ {
		m.operators = append(m.operators, p.operator())
	}
	if d.err != nil {
		return nil, d.err
	}
	if version >= 4 {
		// CheckpointProperties in Java serialization: checked to start as
		// such, not interpreted.
		at := d.pos()
		if magic := d.i32("the checkpoint properties (Java serialization)"); d.err == nil && uint32(magic) != javaSerializationMagic {
			d.failAt(at, "the checkpoint properties in Java serialization (0xaced0005), found 0x%08x", uint32(magic))
		}
		(&javaWalker{d: d}).object("the checkpoint properties")
		if d.err == nil && d.remaining() != 0 {
			d.fail("the end of the file after the checkpoint properties, found %d more bytes", d.remaining())
		}
	} else if d.remaining() != 0 {
		d.fail("the end of the file after the last operator, found %d more bytes", d.remaining())
	}
	if d.err != nil {
		return nil, d.err
	}
	return m, nil
}

type metaParser struct {
	d       *decoder
	version int
}

func (p *metaParser) operator() operatorMeta {
	d := p.d
	var o operatorMeta
	if p.version >= 5 {
		o.name = d.utf("the operator's name")
		o.uid = d.utf("the operator's uid")
	}
	copy(o.id[:], d.take(16, "the operator ID"))
	o.parallelism = int(d.i32("the operator's parallelism"))
	o.maxParallelism = int(d.i32("the operator's maximum parallelism"))
	at := d.pos()
	if c := p.streamHandle("the operator coordinator's state", 0); d.err == nil && c.kind != handleNull && c.kind != handleByteStream {
		d.failAt(at, "the operator coordinator's state inline (a byte-stream handle) or none, found a handle of kind %d", c.kind)
	}
	at = d.pos()
	n := d.i32("the number of subtask states")
	if d.err != nil {
		return o
	}
	if n < 0 {
		o.fullyFinished = true
		return o
	}
	// A subtask takes at least 4 bytes (a finished subtask's index).
	if int64(n)*4 > int64(d.remaining()) {
		d.failAt(at, "a number of subtask states that fits the %d bytes left, found %d", d.remaining(), n)
		return o
	}
	for j := 0; j < int(n) && d.err == nil; j++ {
		idx := d.i32("a subtask index")
		s := subtaskMeta{index: int(idx)}
		if idx < 0 {
			s.index, s.finished = int(-idx-1), true
			o.subtasks = append(o.subtasks, s)
			continue
		}
		s.managed = p.subtaskState()
		o.subtasks = append(o.subtasks, s)
	}
	return o
}

// subtaskState reads an OperatorSubtaskState and keeps its managed operator state.
func (p *metaParser) subtaskState() *operatorStateHandle {
	d := p.d
	var managed *operatorStateHandle
	if d.i32("whether the subtask has managed operator state") != 0 {
		managed = p.operatorStateHandle("the managed operator state")
	}
	if d.i32("whether the subtask has raw operator state") != 0 {
		p.operatorStateHandle("the raw operator state")
	}
	p.keyedHandle("the managed keyed state", 0)
	p.keyedHandle("the raw keyed state", 0)
	p.channelHandles(true)
	p.channelHandles(false)
	if p.version >= 7 {
		at := d.pos()
		switch d.u8("whether a regional checkpoint reference ID follows") {
		case 0:
		case 1:
			d.i64("the regional checkpoint reference ID")
		default:
			d.failAt(at, "0 or 1 (whether a regional checkpoint reference ID follows)")
		}
	}
	return managed
}

func (p *metaParser) operatorStateHandle(what string) *operatorStateHandle {
	d := p.d
	defer func(ctx string) { d.ctx = ctx }(d.ctx)
	d.ctx = what
	at := d.pos()
	kind := d.u8("an operator state handle's kind")
	if d.err != nil {
		return nil
	}
	switch kind {
	case handleNull:
		return nil
	case handlePartitionableOperator, handleSegmentOperator:
	default:
		d.failAt(at, "%s's handle kind (0, 4 or 17), found %d", what, kind)
		return nil
	}
	h := &operatorStateHandle{at: at}
	n := d.count("states", 2+1+4)
	for i := 0; i < n && d.err == nil; i++ {
		s := stateOffsets{name: d.utf("a state's name")}
		mat := d.pos()
		s.mode = d.u8("the state's distribution mode")
		if d.err == nil && s.mode > modeBroadcast {
			d.failAt(mat, "a distribution mode (0 split, 1 union, 2 broadcast), found %d", s.mode)
		}
		k := d.count("offsets of a state", 8)
		if d.err != nil {
			break
		}
		s.offsets = make([]int64, k)
		for j := range s.offsets {
			s.offsets[j] = d.i64("an offset")
		}
		h.states = append(h.states, s)
	}
	if kind == handleSegmentOperator {
		d.skipUTF("the task-owned directory")
		d.skipUTF("the shared directory")
		d.u8("whether the file-merging handle is empty")
	}
	sat := d.pos()
	h.stream = p.streamHandle("an operator state's stream", 0)
	if d.err == nil {
		switch {
		case kind == handleSegmentOperator && h.stream.kind != handleSegmentFile && h.stream.kind != handleEmptySegmentFile:
			d.failAt(sat, "a file segment handle under a file-merging operator state handle, found kind %d", h.stream.kind)
		case h.stream.kind == handleNull || h.stream.kind == handleKeyGroups:
			d.failAt(sat, "the stream of %s (a byte-stream, file, relative-file or segment handle), found kind %d", what, h.stream.kind)
		}
	}
	return h
}

// streamHandle reads a StreamStateHandle.
func (p *metaParser) streamHandle(what string, depth int) streamHandle {
	d := p.d
	defer func(ctx string) { d.ctx = ctx }(d.ctx)
	d.ctx = what
	at := d.pos()
	h := streamHandle{kind: d.u8("a stream handle's kind"), size: -1}
	if d.err != nil {
		return h
	}
	switch h.kind {
	case handleNull, handleEmptySegmentFile:
	case handleByteStream:
		d.skipUTF("the inline state's name")
		n := d.i32("the inline state's length")
		h.inAt = d.pos()
		h.inline = d.take(int(n), "the inline state's bytes")
		h.size = int64(len(h.inline))
	case handleFile:
		h.size = d.i64("the state file's size")
		h.pathAt = d.pos()
		h.path = d.rawUTF("the state file's path")
	case handleRelativeFile:
		h.pathAt = d.pos()
		h.path = d.rawUTF("the state file's relative path")
		h.size = d.i64("the state file's size")
	case handleKeyGroups:
		p.keyGroupOffsets()
		if depth >= maxNesting {
			d.failAt(at, "handles nested at most %d deep", maxNesting)
			return h
		}
		p.streamHandle("the key groups' stream", depth+1)
	case handleSegmentFile:
		h.start = d.i64("the segment's start")
		h.size = d.i64("the segment's size")
		sat := d.pos()
		if scope := d.i32("the segment's scope"); d.err == nil && (scope < 0 || scope > 1) {
			d.failAt(sat, "a segment scope (0 exclusive, 1 shared), found %d", scope)
		}
		h.pathAt = d.pos()
		h.path = d.rawUTF("the segment's file path")
		d.skipUTF("the segment's logical file ID")
		if d.err == nil && (h.start < 0 || h.size < 0) {
			d.failAt(at, "a segment with a start and size of 0 or more, found %d and %d", h.start, h.size)
		}
	default:
		d.failAt(at, "%s's handle kind (one of 0, 1, 2, 3, 6, 15, 16), found %d: a handle this reader does not know (a newer Flink?)", what, h.kind)
	}
	return h
}

// keyGroupOffsets reads a key group range and an offset per key group.
func (p *metaParser) keyGroupOffsets() {
	d := p.d
	d.i32("the first key group")
	n := d.count("key groups", 8)
	d.take(8*n, "the key groups' offsets")
}

// keyedHandle reads and drops a KeyedStateHandle of any kind.
func (p *metaParser) keyedHandle(what string, depth int) {
	d := p.d
	defer func(ctx string) { d.ctx = ctx }(d.ctx)
	d.ctx = what
	at := d.pos()
	kind := d.u8("a keyed state handle's kind")
	if d.err != nil {
		return
	}
	if depth > maxNesting {
		d.failAt(at, "keyed handles nested at most %d deep", maxNesting)
		return
	}
	switch kind {
	case handleNull:
	case handleKeyGroups, handleKeyGroupsV2, handleSavepointKeyGroups:
		p.keyGroupOffsets()
		p.streamHandle("the key groups' stream", depth+1)
		if kind == handleKeyGroupsV2 {
			d.skipUTF("the state handle ID")
		}
	case handleIncrementalKeyGroups, handleIncrementalKeyGroupsV2:
		d.i64("the incremental handle's checkpoint ID")
		d.skipUTF("the backend identifier")
		d.i32("the first key group")
		d.i32("the number of key groups")
		if kind == handleIncrementalKeyGroupsV2 {
			d.i64("the checkpointed size")
		}
		p.streamHandle("the incremental handle's metadata stream", depth+1)
		for _, list := range []string{"shared files", "private files"} {
			n := d.count(list, 2+1)
			for i := 0; i < n && d.err == nil; i++ {
				d.skipUTF("a local path")
				p.streamHandle("a RocksDB file", depth+1)
			}
		}
		if kind == handleIncrementalKeyGroupsV2 {
			d.skipUTF("the state handle ID")
		}
	case handleChangelog, handleChangelogV2:
		d.i32("the first key group")
		d.i32("the number of key groups")
		d.i64("the checkpointed size")
		for _, part := range []string{"materialized handles", "non-materialized handles"} {
			n := d.count(part, 1)
			for i := 0; i < n && d.err == nil; i++ {
				p.keyedHandle("a changelog's nested handle", depth+1)
			}
		}
		d.i64("the materialization ID")
		if kind == handleChangelogV2 {
			d.i64("the changelog's checkpoint ID")
		}
		d.skipUTF("the state handle ID")
	case handleChangelogByteIncrement:
		d.i32("the first key group")
		d.i32("the number of key groups")
		d.i64("the first sequence number")
		d.i64("the last sequence number")
		n := d.count("state changes", 8)
		for i := 0; i < n && d.err == nil; i++ {
			d.i32("a change's key group")
			k := d.i32("a change's length")
			d.take(int(k), "a change's bytes")
		}
		d.skipUTF("the state handle ID")
	case handleChangelogFileIncrement, handleChangelogFileIncrementV2:
		d.i32("the first key group")
		d.i32("the number of key groups")
		n := d.count("changelog files", 8+1)
		for i := 0; i < n && d.err == nil; i++ {
			d.i64("an offset in a changelog file")
			p.streamHandle("a changelog file", depth+1)
		}
		d.i64("the state size")
		d.i64("the checkpointed size")
		d.skipUTF("the state handle ID")
		if kind == handleChangelogFileIncrementV2 {
			d.skipUTF("the storage identifier")
		}
	default:
		d.failAt(at, "%s's handle kind (one of 0, 3, 5, 7 to 14), found %d: a keyed state handle this reader does not know (a newer Flink?)", what, kind)
	}
}

// channelHandles reads the input (or output) channel state of an unaligned
// checkpoint: a count, then each handle.
func (p *metaParser) channelHandles(input bool) {
	d := p.d
	what := "output channel state handles"
	if input {
		what = "input channel state handles"
	}
	n := d.count(what, 4)
	for i := 0; i < n && d.err == nil; i++ {
		merged := false
		if p.version >= 6 {
			at := d.pos()
			kind := d.u8("a channel state handle's kind")
			switch {
			case d.err != nil:
				return
			case input && kind == channelInput, !input && kind == channelOutput:
			case input && kind == channelMergedInput, !input && kind == channelMergedOutput:
				merged = true
			default:
				d.failAt(at, "a kind of %s (%d or %d), found %d", what, map[bool]int{true: channelInput, false: channelOutput}[input], map[bool]int{true: channelMergedInput, false: channelMergedOutput}[input], kind)
				return
			}
		}
		d.i32("the channel state's subtask index")
		if merged {
			d.i64("the channel state's size")
			p.streamHandle("the channel state's stream", 1)
			k := d.i32("the length of the serialized channel offsets")
			d.take(int(k), "the serialized channel offsets")
			continue
		}
		d.i32("the channel's gate or partition index")
		d.i32("the channel's index")
		k := d.count("channel state offsets", 8)
		d.take(8*k, "the channel state offsets")
		d.i64("the channel state's size")
		p.streamHandle("the channel state's stream", 1)
	}
}
