package events

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/go-json-experiment/json/jsontext"
)

// markerFields are the fields of a marker, in the order Encode writes them: the four of
// every marker, then the four of its Source, which come together or not at all.
var markerFields = []string{"schemaVersion", "topic", "topicId", "offsets", "checkpointId", "operator", "parallelism", "subtask"}

// operatorFields are the fields of a marker's operator, in the order Encode writes them.
var operatorFields = []string{"uid", "uidHash"}

// ParseMarkers reads one marker object, or a non-empty JSON array of them,
// as strictly as ParsePlan reads a plan.
func ParseMarkers(data []byte) ([]Marker, error) {
	var ms []Marker
	err := ReadMarkers(bytes.NewReader(data), func(_ int, m Marker) error {
		ms = append(ms, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ms, nil
}

// ReadMarkers reads what ParseMarkers reads from r, one marker at a time:
// each is decoded, checked and handed to each (with its index in the array)
// before the next one is read, so a large markers file is never held whole.
// A UTF-8 byte order mark at the start is skipped (editors on Windows write
// one). An error of each stops the reading and is returned as it is.
func ReadMarkers(r io.Reader, each func(i int, m Marker) error) error {
	return ReadMarkersReusing(r, func(i int, m Marker) (bool, error) { return true, each(i, m) })
}

// ReadMarkersReusing is ReadMarkers for a reader that keeps few markers:
// when each returns keep false, the next marker's offsets are decoded into
// the map of this one (emptied first), so that reading a large file makes
// no garbage map per marker (PlanBuilder keeps only the first marker).
func ReadMarkersReusing(r io.Reader, each func(i int, m Marker) (keep bool, err error)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if bom, err := br.Peek(3); err == nil && bytes.Equal(bom, utf8BOM) {
		br.Discard(3)
	}
	// This reader only finds where each marker ends; decodeMarker checks
	// it (duplicates and UTF-8 too), with paths inside the marker.
	dec := jsontext.NewDecoder(br, jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	k := dec.PeekKind()
	switch k {
	case '{':
		raw, err := dec.ReadValue()
		if err != nil {
			return errors.Newf("invalid markers: %s", streamError(dec, err).Error())
		}
		m, ferr := decodeMarker(raw, nil)
		if ferr != nil {
			return errors.Newf("invalid marker: %s", ferr.Error())
		}
		if err := endOfStream(dec); err != nil {
			return err
		}
		_, err = each(0, m)
		return err
	case '[':
	case 0:
		_, err := dec.ReadValue()
		return errors.Newf("invalid markers: %s", streamError(dec, err).Error())
	default:
		if _, err := dec.ReadValue(); err != nil {
			return errors.Newf("invalid markers: %s", streamError(dec, err).Error())
		}
		return errors.Newf("invalid markers: %s", wrongKind("", kindOf(k), "a marker object or an array of them").Error())
	}
	if _, err := dec.ReadToken(); err != nil {
		return errors.Newf("invalid markers: %s", streamError(dec, err).Error())
	}
	var reuse Offsets
	i := 0
	for ; ; i++ {
		k := dec.PeekKind()
		if k == ']' {
			break
		}
		raw, err := dec.ReadValue()
		if err != nil {
			return errors.Newf("invalid marker %d: %s", i, streamError(dec, err).Error())
		}
		if k != '{' {
			return errors.Newf("invalid marker %d: %s", i, wrongKind("", kindOf(k), "a marker object").Error())
		}
		m, ferr := decodeMarker(raw, reuse)
		if ferr != nil {
			return errors.Newf("invalid marker %d: %s", i, ferr.Error())
		}
		keep, err := each(i, m)
		if err != nil {
			return err
		}
		reuse = nil
		if !keep {
			reuse = m.Offsets
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return errors.Newf("invalid markers: %s", streamError(dec, err).Error())
	}
	if err := endOfStream(dec); err != nil {
		return err
	}
	if i == 0 {
		return errors.New("invalid markers: the array is empty: expected at least one marker")
	}
	return nil
}

// streamError words an error of the markers stream's reader.
func streamError(dec *jsontext.Decoder, err error) *fieldError {
	if err == io.EOF && dec.InputOffset() == 0 {
		return &fieldError{Reason: "is empty: expected a marker object or an array of them"}
	}
	return syntaxError("", err, dec.InputOffset()+int64(len(dec.UnreadBuffer())))
}

// endOfStream checks that nothing but whitespace follows the markers.
func endOfStream(dec *jsontext.Decoder) error {
	if _, err := dec.ReadToken(); err != io.EOF {
		return errors.New("invalid markers: the document has trailing content after the JSON value")
	}
	return nil
}

// markerJSON is one marker object as decoded; each field checks itself.
type markerJSON struct {
	SchemaVersion version          `json:"schemaVersion"`
	Topic         str[topicRule]   `json:"topic"`
	TopicID       str[topicIDRule] `json:"topicId"`
	Offsets       offsetsField     `json:"offsets"`
	CheckpointID  count            `json:"checkpointId"`
	Operator      operatorField    `json:"operator"`
	Parallelism   count            `json:"parallelism"`
	Subtask       count            `json:"subtask"`
}

// count is an optional JSON integer field of 0 or more, in canonical form (no sign,
// fraction, exponent or leading zero).
type count struct {
	v   int64
	set bool
}

func (f *count) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if f.set {
		return twice
	}
	f.set = true
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if v.Kind() != '0' {
		return atValue(dec, wrongKind("", kindOf(v.Kind()), "an integer of 0 or more"))
	}
	n, ok := parseCount(v)
	if !ok {
		return atValue(dec, fieldErrorf("", "is %s: expected an integer of 0 or more, without fraction, exponent or leading zero", v))
	}
	f.v = n
	return nil
}

// operatorField is a marker's operator: {"uid":…,"uidHash":…}, one of them at least.
type operatorField struct {
	uid, uidHash string
	set          bool
}

type operatorJSON struct {
	UID     str[anyText]     `json:"uid"`
	UIDHash str[uidHashRule] `json:"uidHash"`
}

func (f *operatorField) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if f.set {
		return twice
	}
	f.set = true
	raw, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if raw.Kind() != '{' {
		return atValue(dec, wrongKind("", kindOf(raw.Kind()), `an object {"uid":…,"uidHash":…}`))
	}
	var w operatorJSON
	if ferr := decodeStrict(raw, &w, operatorFields); ferr != nil {
		return atValue(dec, ferr)
	}
	if !w.UID.set && !w.UIDHash.set {
		return atValue(dec, fieldErrorf("", "names no operator: expected its uid, its uidHash or both"))
	}
	if w.UID.set && w.UID.v == "" {
		return atValue(dec, fieldErrorf("uid", "is empty: expected the operator's uid, or leave it out"))
	}
	f.uid, f.uidHash = w.UID.v, w.UIDHash.v
	return nil
}

// uidHashRule: Flink's operator ID, 16 bytes as 32 lowercase hex digits.
type uidHashRule struct{}

func (uidHashRule) check(s string) *fieldError {
	if !isUIDHash(s) {
		return fieldErrorf("", "is %q: expected 32 lowercase hex digits (Flink's operator ID)", s)
	}
	return nil
}

func isUIDHash(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// decodeMarker reads one marker object strictly.
func decodeMarker(raw []byte, reuse Offsets) (Marker, *fieldError) {
	var w markerJSON
	w.Offsets.reuse = reuse
	if ferr := decodeStrict(raw, &w, markerFields); ferr != nil {
		return Marker{}, ferr
	}
	for i, set := range [...]bool{w.SchemaVersion.set, w.Topic.set, w.TopicID.set, w.Offsets.set} {
		if !set {
			return Marker{}, missingField(markerFields[i])
		}
	}
	m := Marker{Topic: w.Topic.v, TopicID: w.TopicID.v, Offsets: w.Offsets.v}
	present := [...]bool{w.CheckpointID.set, w.Operator.set, w.Parallelism.set, w.Subtask.set}
	if present == [4]bool{} {
		return m, nil
	}
	given := markerFields[4+slices.Index(present[:], true)]
	for i, set := range present {
		if !set {
			return Marker{}, fieldErrorf(markerFields[4+i], "is missing, but %s is given: checkpointId, operator, parallelism and subtask come together (kcleanup markers writes all four) or not at all", given)
		}
	}
	m.Source = &MarkerSource{CheckpointID: w.CheckpointID.v, OperatorUID: w.Operator.uid, OperatorUIDHash: w.Operator.uidHash,
		Parallelism: int32(min(w.Parallelism.v, MaxParallelism+1)), Subtask: int32(min(w.Subtask.v, MaxParallelism+1))}
	if ferr := m.Source.check(); ferr != nil {
		return Marker{}, ferr
	}
	return m, nil
}

// check checks what the JSON types do not: the ranges, and the operator named.
func (s *MarkerSource) check() *fieldError {
	switch {
	case s.CheckpointID < 0:
		return fieldErrorf("checkpointId", "is %d: expected 0 or more", s.CheckpointID)
	case s.OperatorUID == "" && s.OperatorUIDHash == "":
		return fieldErrorf("operator", "names no operator: expected its uid, its uidHash or both")
	case s.OperatorUIDHash != "" && !isUIDHash(s.OperatorUIDHash):
		return fieldErrorf("operator.uidHash", "is %q: expected 32 lowercase hex digits (Flink's operator ID)", s.OperatorUIDHash)
	case s.Parallelism < 1 || s.Parallelism > MaxParallelism:
		return fieldErrorf("parallelism", "is %s: expected 1 to %d", parallelismText(s.Parallelism), MaxParallelism)
	case s.Subtask < 0 || s.Subtask >= s.Parallelism:
		return fieldErrorf("subtask", "is %s: expected 0 to %d, below the parallelism %d", parallelismText(s.Subtask), s.Parallelism-1, s.Parallelism)
	}
	return nil
}

// parallelismText prints a parallelism or subtask clipped to MaxParallelism+1 as decoded.
func parallelismText(v int32) string {
	if v > MaxParallelism {
		return "above " + strconv.Itoa(MaxParallelism)
	}
	return strconv.Itoa(int(v))
}

// Validate checks a marker built in code as strictly as ParseMarkers does.
func (m Marker) Validate() error {
	if ferr := m.check(); ferr != nil {
		return errors.Newf("invalid marker: %s", ferr.Error())
	}
	return nil
}

func (m Marker) check() *fieldError {
	if ferr := checkTopic("topic", m.Topic); ferr != nil {
		return ferr
	}
	if ferr := checkTopicID("topicId", m.TopicID); ferr != nil {
		return ferr
	}
	if ferr := validateOffsets("offsets", m.Offsets); ferr != nil {
		return ferr
	}
	if m.Source != nil {
		return m.Source.check()
	}
	return nil
}

// Encode writes the marker as compact JSON, partitions in ascending order.
func (m Marker) Encode() []byte {
	b := []byte(`{"schemaVersion":`)
	b = strconv.AppendInt(b, SchemaVersion, 10)
	b = append(b, `,"topic":`...)
	b = appendString(b, m.Topic)
	b = append(b, `,"topicId":`...)
	b = appendString(b, m.TopicID)
	b = append(b, `,"offsets":`...)
	b = appendOffsets(b, m.Offsets, "")
	if s := m.Source; s != nil {
		b = append(b, `,"checkpointId":`...)
		b = strconv.AppendInt(b, s.CheckpointID, 10)
		b = append(b, `,"operator":{`...)
		if s.OperatorUID != "" {
			b = append(b, `"uid":`...)
			b = appendString(b, s.OperatorUID)
			if s.OperatorUIDHash != "" {
				b = append(b, ',')
			}
		}
		if s.OperatorUIDHash != "" {
			b = append(b, `"uidHash":`...)
			b = appendString(b, s.OperatorUIDHash)
		}
		b = append(b, `},"parallelism":`...)
		b = strconv.AppendInt(b, int64(s.Parallelism), 10)
		b = append(b, `,"subtask":`...)
		b = strconv.AppendInt(b, int64(s.Subtask), 10)
	}
	return append(b, '}')
}

// BuildPlan makes the plan of one recovery point from the markers of all its
// subtasks: they must agree on topic, topic ID and partition set, and the
// plan offset of each partition is the minimum over the markers (the oldest
// record any subtask still needs). Markers that say where they were read
// (Source) must be every subtask's of one checkpoint (CheckSubtasks); the
// source never enters the plan or its ID.
func BuildPlan(recoveryPoint string, markers []Marker) (Plan, error) {
	b, err := NewPlanBuilder(recoveryPoint)
	if err != nil {
		return Plan{}, err
	}
	for _, m := range markers {
		if err := b.Add(m); err != nil {
			return Plan{}, err
		}
	}
	return b.Plan()
}

// PlanBuilder is BuildPlan one marker at a time, with the same checks and
// errors (markers are numbered in the order they are added). With
// ReadMarkers it builds the plan of a markers file of any size while
// holding one marker and the running minimum, never the whole file.
type PlanBuilder struct {
	recoveryPoint string
	n             int    // markers added
	first         Marker // marker 0: topic, topic ID and partition set
	mins          minimum
	dense         bool
	subtasks      subtasks // which checkpoint and subtask each marker says it is from
	err           error    // the first error of Add: the plan is refused
}

// NewPlanBuilder starts the plan of a recovery point (checked first, as
// BuildPlan does).
func NewPlanBuilder(recoveryPoint string) (*PlanBuilder, error) {
	if ferr := checkRecoveryPoint("sourceRecoveryPoint", recoveryPoint); ferr != nil {
		return nil, errors.Newf("cannot build a plan: recovery point: %s", ferr.Reason)
	}
	return &PlanBuilder{recoveryPoint: recoveryPoint}, nil
}

// Add takes the next marker into the plan. After an error the plan is
// refused: Add and Plan return that error again.
func (b *PlanBuilder) Add(m Marker) error {
	if b.err != nil {
		return b.err
	}
	b.err = b.add(m)
	return b.err
}

func (b *PlanBuilder) add(m Marker) error {
	i := b.n
	b.n++
	if i == 0 {
		if ferr := m.check(); ferr != nil {
			return errors.Newf("cannot build a plan: marker 0: %s", ferr.Error())
		}
		b.first = m
		b.mins, b.dense = newMinimum(m.Offsets)
		return errors.Wrap(b.subtasks.add(i, m.Source), "cannot build a plan")
	}
	first := b.first
	if m.Topic != first.Topic {
		return errors.Newf("cannot build a plan: marker %d names topic %q but marker 0 names %q: expected one topic", i, m.Topic, first.Topic)
	}
	if m.TopicID != first.TopicID {
		return errors.Newf("cannot build a plan: marker %d names topic ID %q but marker 0 names %q: expected one topic incarnation", i, m.TopicID, first.TopicID)
	}
	if len(m.Offsets) != len(first.Offsets) {
		return partitionSetError(i, m.Offsets, first.Offsets)
	}
	for p, off := range m.Offsets {
		if off < 0 {
			return errors.Newf("cannot build a plan: marker %d: partition %d has offset %d: expected an offset of 0 or more", i, p, off)
		}
		// Equal lengths plus every partition known means equal sets.
		if !b.mins.lower(p, off, b.dense) {
			return partitionSetError(i, m.Offsets, first.Offsets)
		}
	}
	return errors.Wrap(b.subtasks.add(i, m.Source), "cannot build a plan")
}

// SubtasksChecked says whether the markers added say which checkpoint, operator and subtask
// they are from, so that Plan checks that they are every subtask's of one checkpoint; when
// they do not, completeness cannot be checked and the caller warns (CheckSubtasks).
func (b *PlanBuilder) SubtasksChecked() bool { return b.subtasks.checked() }

// Plan is the plan of the markers added.
func (b *PlanBuilder) Plan() (Plan, error) {
	if b.err != nil {
		return Plan{}, b.err
	}
	if b.n == 0 {
		return Plan{}, errors.New("cannot build a plan: no markers: expected the markers of every subtask of the recovery point")
	}
	if err := b.subtasks.complete(); err != nil {
		return Plan{}, errors.Wrap(err, "cannot build a plan")
	}
	offsets := b.mins.offsets(b.first.Offsets, b.dense)
	return Plan{
		PlanID:              ComputePlanID(b.recoveryPoint, b.first.Topic, b.first.TopicID, offsets),
		SourceRecoveryPoint: b.recoveryPoint,
		Topic:               b.first.Topic,
		TopicID:             b.first.TopicID,
		Offsets:             offsets,
	}, nil
}

// minimum tracks the running minimum per partition. When the partitions are
// exactly 0..n-1 (the usual case) it indexes a slice instead of hashing, which
// makes BuildPlan over many markers several times faster.
type minimum struct {
	slice []int64 // dense: slice[p]
	m     Offsets // sparse
}

func newMinimum(first Offsets) (minimum, bool) {
	n := len(first)
	dense := true
	for p := range first {
		if int(p) >= n { // p >= 0 was validated; n distinct values below n are exactly 0..n-1
			dense = false
			break
		}
	}
	if !dense {
		return minimum{m: first.Clone()}, false
	}
	s := make([]int64, n)
	for p, off := range first {
		s[p] = off
	}
	return minimum{slice: s}, true
}

// lower records off for p if it is lower; false when p is not a partition
// of the first marker.
func (mn minimum) lower(p int32, off int64, dense bool) bool {
	if dense {
		if p < 0 || int(p) >= len(mn.slice) {
			return false
		}
		if off < mn.slice[p] {
			mn.slice[p] = off
		}
		return true
	}
	cur, ok := mn.m[p]
	if !ok {
		return false
	}
	if off < cur {
		mn.m[p] = off
	}
	return true
}

func (mn minimum) offsets(first Offsets, dense bool) Offsets {
	if !dense {
		return mn.m
	}
	o := make(Offsets, len(mn.slice))
	for p, off := range mn.slice {
		o[int32(p)] = off
	}
	return o
}

// partitionSetError names what marker i lacks and has extra, compared with
// marker 0, listing at most a few partitions of each.
func partitionSetError(i int, got, want Offsets) error {
	var missing, extra []int32
	for _, p := range want.Partitions() {
		if _, ok := got[p]; !ok {
			missing = append(missing, p)
		}
	}
	for _, p := range got.Partitions() {
		if _, ok := want[p]; !ok {
			extra = append(extra, p)
		}
	}
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, "lacks partitions "+listPartitions(missing)+" that marker 0 has")
	}
	if len(extra) > 0 {
		parts = append(parts, "has partitions "+listPartitions(extra)+" that marker 0 lacks")
	}
	return errors.Newf("cannot build a plan: marker %d %s: expected every marker to cover the same partitions", i, errors.Safe(strings.Join(parts, " and ")))
}

func listPartitions(ps []int32) string {
	const show = 10
	var b strings.Builder
	for i, p := range ps {
		if i == show {
			fmt.Fprintf(&b, " and %d more", len(ps)-show)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(int(p)))
	}
	return b.String()
}
