package protocol

import (
	"fmt"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
)

// The classes of an AttachMirror refusal (errors.Is).
var (
	// ErrMirrorRefused: the topic cannot be attached as it is.
	ErrMirrorRefused = errors.New("the mirror cannot be attached")
	// ErrMirrorCannotTell: the control topic cannot vouch for its boundary now.
	ErrMirrorCannotTell = errors.New("the control topic cannot tell its boundary")
)

func refuse(hint, format string, args ...any) error {
	return errors.WithHint(errors.Mark(errors.Newf(format, args...), ErrMirrorRefused), hint)
}

// AttachMirror says whether v may be attached as the mirror of controlTopic,
// whose projection is st (the package doc's rules, in order); nil when it
// may. bootstrap is quoted in the hints' commands.
func AttachMirror(st *projector.State, controlTopic string, v MirrorView, bootstrap string) error {
	if d, why := st.Degraded(); d {
		return errors.WithHint(errors.Mark(errors.Newf("control topic %s is degraded: %s", controlTopic, why), ErrMirrorCannotTell),
			"upgrade kcleanup to a version that understands every record of the control topic, then attach again")
	}
	if risk, why := st.AtRisk(); risk {
		return errors.WithHint(errors.Mark(errors.Newf("control topic %s: history at risk: %s", controlTopic, why), ErrMirrorCannotTell),
			"let a running worker repair the control topic (kcleanup doctor shows it), then attach again")
	}
	if err := MirrorOwnTopic(st, controlTopic, v.Topic); err != nil {
		return err
	}
	if err := MirrorTopicProblem(v, controlTopic, bootstrap); err != nil {
		return err
	}
	return planProblem(MirrorControlOf(st), v)
}

// MirrorOwnTopic refuses a mirror that is the control topic itself or the data
// topic it governs (ErrMirrorRefused): the mirror is a topic of its own.
func MirrorOwnTopic(st *projector.State, controlTopic, mirror string) error {
	data, _, bound := st.Binding()
	if mirror == controlTopic || bound && mirror == data {
		return refuse("name a topic of its own for the mirror, the one the Flink Agents job's kafkaActionStateCleanupControlTopic reads (kcleanup init --topic <data topic> --mirror-topic <topic> creates one)",
			"mirror topic %s is the control topic or the data topic it governs", mirror)
	}
	return nil
}

// MirrorTopicProblem: rules 2 and 3.
// MirrorTopicProblem is rules 2 and 3 of AttachMirror: the topic itself, before any plan on it.
func MirrorTopicProblem(v MirrorView, controlTopic, bootstrap string) error {
	switch {
	case v.Missing:
		return refuse(fmt.Sprintf("create it with the settings the job requires: kcleanup init --topic <data topic> --mirror-topic %s "+
			"(or kafka-topics --bootstrap-server %s --create --topic %s --partitions 1 --config cleanup.policy=compact)", v.Topic, bootstrap, v.Topic),
			"mirror topic %s does not exist", v.Topic)
	}
	if err := flinkagents.CheckTopic(v.Topic, v.Partitions, v.CleanupPolicy); err != nil {
		if len(v.Partitions) != 1 || v.Partitions[0] != 0 {
			return refuse("a Flink Agents job refuses it too; "+newMirrorHint(bootstrap, "<data topic>"), "mirror topic %s: %v", v.Topic, err)
		}
		return refuse(fmt.Sprintf("a Flink Agents job refuses it too: kafka-configs --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config cleanup.policy=compact",
			bootstrap, v.Topic),
			"mirror topic %s: %v", v.Topic, err)
	}
	if v.Fold == nil {
		return errors.AssertionFailedf("mirror topic %s: not read", v.Topic)
	}
	if err := v.Fold.Err(); err != nil {
		return refuse("the topic is not in Flink Agents' control format, or another writer broke it: a Flink Agents job cannot recover from it either; "+
			"attach an empty topic (kcleanup init --topic <data topic> --mirror-topic <new topic>) or fix this one",
			"mirror topic %s: the Flink Agents job's fold fails: %v", v.Topic, err)
	}
	return nil
}

