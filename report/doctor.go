package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
)

// DoctorFacts is what `kcleanup doctor` read from the cluster, and nothing
// else: Diagnose judges it. The reader gathers only what the answers so far
// make relevant (a missing control topic is not projected), so a zero
// field can mean "not read"; the flags below say which parts were.
type DoctorFacts struct {
	// Asked is the data topic given (--topic), "" when the control topic
	// is to say it; ControlTopic is the control topic checked and
	// ControlNamed whether it was named (--control-topic), not derived.
	Asked, ControlTopic string
	ControlNamed        bool
	Bootstrap           string
	// Now and StuckAfter tell a stuck operation from a pending one.
	Now        time.Time
	StuckAfter time.Duration
	// Brokers are the brokers' own checks (DeleteRecords, topic IDs).
	Brokers []protocol.Finding

	// The control topic. ControlMissing: it does not exist; then
	// DataMissing says the asked data topic does not exist either, Typos are
	// the nearest names of the missing one (the data topic's when
	// DataMissing), and Elsewhere is the other control topic's refusal
	// (protocol.ErrGovernedElsewhere) when one governs the data topic.
	ControlMissing, DataMissing bool
	Typos                       []string
	Elsewhere                   error
	// ControlInfo is the control topic as described; NotControl why its
	// shape (or its records) say it is no control topic (gate.Shape).
	ControlInfo protocol.Topic
	NotControl  error
	// Status is the projection's status document (nil: not projected, the
	// topic has more than one partition), with operations the tombstone
	// watch blocks marked; Mirror the attached mirror's standing, if one is.
	Status *Status
	Mirror *DoctorMirror
	// Governance is the one-governor rule's refusal
	// (protocol.ErrGovernedElsewhere) for an existing control topic.
	Governance error

	// The data topic: DataRead says it was described (DataInfo), or found
	// missing (DataGone).
	DataRead bool
	DataGone bool
	DataInfo protocol.Topic
	// Tombstones: the scan of the data topic from TombstonesFrom, when
	// TombstonesScanned, or why the broker refused it (TombstonesDenied).
	TombstonesScanned bool
	TombstonesFrom    events.Offsets
	Tombstones        protocol.TombstoneScan
	TombstonesDenied  error
	// Under a no-tombstones declaration: the findings naming the partitions it spared
	// (protocol.DeclaredFindings), and whether it left nothing to read.
	TombstonesDeclared    []protocol.Finding
	TombstonesNothingRead bool
}

// DoctorMirror is the attached Flink Agents mirror as doctor read it: its
// standing and its configs (nil when unread).
type DoctorMirror struct {
	Assessment protocol.MirrorAssessment
	Configs    map[string]string
}

// DoctorTopic is the data topic doctor checks: the one asked for, else the
// one the control topic's binding names, else (a control topic in Flink
// Agents' format) the topic of its first plan; "" when none says.
func DoctorTopic(asked string, st *Status) string {
	switch {
	case asked != "":
		return asked
	case st == nil:
		return ""
	case st.Topic != "":
		return st.Topic
	case FlinkFormat(st) && st.FlinkAgents != nil && len(st.FlinkAgents.Plans) > 0:
		return st.FlinkAgents.Plans[0].Topic
	}
	return ""
}

// FlinkFormat: a control topic in Flink Agents' format (wholly or in part),
// whose settings and fold rules are the job's, not kcleanup's.
func FlinkFormat(st *Status) bool {
	return st != nil && (st.Format == projector.FormatFlinkAgents || st.Format == projector.FormatMixed)
}

