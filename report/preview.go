package report

import (
	"slices"
	"strings"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
)

// PartitionPreview is what applying a plan would do to one partition, as
// the cluster stands now.
type PartitionPreview struct {
	Partition  int32 `json:"partition"`
	PlanOffset int64 `json:"planOffset"`
	// LogStart and HighWatermark are the partition's offsets now.
	LogStart      int64 `json:"logStart"`
	HighWatermark int64 `json:"highWatermark"`
	// NewLogStart is the log start after apply: max(LogStart, PlanOffset),
	// since DeleteRecords never moves a log start back; LogStart when apply
	// refuses the partition (Refused), since then nothing is deleted.
	NewLogStart int64 `json:"newLogStart"`
	// Deletable counts the offsets in [LogStart, NewLogStart): an upper
	// bound on the records that become deletable, since compaction may have
	// removed some of them already. 0 when the partition is refused.
	Deletable int64 `json:"deletable"`
	// Refused says why apply refuses this partition now ("" when it would
	// not): the same sentence Preflight gives for it, or, when apply
	// refuses the plan as a whole for another reason, that reason
	// (RefuseWhole).
	Refused string `json:"refused,omitempty"`
	// Boundary is the committed boundary of the partition; nil when nothing
	// was ever committed for it.
	Boundary      *int64 `json:"boundary"`
	BoundarySetBy string `json:"boundarySetBy,omitempty"`
}

// Preview is what applying a plan would do, computed from the live data
// topic and the control topic's boundary. Computing it changes nothing.
type Preview struct {
	ControlTopic string `json:"controlTopic"`
	// ControlTopicExists is false when the control topic was not created
	// yet: then the boundary is empty and the binding open.
	ControlTopicExists bool `json:"controlTopicExists"`
	// Partitions lists the plan's partitions that the topic has, ascending.
	Partitions []PartitionPreview `json:"partitions"`
	// Refusal is Preflight's verdict: nil when apply would go ahead, else
	// the reasons it would refuse the plan (with hints).
	Refusal error `json:"-"`
}

// PartitionsPreview is the rows of a Preview: for each partition of plan the
// live topic (info) has, ascending, what apply would do to it given the
// control topic's fold st.
func PartitionsPreview(plan events.Plan, info protocol.Topic, st *projector.State) []PartitionPreview {
	out := []PartitionPreview{}
	boundary := st.Boundary()
	for _, p := range plan.Offsets.Partitions() {
		end, ok := info.End[p]
		if !ok {
			continue // not a partition of the topic: Preflight says so
		}
		row := PartitionPreview{
			Partition: p, PlanOffset: plan.Offsets[p],
			LogStart: info.Start[p], HighWatermark: end,
			NewLogStart: max(info.Start[p], plan.Offsets[p]),
		}
		row.Refused, _ = protocol.PartitionRefusal(p, plan.Offsets[p], info, boundary, st.BoundarySetBy)
		if row.Refused != "" {
			row.NewLogStart = row.LogStart // a refused partition keeps every record
		}
		row.Deletable = row.NewLogStart - row.LogStart
		if b, ok := boundary[p]; ok {
			row.Boundary = &b
			row.BoundarySetBy = st.BoundarySetBy(p)
		}
		out = append(out, row)
	}
	return out
}

// RefuseWhole marks every row apply would accept on its own with the
// refusal of the whole plan: apply commits all of a plan's partitions or
// none, so no partition is "ok" while the plan is refused. The refusal
// named is the first of refusal's lines that is not a row's own.
func RefuseWhole(rows []PartitionPreview, refusal string) {
	lines := strings.Split(refusal, "\n")
	why := lines[0]
	for _, l := range lines {
		if !slices.ContainsFunc(rows, func(r PartitionPreview) bool { return r.Refused != "" && strings.Contains(l, r.Refused) }) {
			why = l
			break
		}
	}
	for i := range rows {
		if rows[i].Refused == "" {
			rows[i].Refused = "plan refused as a whole: " + why
			rows[i].NewLogStart, rows[i].Deletable = rows[i].LogStart, 0
		}
	}
}