// newMirrorHint is the way out of a mirror topic with more than one
// partition: Kafka adds partitions but never removes them, so no config
// fixes it; a new one-partition topic, attached, does.
func newMirrorHint(bootstrap, dataTopic string) string {
	return fmt.Sprintf("a topic's partitions cannot be reduced: create a one-partition topic and attach it instead "+
		"(kafka-topics --bootstrap-server %s --create --topic <new topic> --partitions 1 --config cleanup.policy=compact, "+
		"or kcleanup init --topic %s --mirror-topic <new topic>, which also sets the durability settings; "+
		"then kcleanup mirror attach <new topic> --topic %s --reason …), and point the job's kafkaActionStateCleanupControlTopic at it",
		bootstrap, dataTopic, dataTopic)
}

// planProblem: rules 4 and 5.
func planProblem(c MirrorControl, v MirrorView) error {
	name, topicID, bound := c.DataTopic, c.DataTopicID, c.Bound
	boundary := c.Boundary
	for _, o := range v.Fold.Operations() {
		p := o.Plan
		if !bound {
			return refuse("adopt its boundary first (kcleanup adopt --from "+v.Topic+"), then attach it",
				"mirror topic %s holds plan %s (offset %d) but the control topic governs no data topic yet: the job would refuse recovery points kcleanup allows",
				v.Topic, p.PlanID, o.First)
		}
		if p.Topic != name || p.TopicID != topicID {
			return refuse("attach a mirror of this data topic's incarnation only: an empty topic (kcleanup init --topic <data topic> --mirror-topic <new topic>)",
				"mirror topic %s holds plan %s (offset %d) for topic %s (topic ID %s), but the control topic governs %s (topic ID %s): the job would refuse to recover",
				v.Topic, p.PlanID, o.First, p.Topic, p.TopicID, name, topicID)
		}
		if !p.Offsets.SamePartitions(boundary) {
			return refuse("attach an empty topic (kcleanup init --topic <data topic> --mirror-topic <new topic>)",
				"mirror topic %s holds plan %s (offset %d) for partitions %v, but kcleanup's boundary covers %v: the job would refuse to recover (partition set)",
				v.Topic, p.PlanID, o.First, p.Offsets.Partitions(), boundary.Partitions())
		}
		for _, part := range p.Offsets.Partitions() {
			if p.Offsets[part] > boundary[part] {
				return refuse("adopt it first, so kcleanup's boundary includes it (kcleanup adopt --from "+v.Topic+"), then attach it",
					"mirror topic %s holds plan %s (offset %d) above kcleanup's boundary on partition %d (%d > %d): the job would refuse recovery points kcleanup allows",
					v.Topic, p.PlanID, o.First, part, p.Offsets[part], boundary[part])
			}
		}
	}
	if len(v.Fold.Operations()) > 0 {
		if _, err := v.Fold.Effective(); err != nil {
			return refuse("attach an empty topic (kcleanup init --topic <data topic> --mirror-topic <new topic>) or fix this one",
				"mirror topic %s: a Flink Agents job cannot recover from it: %v", v.Topic, err)
		}
	}
	if len(boundary) > 0 {
		if c.BoundaryPlan == "" {
			return refuse("apply a plan made from a recovery point at or above the boundary; then attach",
				"kcleanup's boundary %s is not the plan of any one committed operation, so no single Flink Agents record can carry it to mirror %s", boundary, v.Topic)
		}
	}
	return nil
}

// MirrorControl is what the mirror rules need of a control topic's projection,
// copied out of it (MirrorControlOf), so that the mirror can be read without
// holding the projection (a worker's view serves the gate meanwhile).
type MirrorControl struct {
	// Mirror is the attached mirror (Attached false: none).
	Mirror   projector.Mirror
	Attached bool
	// DataTopic and DataTopicID are the binding (Bound false: none yet).
	DataTopic, DataTopicID string
	Bound                  bool
	Boundary               events.Offsets
	// BoundaryPlan is BoundaryPlan's plan ID, "" when there is none.
	BoundaryPlan string
}

// MirrorControlOf copies what the mirror rules need out of st.
func MirrorControlOf(st *projector.State) MirrorControl {
	c := MirrorControl{Boundary: st.Boundary().Clone()}
	c.Mirror, c.Attached = st.Mirror()
	c.DataTopic, c.DataTopicID, c.Bound = st.Binding()
	if op, ok := BoundaryPlan(st); ok {
		c.BoundaryPlan = op.PlanID
	}
	return c
}
