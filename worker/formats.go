package worker

import (
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/report"
)

// formatCount counts records by the format of their key.
type formatCount struct {
	kcleanup, flink, other int64
	firstFlink             int64
}

func (f *formatCount) count(d projector.Decoded, v projector.Verdict) {
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

// Format says which control format the records read so far are in.
func (p *Projection) Format() report.Format {
	switch f := p.formats; {
	case f.flink > 0 && f.kcleanup > 0:
		return report.FormatMixed
	case f.flink > 0:
		return report.FormatFlinkAgents
	case f.kcleanup > 0 || f.other > 0:
		return report.FormatKcleanup
	}
	return report.FormatNone
}

// writable refuses every new event on a control topic that holds a record
// in Flink Agents' format: the job reads that topic, and one kcleanup record
// would make its recovery fail (in a mixed one the gate cannot tell, so
// nothing may be decided there either). A topic wholly in Flink Agents'
// format is audited, gated and adopted, never written (Repair too).
func (p *Projection) writable() error {
	if p.formats.flink == 0 {
		return nil
	}
	return errors.Mark(errors.WithHint(
		errors.Newf("control topic %q holds %d record(s) in Flink Agents' control format (the first at offset %d): kcleanup never writes to a control topic a Flink Agents job reads",
			p.Topic, p.formats.flink, p.formats.firstFlink),
		"give kcleanup a control topic of its own, started from this one: kcleanup adopt --from "+p.Topic+" (docs/flink-agents.md)"), ErrBlocked)
}

// foldFlink folds a record by Flink Agents' rules while the control topic
// may be in that format (no kcleanup record read yet): the job folds every
// record of its control topic, so this fold sees every one too.
func (p *Projection) foldFlink(d projector.Decoded) {
	if p.formats.kcleanup > 0 {
		p.flink = nil
		return
	}
	if p.flink == nil {
		p.flink = flinkagents.New()
	}
	p.flink.Step(flinkagents.Record{Offset: d.Offset, Key: d.Key, Value: d.Value})
}

// Source is what the status document of the projection is built from
// (report.StatusOf). Like every read of the projection, it must run on the
// goroutine that folds into it.
func (p *Projection) Source() report.Source {
	return report.Source{ControlTopic: p.Topic, State: p.State, ReadTo: p.Next, Format: p.Format(), Flink: p.FlinkFold(), Now: time.Now()}
}

// FlinkFold is the fold of the control topic by Flink Agents' own rules
// when its records are in that format (Format() == FormatFlinkAgents), else
// nil. It is the projection's: read it under the same exclusion.
func (p *Projection) FlinkFold() *flinkagents.Fold {
	if p.Format() != report.FormatFlinkAgents {
		return nil
	}
	return p.flink
}
