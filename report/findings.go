package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/topicconfig"
)

// CheckControlTopicDurability warns when a replicated control topic lets a
// write be acknowledged by a single replica: docs/design.md §4 asks for
// min.insync.replicas of at least 2 with three or more replicas.
func CheckControlTopicDurability(info protocol.Topic, bootstrap string) []protocol.Finding {
	if info.Replicas < 3 || info.Configs["min.insync.replicas"] != "1" {
		return nil
	}
	return []protocol.Finding{finding(protocol.Warn, "control topic "+info.Name,
		fmt.Sprintf("has %d replicas but min.insync.replicas=1: one broker's loss could lose a committed decision", info.Replicas),
		fmt.Sprintf("kafka-configs --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config min.insync.replicas=2",
			bootstrap, info.Name))}
}

// CheckBinding compares the data topic a control topic governs (st.Topic,
// st.TopicID, empty until the first accepted PLANNED) with the live topic.
// A different ID means the topic was deleted and recreated since: every
// plan for it will be rejected, and the old boundary says nothing about the
// new incarnation.
func CheckBinding(st Status, live protocol.Topic) []protocol.Finding {
	subject := "data topic " + live.Name
	switch {
	case st.Topic == "":
		return []protocol.Finding{finding(protocol.OK, subject, fmt.Sprintf("control topic %s governs no topic yet: the first accepted plan binds it", st.ControlTopic), "")}
	case st.Topic != live.Name:
		return []protocol.Finding{finding(protocol.Block, subject,
			fmt.Sprintf("control topic %s governs topic %s, not %s", st.ControlTopic, st.Topic, live.Name),
			fmt.Sprintf("use the control topic of %s (the default is %s)", live.Name, protocol.ControlTopicFor(live.Name)))}
	case st.TopicID != live.ID:
		return []protocol.Finding{finding(protocol.Block, subject,
			fmt.Sprintf("has topic ID %s, but control topic %s governs ID %s: the topic was deleted and recreated",
				live.ID, st.ControlTopic, st.TopicID),
			fmt.Sprintf("give the new incarnation a new control topic: kcleanup init --topic %s --control-topic <new name>, then plan from its markers", live.Name))}
	}
	return []protocol.Finding{finding(protocol.OK, subject, fmt.Sprintf("topic ID %s is the one control topic %s governs", live.ID, st.ControlTopic), "")}
}

// CheckProjection reports the health of a control topic's projection:
// degraded (blocks: nothing may be approved or deleted), rejected records,
// operations stuck in COMMITTED or DELETING for longer than stuckAfter
// (measured from the "at" of their last accepted record to now), and
// accepted records listed for repair (key overwritten, or out of order) and not yet re-appended.
func CheckProjection(st Status, now time.Time, stuckAfter time.Duration) []protocol.Finding {
	subject := "control topic " + st.ControlTopic
	var out []protocol.Finding
	if st.Degraded {
		out = append(out, finding(protocol.Block, subject, "degraded: "+st.DegradedReason,
			"upgrade kcleanup to a version that understands every record of the control topic; until then nothing is approved or deleted"))
	}
	if st.AtRisk {
		out = append(out, finding(protocol.Block, subject, "history at risk: "+st.AtRiskReason,
			fmt.Sprintf("the recovery gate cannot tell until it is repaired; run a worker (kcleanup worker --control-topic %s) and check the control topic's settings", st.ControlTopic)))
	}
	if n := len(st.Maintenance); n > 0 {
		last := st.Maintenance[n-1]
		out = append(out, finding(protocol.OK, subject,
			fmt.Sprintf("%d maintenance record(s) by the worker fleet (%s); the last at offset %d by %s: %s %s",
				n, maintenanceSummary(st.MaintenanceCounts), last.Offset, last.Actor, last.Kind, last.Reason), ""))
	}
	if n := len(st.Rejected); n > 0 {
		last := st.Rejected[n-1]
		out = append(out, finding(protocol.Warn, subject,
			fmt.Sprintf("%d record(s) rejected; the last at offset %d: %s: %s", n, last.Offset, last.Reason, last.Detail),
			fmt.Sprintf("rejected records change nothing; `kcleanup history --control-topic %s` shows each with its reason and writer", st.ControlTopic)))
	}
	held := map[string]bool{}
	for _, h := range st.PinHolds {
		held[h.PlanID] = true
	}
	for _, op := range st.Operations {
		if op.State != fsm.Committed && op.State != fsm.Deleting || held[op.PlanID] {
			continue // a pin hold is CheckClocks's: it passes by itself
		}
		age := now.Sub(op.UpdatedAt)
		if age < stuckAfter {
			out = append(out, finding(protocol.OK, subject,
				fmt.Sprintf("plan %s is %s since %s: deletion in progress", op.PlanID, op.State, op.UpdatedAt.Format(time.RFC3339)), ""))
			continue
		}
		hint := fmt.Sprintf("the boundary is committed and recovery enforces it; to delete, run a worker (kcleanup worker --control-topic %s) or re-run `kcleanup apply <plan file>`", st.ControlTopic)
		if i := slices.IndexFunc(st.Blocked, func(b BlockedOperation) bool { return b.PlanID == op.PlanID }); i >= 0 {
			// Never "re-run apply" where apply would refuse: the same rule blocks both.
			hint = "blocked: " + st.Blocked[i].Reason + "; neither a worker nor a re-run of apply deletes until the cause is removed: " + strings.Join(st.Blocked[i].Hints, "; ")
		}
		out = append(out, finding(protocol.Warn, subject,
			fmt.Sprintf("plan %s has been %s since %s (%s): no worker finished it (%d delete attempt(s))",
				op.PlanID, op.State, op.UpdatedAt.Format(time.RFC3339), age.Round(time.Second), op.DeleteAttempts), hint))
	}
	if st.UnrepairedKeys > 0 {
		out = append(out, finding(protocol.Warn, subject,
			fmt.Sprintf("%d accepted record(s) are listed for repair (key overwritten, or out of compaction-safe order); a worker re-appends them", st.UnrepairedKeys),
			"every kcleanup write re-appends them: a running worker does at once, or submit or apply any plan"))
	}
	if len(out) == 0 {
		out = append(out, finding(protocol.OK, subject,
			fmt.Sprintf("read to offset %d: %d operation(s), boundary on %d partition(s), nothing rejected",
				st.ReadTo, len(st.Operations), len(st.Boundary)), ""))
	}
	return out
}

