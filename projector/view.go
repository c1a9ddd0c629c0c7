package projector

import (
	"slices"

	"github.com/kcleanup/kcleanup/projector/flinkagents"
)

// View is the one pure read of a control topic: kcleanup's fold (State),
// and beside it what the same records say to a reader that must not take
// the fold's word alone — the format their keys are in, their fold by Flink
// Agents' own rules while the topic may be in that format, and the rejected
// records that are another tool's control records. Every reader (the CLI, a
// worker's live view, the gate's facts, the status document) folds through
// a View; nothing classifies a record again outside it.
type View struct {
	State *State

	formats formatCount
	// flink folds the records by Flink Agents' rules while none of them is
	// kcleanup's; nil once one is.
	flink *flinkagents.Fold
	// foreign lists the rejected records that looked like another tool's
	// control format as they were read: the fold keeps no raw values, and
	// the gate must name what it found.
	foreign []ForeignRecord
}

// NewView starts an empty view; opts configure its State.
func NewView(opts ...Option) *View { return &View{State: New(opts...)} }

// maxForeign bounds the foreign records a view remembers.
const maxForeign = 10000

// Step folds one record, in offset order, into every part of the view.
func (v *View) Step(r Record) Verdict { return v.StepDecoded(Decode(r)) }

// StepDecoded is Step for a record decoded ahead (Decode).
func (v *View) StepDecoded(d Decoded) Verdict { return v.classify(d, v.State.StepDecoded(d)) }

// StepDecodedLean is StepDecoded without the verdict's detail text, for
// readers that never show it (State.StepDecodedLean).
func (v *View) StepDecodedLean(d Decoded) Verdict { return v.classify(d, v.State.StepDecodedLean(d)) }

// classify updates the parts beside the fold with d and its verdict vd.
func (v *View) classify(d Decoded, vd Verdict) Verdict {
	v.formats.count(d, vd)
	v.foldFlink(d)
	if vd.Outcome == Rejected && len(v.foreign) < maxForeign &&
		(vd.Reason == ReasonBadKey || vd.Reason == ReasonMalformed || vd.Reason == ReasonTombstone) {
		if f, ok := Foreign(d.Offset, d.Key, d.Value); ok {
			v.foreign = append(v.foreign, f)
		}
	}
	return vd
}

// foldFlink folds a record by Flink Agents' rules while the control topic
// may be in that format (no kcleanup record read yet): the job folds every
// record of its control topic, so this fold sees every one too.
func (v *View) foldFlink(d Decoded) {
	if v.formats.kcleanup > 0 {
		v.flink = nil
		return
	}
	if v.flink == nil {
		v.flink = flinkagents.New()
	}
	v.flink.Step(flinkagents.Record{Offset: d.Offset, Key: d.Key, Value: d.Value})
}

// Format says which control format the records read so far are in.
func (v *View) Format() Format {
	switch f := v.formats; {
	case f.flink > 0 && f.kcleanup > 0:
		return FormatMixed
	case f.flink > 0:
		return FormatFlinkAgents
	case f.kcleanup > 0 || f.other > 0:
		return FormatKcleanup
	}
	return FormatNone
}

// FlinkRecords is how many records are keyed in Flink Agents' format, and
// the offset of the first (a writer refuses such a topic, naming it).
func (v *View) FlinkRecords() (n, first int64) { return v.formats.flink, v.formats.firstFlink }

// Counts is how many records read so far are kcleanup's, keyed in Flink
// Agents' format, or neither (the shape of a control topic: gate.Shape).
func (v *View) Counts() (kcleanup, flinkAgents, other int64) {
	return v.formats.kcleanup, v.formats.flink, v.formats.other
}

// Flink is the fold of the control topic by Flink Agents' own rules when
// its records are in that format (Format() == FormatFlinkAgents), else nil.
func (v *View) Flink() *flinkagents.Fold {
	if v.Format() != FormatFlinkAgents {
		return nil
	}
	return v.flink
}

// Foreign returns the rejected records read so far that look like another
// tool's control format, in log order.
func (v *View) Foreign() []ForeignRecord { return slices.Clone(v.foreign) }

// formatCount counts records by the format of their key.
type formatCount struct {
	kcleanup, flink, other int64
	firstFlink             int64
}

func (f *formatCount) count(d Decoded, v Verdict) {
	switch {
	case flinkagents.IsPlanIDKey(d.Key):
		if f.flink == 0 {
			f.firstFlink = d.Offset
		}
		f.flink++
	case v.Event != "":
		f.kcleanup++
	default:
		f.other++
	}
}