// Diagnose is doctor's judgement of the facts: one finding per check, in
// the order brokers, control topic (or what stands in its place),
// projection, data topic, tombstones. Pure: the same facts give the same
// findings.
func Diagnose(f DoctorFacts) []protocol.Finding {
	out := append([]protocol.Finding(nil), f.Brokers...)
	topic := DoctorTopic(f.Asked, f.Status)
	controlSubject := "control topic " + f.ControlTopic
	asFinding := func(err error) protocol.Finding {
		return protocol.Finding{Severity: protocol.Block, Subject: controlSubject,
			Message: err.Error(), Hint: strings.Join(errors.GetAllHints(err), "; ")}
	}
	switch {
	case f.ControlMissing && f.DataMissing:
		out = append(out, protocol.Finding{Severity: protocol.Block, Subject: "data topic " + f.Asked,
			Message: "no topic " + f.Asked + " on the cluster", Hint: strings.Join(f.Typos, "; ")})
	case f.ControlMissing:
		// Most often a typo: the nearest names, and "create it" only for a data topic that
		// exists and was never cleaned.
		hint := "if cleanup never ran for the data topic, create its control topic: kcleanup init --topic <data topic>"
		if f.Asked != "" && !f.ControlNamed {
			hint = "create it: kcleanup init --topic " + f.Asked
		}
		if f.ControlNamed {
			hint = strings.Join(append(append([]string(nil), f.Typos...), hint), "; ")
		}
		msg := "does not exist"
		if f.Elsewhere != nil {
			// The boundary may be kept under another name: say which, as every writer does.
			msg, hint = f.Elsewhere.Error(), strings.Join(errors.GetAllHints(f.Elsewhere), "; ")
		}
		out = append(out, protocol.Finding{Severity: protocol.Block, Subject: controlSubject, Message: msg, Hint: hint})
	case f.NotControl != nil:
		// A topic of another shape is never read as a control topic (gate.Shape): one finding
		// says what it looks like, instead of its settings judged as a control topic's.
		out = append(out, asFinding(f.NotControl))
	case FlinkFormat(f.Status):
		// Not kcleanup's topic: its settings and fold rules do not apply.
		out = append(out, CheckFlinkControlTopic(f.ControlInfo, *f.Status)...)
	default:
		out = append(out, CheckControlTopic(f.ControlInfo, topic, f.ControlInfo.Replicas, f.Bootstrap)...)
		out = append(out, CheckControlTopicDurability(f.ControlInfo, f.Bootstrap)...)
		if f.Status != nil {
			out = append(out, CheckProjection(*f.Status, f.Now, f.StuckAfter)...)
			out = append(out, CheckClocks(*f.Status)...)
		}
		if f.Mirror != nil {
			out = append(out, MirrorFindings(f.Mirror.Assessment, f.Mirror.Configs, f.Bootstrap)...)
		}
		// One topic incarnation, one control topic, under any name: each of two is blind to the
		// other's boundary, and an unbound one beside one that governs is a forgotten
		// --control-topic (protocol.Governance, the rule every writer obeys).
		if f.Governance != nil {
			out = append(out, asFinding(f.Governance))
		}
	}

	if topic == "" {
		return append(out, protocol.Finding{Severity: protocol.Warn, Subject: "data topic",
			Message: fmt.Sprintf("not checked: control topic %s governs no topic yet", f.ControlTopic),
			Hint:    "give --topic TOPIC to check the data topic too"})
	}
	if f.DataGone {
		return append(out, protocol.Finding{Severity: protocol.Block, Subject: "data topic " + topic, Message: "does not exist",
			Hint: "check the name (--topic); a control topic governs the topic it was bound to by its first plan"})
	}
	if !f.DataRead {
		return out
	}
	out = append(out, protocol.CheckDataTopic(f.DataInfo, f.Bootstrap)...)
	if f.Status != nil {
		out = append(out, CheckBinding(*f.Status, f.DataInfo)...)
	}
	switch {
	case f.TombstonesDenied != nil:
		out = append(out, protocol.Finding{Severity: protocol.Warn, Subject: "data topic " + topic,
			Message: "cannot read it for tombstones: " + f.TombstonesDenied.Error(), Hint: strings.Join(errors.GetAllHints(f.TombstonesDenied), "; ")})
	case f.TombstonesScanned:
		var boundary events.Offsets
		if f.Status != nil {
			boundary = f.Status.Boundary
		}
		fs := protocol.TombstoneFindings(topic, boundary, f.TombstonesFrom, f.Tombstones)
		if len(f.TombstonesDeclared) > 0 {
			if len(fs) == 1 && fs[0].Severity == protocol.OK && f.TombstonesNothingRead {
				fs = nil // nothing was read: "no tombstone found" would claim a read
			}
			fs = append(fs, f.TombstonesDeclared...)
		}
		out = append(out, fs...)
	}
	return out
}
