package checkpoint

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/spaolacci/murmur3"

	"github.com/kcleanup/kcleanup/events"
)

// Selector names the operator whose markers are wanted, as Flink Agents'
// tool names it: by uid or by uid hash (Flink's OperatorID in hex). At most
// one is set; with neither, Read uses the one operator holding the state.
type Selector struct{ OperatorUID, OperatorUIDHash string }

// StateName is the union list state that holds the recovery markers.
const StateName = "recoveryMarker"

// MetadataFile is the name of a checkpoint's metadata file in its directory.
const MetadataFile = "_metadata"

// The classes of Read's refusals. Match them with errors.Is.
var (
	// ErrFormat: a file is truncated, corrupted, foreign, or of a version or
	// handle kind this reader does not know (errors.As finds the FormatError).
	ErrFormat = errors.New("checkpoint file is not in a format this reader knows")
	// ErrOperatorNotFound: the selected operator is not in the checkpoint.
	ErrOperatorNotFound = errors.New("operator is not in the checkpoint")
	// ErrNoRecoveryState: the operator is there but holds no state recoveryMarker.
	ErrNoRecoveryState = errors.New("operator holds no recoveryMarker state")
	// ErrEmptyRecoveryState: the operator holds recoveryMarker with no element in any subtask.
	ErrEmptyRecoveryState = errors.New("recoveryMarker state is empty")
	// ErrAmbiguous: several operators hold recoveryMarker and none was selected.
	ErrAmbiguous = errors.New("several operators hold recoveryMarker")
	// ErrNoMarkerOperator: no operator holds recoveryMarker and none was selected.
	ErrNoMarkerOperator = errors.New("no operator holds recoveryMarker")
	// ErrLegacyMarker: the state holds a legacy Map<Integer, Long> marker.
	ErrLegacyMarker = errors.New("legacy recovery marker")
	// ErrInvalidMarker: a marker breaks the rules plan applies to markers.
	ErrInvalidMarker = errors.New("invalid recovery marker")
	// ErrStateFile: a state file the checkpoint names could not be opened or read.
	ErrStateFile = errors.New("state file could not be read")
)

// Checkpoint is what Read found in a checkpoint or savepoint.
type Checkpoint struct {
	ID int64
	// Version is the metadata format version: Flink 1.20 writes 4, 2.0
	// writes 5, 2.1 to 2.3 write 6 (Flink's sources).
	Version int
	Line    Line
	// Operators counts every operator in the checkpoint.
	Operators int
	// Holders are the operators holding recoveryMarker, in metadata order.
	Holders []Operator
	// Selected is the holder whose markers are wanted.
	Selected *Operator
}

// Operator is one operator holding recoveryMarker.
type Operator struct {
	// UID is recorded by metadata version 5 and later; "" before, or when
	// the job set none.
	UID            string
	UIDHash        string // Flink's OperatorID, 32 lowercase hex digits
	Name           string // version 5 and later
	Parallelism    int
	MaxParallelism int
	// Subtasks are the subtasks whose state names recoveryMarker, by index.
	Subtasks []Subtask
	// Err is why this holder's state could not be read; only for a holder
	// other than the selected one (for the selected one, Read fails).
	Err error
}

// Subtask is one subtask's elements of recoveryMarker.
type Subtask struct {
	Index   int
	Markers []RecoveryMarker
	Legacy  []events.Offsets
}

// SubtaskMarker is a marker that passed the marker rules, with the subtask
// that held it.
type SubtaskMarker struct {
	Subtask int
	Marker  events.Marker
}

// OperatorID is Flink's operator ID for a uid (StreamGraphHasherV2): the
// 128-bit murmur3 (x64, seed 0) of the uid's UTF-8 bytes, in Guava's byte
// order (h1 then h2, each little-endian), which AbstractID keeps as is: its
// hex is these 16 bytes in order.
func OperatorID(uid string) string {
	h1, h2 := murmur3.Sum128WithSeed([]byte(uid), 0)
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], h1)
	binary.LittleEndian.PutUint64(b[8:], h2)
	return hex.EncodeToString(b[:])
}

