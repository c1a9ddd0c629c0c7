package projector

// Format is the control format a control topic's records are in.
type Format string

const (
	// FormatNone: no record read yet.
	FormatNone Format = ""
	// FormatKcleanup: kcleanup's own records ("<planId>/<EVENT>" keys),
	// possibly with rejected ones.
	FormatKcleanup Format = "kcleanup"
	// FormatFlinkAgents: records keyed by a bare plan ID, as Flink Agents'
	// own cleanup tool writes them (projector/flinkagents folds them), and
	// none of kcleanup's.
	FormatFlinkAgents Format = "flink-agents"
	// FormatMixed: both. Neither fold can be trusted: a Flink Agents job
	// fails on kcleanup's records, and kcleanup's fold rejects Flink
	// Agents' plans as unreadable.
	FormatMixed Format = "mixed"
)
