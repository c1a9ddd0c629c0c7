package mirrorcheck

import (
	"fmt"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/worker/protocol"
)

// The classes of an Attach refusal (errors.Is).
var (
	// ErrRefused: the topic cannot be attached as it is.
	ErrRefused = errors.New("mirrorcheck: the mirror cannot be attached")
	// ErrCannotTell: the control topic cannot vouch for its boundary now.
	ErrCannotTell = errors.New("mirrorcheck: the control topic cannot tell its boundary")
)

// View is a mirror topic as the worker read it (worker.Cluster.ReadMirror):
// the job's fold of every record below the end offset captured first
// (read_committed), with the live topic's ID and settings. It is the
// protocol's view, so the apply steps and these rules read the same thing.
type View = protocol.MirrorView

func refuse(hint, format string, args ...any) error {
	return errors.WithHint(errors.Mark(errors.Newf(format, args...), ErrRefused), hint)
}

// Attach says whether v may be attached as the mirror of controlTopic,
// whose projection is st (the package doc's rules, in order); nil when it
// may. bootstrap is quoted in the hints' commands.
func Attach(st *projector.State, controlTopic string, v View, bootstrap string) error {
	if d, why := st.Degraded(); d {
		return errors.WithHint(errors.Mark(errors.Newf("control topic %s is degraded: %s", controlTopic, why), ErrCannotTell),
			"upgrade kcleanup to a version that understands every record of the control topic, then attach again")
	}
	if risk, why := st.AtRisk(); risk {
		return errors.WithHint(errors.Mark(errors.Newf("control topic %s: history at risk: %s", controlTopic, why), ErrCannotTell),
			"let a running worker repair the control topic (kcleanup doctor shows it), then attach again")
	}
	if err := OwnTopic(st, controlTopic, v.Topic); err != nil {
		return err
	}
	if err := topicProblem(v, controlTopic, bootstrap); err != nil {
		return err
	}
	return planProblem(ControlOf(st), v)
}

// OwnTopic refuses a mirror that is the control topic itself or the data
// topic it governs (ErrRefused): the mirror is a topic of its own.
func OwnTopic(st *projector.State, controlTopic, mirror string) error {
	data, _, bound := st.Binding()
	if mirror == controlTopic || bound && mirror == data {
		return refuse("name a topic of its own for the mirror, the one the Flink Agents job's kafkaActionStateCleanupControlTopic reads (kcleanup init --topic <data topic> --mirror-topic <topic> creates one)",
			"mirror topic %s is the control topic or the data topic it governs", mirror)
	}
	return nil
}

// topicProblem: rules 2 and 3.
func topicProblem(v View, controlTopic, bootstrap string) error {
	switch {
	case v.Missing:
		return refuse(fmt.Sprintf("create it with the settings the job requires: kcleanup init --topic <data topic> --mirror-topic %s "+
			"(or kafka-topics --bootstrap-server %s --create --topic %s --partitions 1 --config cleanup.policy=compact)", v.Topic, bootstrap, v.Topic),
			"mirror topic %s does not exist", v.Topic)
	}
	if err := flinkagents.CheckTopic(v.Topic, v.Partitions, v.CleanupPolicy); err != nil {
		return refuse(fmt.Sprintf("a Flink Agents job refuses it too: give it exactly one partition and cleanup.policy=compact "+
			"(kafka-configs --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config cleanup.policy=compact), "+
			"or create a new topic with kcleanup init --topic <data topic> --mirror-topic <new topic>", bootstrap, v.Topic),
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

// planProblem: rules 4 and 5.
func planProblem(c Control, v View) error {
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
		if !samePartitions(p.Offsets, boundary) {
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

func samePartitions(a, b events.Offsets) bool {
	if len(a) != len(b) {
		return false
	}
	for p := range a {
		if _, ok := b[p]; !ok {
			return false
		}
	}
	return true
}

// Control is what the mirror rules need of a control topic's projection,
// copied out of it (ControlOf), so that the mirror can be read without
// holding the projection (a worker's view serves the gate meanwhile).
type Control struct {
	// Mirror is the attached mirror (Attached false: none).
	Mirror   projector.Mirror
	Attached bool
	// DataTopic and DataTopicID are the binding (Bound false: none yet).
	DataTopic, DataTopicID string
	Bound                  bool
	Boundary               events.Offsets
	// BoundaryPlan is protocol.BoundaryPlan's plan ID, "" when there is none.
	BoundaryPlan string
}

// ControlOf copies what the mirror rules need out of st.
func ControlOf(st *projector.State) Control {
	c := Control{Boundary: st.Boundary().Clone()}
	c.Mirror, c.Attached = st.Mirror()
	c.DataTopic, c.DataTopicID, c.Bound = st.Binding()
	if op, ok := protocol.BoundaryPlan(st); ok {
		c.BoundaryPlan = op.PlanID
	}
	return c
}