// Read reads st's _metadata, finds the operators holding recoveryMarker and
// decodes the state of each: the selected one (or the only one) becomes
// Selected. It reads nothing but the metadata and the operator state files
// of those operators (keyed, channel and other state is skipped by the
// lengths the metadata declares).
//
// With ErrAmbiguous, ErrNoRecoveryState, ErrEmptyRecoveryState and
// ErrNoMarkerOperator, the Checkpoint is returned too (Holders lists what
// the checkpoint holds); with any other error it is nil.
func Read(ctx context.Context, st Store, sel Selector) (*Checkpoint, error) {
	if sel.OperatorUID != "" && sel.OperatorUIDHash != "" {
		return nil, errors.WithHint(errors.New("both an operator uid and a uid hash were given"), "give one: --operator-uid or --operator-uid-hash")
	}
	wantHash := ""
	switch {
	case sel.OperatorUID != "":
		wantHash = OperatorID(sel.OperatorUID)
	case sel.OperatorUIDHash != "":
		wantHash = strings.ToLower(sel.OperatorUIDHash)
		if b, err := hex.DecodeString(wantHash); err != nil || len(b) != 16 {
			return nil, errors.WithHint(errors.Newf("operator uid hash %q is not 32 hex digits", sel.OperatorUIDHash), "give Flink's operator ID as the web UI and the logs show it, e.g. --operator-uid-hash 4e0d7a8c0ce6b5c0f4c8e3a1b2d3e4f5")
		}
	}
	raw, err := readAll(ctx, st, MetadataFile)
	if err != nil {
		return nil, err
	}
	m, err := parseMetadata(MetadataFile, raw)
	if err != nil {
		return nil, formatError(err)
	}
	c := &Checkpoint{ID: m.checkpointID, Version: m.version, Line: lineOf(m.version), Operators: len(m.operators)}
	r := &stateReader{ctx: ctx, st: st, line: c.Line}

	var chosen *operatorMeta
	selected := -1 // index into c.Holders
	if wantHash != "" {
		for i := range m.operators {
			if m.operators[i].hash() == wantHash {
				chosen = &m.operators[i]
				break
			}
		}
		if chosen == nil {
			return nil, operatorNotFound(sel, wantHash, m)
		}
	}
	for i := range m.operators {
		o := &m.operators[i]
		if !holdsMarkers(o) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		op, err := r.operator(o)
		if err != nil {
			if chosen == nil || o == chosen {
				return nil, err
			}
			// Another holder than the one selected: report, do not fail.
			op = Operator{UID: o.uid, UIDHash: o.hash(), Name: o.name, Parallelism: o.parallelism, MaxParallelism: o.maxParallelism, Err: err}
		}
		if o == chosen {
			selected = len(c.Holders)
		}
		c.Holders = append(c.Holders, op)
	}
	switch {
	case chosen != nil && selected >= 0:
		c.Selected = &c.Holders[selected]
	case chosen != nil:
		return c, errors.Mark(errors.WithHint(errors.Newf("operator %s holds no state %s (%d of its %d subtasks have state in the checkpoint): it is not the operator that keeps Flink Agents' recovery markers",
			describeSelector(sel, wantHash), StateName, len(chosen.subtasks), chosen.parallelism), holderHint(c)), ErrNoRecoveryState)
	case chosen == nil && len(c.Holders) == 0:
		return c, errors.Mark(errors.WithHint(errors.Newf("no operator of the checkpoint's %d holds the state %s", len(m.operators), StateName),
			"is this a checkpoint of a Flink Agents job with Kafka action state? check the path"), ErrNoMarkerOperator)
	case chosen == nil && len(c.Holders) > 1:
		return c, ambiguous(c)
	case chosen == nil:
		c.Selected = &c.Holders[0]
	}
	if c.Selected.elements() == 0 {
		return c, errors.Mark(errors.WithHint(errors.Newf("the state %s of operator %s is empty in every one of its %d subtasks with state (parallelism %d)",
			StateName, c.Selected.label(), len(c.Selected.Subtasks), c.Selected.Parallelism), "the job had not written a recovery marker when this checkpoint was taken: use a later checkpoint"), ErrEmptyRecoveryState)
	}
	return c, nil
}

func holdsMarkers(o *operatorMeta) bool {
	for _, s := range o.subtasks {
		if s.managed != nil && s.managed.state(StateName) != nil {
			return true
		}
	}
	return false
}

func (h *operatorStateHandle) state(name string) *stateOffsets {
	for i := range h.states {
		if h.states[i].name == name {
			return &h.states[i]
		}
	}
	return nil
}

func (o *Operator) elements() int {
	n := 0
	for _, s := range o.Subtasks {
		n += len(s.Markers) + len(s.Legacy)
	}
	return n
}

func (o *Operator) label() string {
	if o.UID != "" {
		return fmt.Sprintf("uid %q (uid hash %s)", o.UID, o.UIDHash)
	}
	return "uid hash " + o.UIDHash
}

func describeSelector(sel Selector, hash string) string {
	if sel.OperatorUID != "" {
		return fmt.Sprintf("uid %q (uid hash %s)", sel.OperatorUID, hash)
	}
	return "uid hash " + hash
}

func operatorNotFound(sel Selector, hash string, m *metadata) error {
	var ids []string
	for i := range m.operators {
		o := &m.operators[i]
		s := o.hash()
		if o.uid != "" {
			s += fmt.Sprintf(" (uid %q)", o.uid)
		}
		ids = append(ids, s)
	}
	hint := "the operators of this checkpoint: " + strings.Join(ids, ", ")
	if len(ids) > 20 {
		hint = fmt.Sprintf("this checkpoint has %d operators; without --operator-uid and --operator-uid-hash kcleanup finds the one holding %s", len(ids), StateName)
	}
	return errors.Mark(errors.WithHint(errors.Newf("operator %s is not in the checkpoint (%d operators)", describeSelector(sel, hash), len(m.operators)), hint), ErrOperatorNotFound)
}

