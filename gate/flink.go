package gate

import (
	"fmt"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
)

// decideFlink is Decide for a control topic in Flink Agents' format: the
// verdict is the job's own (the control topic's partitions and
// cleanup.policy as the job checks them, its fold, its recovery check), and
// then the same physical check as for every control topic. kcleanup's own
// settings rules and fold do not apply: kcleanup never writes there.
// Every failure of the job's fold is ForeignFormat (cannot tell: the job
// itself cannot recover from this topic); a recovery point below the
// effective boundary is BelowBoundary with the job's words.
func (d *decision) decideFlink(fold *flinkagents.Fold) Verdict {
	c := d.f.Control
	topic := d.f.Data.Topic
	partitions := make([]int32, c.Partitions)
	for i := range partitions {
		partitions[i] = int32(i)
	}
	if err := flinkagents.CheckTopic(c.Topic, partitions, c.Configs["cleanup.policy"]); err != nil {
		d.add(ControlTopicSettings, nil, cannot+"control topic "+c.Topic+" is in Flink Agents' format, and the job refuses it: "+err.Error(), flinkHints(err)...)
	} else if err := fold.Validate(d.f.Markers); err != nil {
		d.flinkRefusal(err)
	} else {
		b, _ := fold.Effective()
		d.notes = append(d.notes, fmt.Sprintf("control topic %s is in Flink Agents' format: folded by the job's own rules, effective boundary %s", c.Topic, b))
	}
	d.physical()
	v := d.finish()
	if v.Allowed {
		b, _ := fold.Boundary(topic, d.f.Data.ID, d.f.Data.Partitions)
		v.Checked = d.checkedAgainst(b, fold.SetBy)
	}
	return v
}

func (d *decision) flinkRefusal(err error) {
	c := d.f.Control
	var fe *flinkagents.Error
	if !errors.As(err, &fe) {
		d.add(ForeignFormat, nil, cannot+err.Error())
		return
	}
	var det *Detail
	if fe.Offset >= 0 {
		det = &Detail{Records: []int64{fe.Offset}, PlanID: fe.PlanID}
	}
	switch fe.Reason {
	case flinkagents.ReasonBelowBoundary:
		hint := fmt.Sprintf("restore from a newer checkpoint or savepoint: records of %s-%d below offset %d may already be deleted", fe.Topic, fe.Partition, fe.Boundary)
		d.add(BelowBoundary, &Detail{Partition: ptr(fe.Partition), Requested: ptr(fe.Requested), Boundary: ptr(fe.Boundary), PlanID: fe.PlanID},
			fmt.Sprintf("%s (set by plan %s)", fe.Error(), fe.PlanID), hint)
	case flinkagents.ReasonMarkers:
		if len(d.f.Markers) == 0 {
			d.add(NoMarkers, nil, fmt.Sprintf("Cannot restore Kafka action state for %s: the recovery point has no marker, and a cleanup boundary is committed", d.f.Data.Topic),
				"pass the recovery point's markers for the action-state topic")
			return
		}
		d.add(MissingPartition, nil, "Cannot restore Kafka action state: "+fe.Error(), fe.Hint())
	default:
		what := "the Flink Agents job's own recovery fails on it"
		if errors.Is(fe, flinkagents.ErrCannotTell) {
			what = "kcleanup cannot tell how the Flink Agents job reads it"
		}
		d.add(ForeignFormat, det, cannot+fmt.Sprintf("control topic %s is in Flink Agents' format and %s: %s", c.Topic, what, fe.Error()), fe.Hint())
	}
}

func flinkHints(err error) []string {
	var fe *flinkagents.Error
	if errors.As(err, &fe) {
		return []string{fe.Hint()}
	}
	return nil
}

// checkedAgainst is checked for a boundary that is not a projector.State's.
func (d *decision) checkedAgainst(boundary events.Offsets, setBy func(int32) string) []Checked {
	out := []Checked{}
	for _, p := range d.f.Data.Partitions {
		c := Checked{Partition: p, Lowest: -1, LogStart: d.f.Data.Start[p], HighWatermark: d.f.Data.End[p]}
		for _, m := range d.f.Markers {
			if off, ok := m.Offsets[p]; ok && (c.Lowest < 0 || off < c.Lowest) {
				c.Lowest = off
			}
		}
		if b, ok := boundary[p]; ok {
			c.Boundary, c.PlanID = ptr(b), setBy(p)
		}
		out = append(out, c)
	}
	return out
}