// maintenanceSummary is "3 repair, 1 retraction" in a fixed order.
func maintenanceSummary(counts map[string]int) string {
	var parts []string
	for _, k := range []string{projector.MaintenanceRepair, projector.MaintenanceRetraction, projector.MaintenanceRecommit} {
		if n := counts[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	return strings.Join(parts, ", ")
}

// CheckFlinkControlTopic is doctor's check of a control topic whose records
// are in Flink Agents' format (st.Format), in place of kcleanup's own
// settings and projection checks, which do not apply to it: the job's own
// topic check and fold, and that kcleanup will not write there.
func CheckFlinkControlTopic(info protocol.Topic, st Status) []protocol.Finding {
	subject := "control topic " + info.Name
	adopt := "to manage its cleanups with kcleanup, start a control topic of kcleanup's own from it: kcleanup adopt --from " + info.Name + " (docs/flink-agents.md)"
	if st.Format == projector.FormatMixed {
		return []protocol.Finding{{Severity: protocol.Block, Subject: subject,
			Message: "mixes kcleanup's records with Flink Agents' (bare plan-ID keys): a Flink Agents job fails on kcleanup's records, kcleanup cannot read the job's plans; validate cannot tell, and kcleanup decides nothing here",
			Hint:    "find which tool owns this topic with `kcleanup history --control-topic " + info.Name + "`; give each tool a control topic of its own"}}
	}
	out := []protocol.Finding{{Severity: protocol.Block, Subject: subject,
		Message: "is in Flink Agents' control format: kcleanup audits and gates it by the job's rules but never writes to it (apply, submit and workers refuse it)",
		Hint:    adopt}}
	if err := flinkagents.CheckTopic(info.Name, info.Partitions, info.Configs["cleanup.policy"]); err != nil {
		out = append(out, protocol.Finding{Severity: protocol.Block, Subject: subject, Message: "the Flink Agents job refuses it: " + err.Error(), Hint: FlinkErrorOf(err).Hint})
	}
	switch fa := st.FlinkAgents; {
	case fa == nil:
	case fa.Error != nil:
		out = append(out, protocol.Finding{Severity: protocol.Block, Subject: subject, Message: "the Flink Agents job's recovery fails on it: " + fa.Error.Message, Hint: fa.Error.Hint})
	default:
		out = append(out, protocol.Finding{Severity: protocol.OK, Subject: subject,
			Message: "folded by the Flink Agents job's rules: " + strconv.Itoa(len(fa.Plans)) + " plan(s), effective boundary " + fa.EffectiveBoundary.String()})
	}
	return out
}

// CheckControlTopic checks a control topic against docs/design.md §4 with the
// settings rules of package topicconfig, the ones the recovery gate applies too: a
// problem that lets the log cleaner outrun repairs blocks cleanup here and
// fails the gate closed there.
func CheckControlTopic(info protocol.Topic, dataTopic string, replicas int, bootstrap string) []protocol.Finding {
	subject := "control topic " + info.Name
	var out []protocol.Finding
	if info.Name == dataTopic {
		out = append(out, finding(protocol.Block, subject, "the control topic must not be the data topic",
			"choose another --control-topic; the default is "+protocol.ControlTopicFor(dataTopic)))
	}
	for _, p := range topicconfig.ControlTopic(info.Name, len(info.Partitions), info.Configs, bootstrap) {
		sev := protocol.Warn
		if p.Blocks {
			sev = protocol.Block
		}
		hint := p.Fix
		if p.Setting == "partitions" {
			hint = fmt.Sprintf("create a new one-partition control topic: kcleanup init --topic %s --control-topic <new name>", dataTopic)
		}
		out = append(out, finding(sev, subject, p.Message, hint))
	}
	if replicas < 3 {
		out = append(out, finding(protocol.Warn, subject,
			fmt.Sprintf("replication factor is %d; production needs at least 3 with min.insync.replicas=2", replicas),
			fmt.Sprintf("on a cluster of three or more brokers, give partition 0 of %s three replicas: kafka-reassign-partitions --bootstrap-server %s "+
				"--reassignment-json-file <file naming three broker ids> --execute; then kafka-configs --bootstrap-server %s --alter --entity-type topics "+
				"--entity-name %s --add-config min.insync.replicas=2", info.Name, bootstrap, bootstrap, info.Name)))
	}
	if len(protocol.Blocking(out)) == 0 {
		out = append(out, finding(protocol.OK, subject, fmt.Sprintf("one partition, cleanup.policy=compact, min.compaction.lag.ms=%s, delete.retention.ms=%s",
			configOrDefault(info.Configs["min.compaction.lag.ms"]), configOrDefault(info.Configs["delete.retention.ms"])), ""))
	}
	return out
}

func configOrDefault(v string) string {
	if v == "" {
		return "(broker default)"
	}
	return v
}

// finding builds a Finding.
func finding(sev protocol.Severity, subject, message, hint string) protocol.Finding {
	return protocol.Finding{Severity: sev, Subject: subject, Message: message, Hint: hint}
}