func holderHint(c *Checkpoint) string {
	if len(c.Holders) == 0 {
		return fmt.Sprintf("no operator of this checkpoint holds %s", StateName)
	}
	var b strings.Builder
	b.WriteString("operators holding " + StateName + ":")
	for _, h := range c.Holders {
		fmt.Fprintf(&b, " %s;", h.label())
	}
	return strings.TrimSuffix(b.String(), ";")
}

// ambiguous lists every holder: uid hash, parallelism, subtasks with the
// state, and the marker topics found.
func ambiguous(c *Checkpoint) error {
	var b strings.Builder
	for _, h := range c.Holders {
		topics := map[string]bool{}
		for _, s := range h.Subtasks {
			for _, m := range s.Markers {
				topics[m.Topic] = true
			}
		}
		var ts []string
		for t := range topics {
			ts = append(ts, fmt.Sprintf("%q", t))
		}
		slices.Sort(ts)
		topic := "no marker"
		if len(ts) > 0 {
			topic = "topic " + strings.Join(ts, ", ")
		}
		fmt.Fprintf(&b, "\n  uid hash %s", h.UIDHash)
		if h.UID != "" {
			fmt.Fprintf(&b, " (uid %q)", h.UID)
		}
		fmt.Fprintf(&b, ": parallelism %d, %d subtasks with the state, %s", h.Parallelism, len(h.Subtasks), topic)
	}
	return errors.Mark(errors.WithHint(errors.Newf("%d operators hold the state %s:%s", len(c.Holders), StateName, b.String()),
		"name the one to use: --operator-uid UID or --operator-uid-hash HASH"), ErrAmbiguous)
}

// Markers applies the marker rules of plan to the selected operator's
// elements: every element a versioned marker (a legacy map is refused), of
// schema version 1, each valid as a JSON marker is, and all agreeing on topic,
// topic ID and partition set (events.PlanBuilder's rules).
func (c *Checkpoint) Markers() ([]SubtaskMarker, error) {
	if c.Selected == nil {
		return nil, errors.New("no operator selected")
	}
	pb, err := events.NewPlanBuilder("checkpoint")
	if err != nil {
		return nil, err
	}
	var out []SubtaskMarker
	for _, s := range c.Selected.Subtasks {
		if len(s.Legacy) > 0 {
			return nil, errors.Mark(errors.WithHint(errors.Newf("subtask %d holds %d legacy recovery marker(s) (a Map<Integer, Long> of offsets): a legacy marker does not identify the physical topic (no topic, no topic ID), so it cannot be checked against the cluster",
				s.Index, len(s.Legacy)), "restart the job on a Flink Agents version that writes KafkaActionStateRecoveryMarker, take a new checkpoint, and use that"), ErrLegacyMarker)
		}
		for i, m := range s.Markers {
			if m.SchemaVersion != events.SchemaVersion {
				return nil, errors.Mark(errors.Newf("subtask %d, marker %d: schemaVersion %d; this build reads schema version %d", s.Index, i, m.SchemaVersion, events.SchemaVersion), ErrInvalidMarker)
			}
			em := events.Marker{Topic: m.Topic, TopicID: m.TopicID, Offsets: m.Offsets}
			if err := em.Validate(); err != nil {
				return nil, errors.Mark(errors.Wrapf(err, "subtask %d, marker %d", s.Index, i), ErrInvalidMarker)
			}
			if err := pb.Add(em); err != nil {
				return nil, errors.Mark(errors.Wrapf(err, "subtask %d, marker %d", s.Index, i), ErrInvalidMarker)
			}
			out = append(out, SubtaskMarker{Subtask: s.Index, Marker: em})
		}
	}
	return out, nil
}

func formatError(err error) error {
	var fe *FormatError
	if errors.As(err, &fe) {
		return errors.Mark(errors.WithHint(err, "the file is truncated, corrupted, not a Flink checkpoint, or written by a Flink version this reader does not know (it reads Flink 1.20 and 2.x)"), ErrFormat)
	}
	return err
}

// maxMetadataBytes bounds the _metadata read whole into memory (a job of
// 100 operators at parallelism 128 with incremental RocksDB writes ~10 MB).
const maxMetadataBytes = 1 << 30

func readAll(ctx context.Context, st Store, name string) ([]byte, error) {
	f, err := st.Open(ctx, name)
	if err != nil {
		return nil, errors.Mark(errors.Wrapf(err, "open %s", name), ErrStateFile)
	}
	defer f.Close()
	size := f.Size()
	if size < 0 || size > maxMetadataBytes {
		return nil, errors.Mark(errors.WithHint(&FormatError{File: name, Offset: 0, Expected: errorf("a metadata file of at most %d bytes, found %d", int64(maxMetadataBytes), size)},
			"a checkpoint's _metadata is kilobytes to tens of megabytes; is this the right file?"), ErrFormat)
	}
	b := make([]byte, size)
	if n, err := f.ReadAt(b, 0); n < len(b) {
		return nil, errors.Mark(errors.Wrapf(err, "read %s (%d of %d bytes)", name, n, size), ErrStateFile)
	}
	return b, nil
}
