package worker

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
)

// The worker's metrics, in Prometheus text exposition format (version
// 0.0.4), written by hand: a handful of series do not justify a client
// library. Gauges about a control topic are read from the views' snapshots
// at scrape time; counters of what this process did live in metrics.

// deleteBuckets are the upper bounds (seconds) of the DeleteRecords latency
// histogram.
var deleteBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// attemptResults are the values of the result label of
// kcleanup_finish_attempts_total.
var attemptResults = []string{"applied", "retry", "blocked"}

type metrics struct {
	mu        sync.Mutex
	takeovers uint64
	attempts  map[string]map[string]uint64 // control topic → result → count
	deletes   map[string]*histogram        // control topic → DeleteRecords latency
}

type histogram struct {
	counts []uint64 // per bucket, not cumulative; last is +Inf
	sum    float64
	count  uint64
}

func newMetrics() *metrics {
	return &metrics{attempts: map[string]map[string]uint64{}, deletes: map[string]*histogram{}}
}

func (m *metrics) takeover() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.takeovers++
}

func (m *metrics) attempt(topic, result string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.attempts[topic] == nil {
		m.attempts[topic] = map[string]uint64{}
	}
	m.attempts[topic][result]++
}

func (m *metrics) observeDelete(topic string, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.deletes[topic]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(deleteBuckets)+1)}
		m.deletes[topic] = h
	}
	s := took.Seconds()
	i, _ := slices.BinarySearch(deleteBuckets, s) // first bound ≥ s: "le"
	h.counts[i]++
	h.sum += s
	h.count++
}

// expo writes one metric family at a time.
type expo struct{ w *bufio.Writer }

func (e expo) family(name, typ, help string) {
	fmt.Fprintf(e.w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// sample writes one sample; labels alternate names and values.
func (e expo) sample(name string, value float64, labels ...string) {
	e.w.WriteString(name)
	if len(labels) > 0 {
		e.w.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				e.w.WriteByte(',')
			}
			fmt.Fprintf(e.w, "%s=\"%s\"", labels[i], escapeLabel(labels[i+1]))
		}
		e.w.WriteByte('}')
	}
	e.w.WriteByte(' ')
	e.w.WriteString(formatValue(value))
	e.w.WriteByte('\n')
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func escapeLabel(v string) string { return labelEscaper.Replace(v) }

func formatValue(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// writeMetrics writes every metric of the replica, control topics in the
// order they are served, so that two scrapes differ only in values.
func (d *Daemon) writeMetrics(w io.Writer) error {
	bw := bufio.NewWriter(w)
	e := expo{bw}
	topics := d.cfg.topics
	snaps := make([]*snapshot, len(topics))
	owners := make([]*owner, len(topics))
	for i, t := range topics {
		snaps[i] = d.views[t].snap.Load()
		owners[i] = d.owned(t)
	}
	states := []fsm.State{fsm.Planned, fsm.Committed, fsm.Deleting, fsm.Applied}

	e.family("kcleanup_operations", "gauge", "Operations on the control topic, by lifecycle state.")
	for i, t := range topics {
		for _, st := range states {
			e.sample("kcleanup_operations", float64(snaps[i].byState[st]), "control_topic", t, "state", string(st))
		}
	}
	e.family("kcleanup_boundary", "gauge", "Committed cleanup boundary: records below it may be deleted and recovery points that need them are refused.")
	for i, t := range topics {
		st := snaps[i].status
		for _, p := range st.Boundary.Partitions() {
			e.sample("kcleanup_boundary", float64(st.Boundary[p]), "control_topic", t, "topic", st.Topic, "partition", strconv.Itoa(int(p)))
		}
	}
	e.family("kcleanup_projection_lag_records", "gauge", "Control records between this replica's projection and the end of the control topic at its last read.")
	for i, t := range topics {
		e.sample("kcleanup_projection_lag_records", float64(snaps[i].lag), "control_topic", t)
	}
	e.family("kcleanup_projection_caught_up", "gauge", "1 when the projection read the control topic to its end within the ready window.")
	for i, t := range topics {
		ok, _ := snaps[i].caughtUp(d.cfg.readyWindow)
		e.sample("kcleanup_projection_caught_up", b2f(ok), "control_topic", t)
	}
	e.family("kcleanup_projection_degraded", "gauge", "1 when the control topic holds records from a newer kcleanup: nothing is deleted or approved until an upgrade.")
	for i, t := range topics {
		e.sample("kcleanup_projection_degraded", b2f(snaps[i].status.Degraded), "control_topic", t)
	}
	e.family("kcleanup_rejected_records_total", "counter", "Control records the fold rejected, by reason (counted from the start of the control topic).")
	for i, t := range topics {
		for _, r := range projector.Reasons() {
			if r == projector.ReasonOutOfOrder { // never recorded by the fold
				continue
			}
			e.sample("kcleanup_rejected_records_total", float64(snaps[i].rejected[r]), "control_topic", t, "reason", string(r))
		}
	}
	e.family("kcleanup_maintenance_records_total", "counter", "Records the worker fleet wrote to keep the control topic safe to compact (repairs, retraction tombstones, re-commits), by kind, from their headers (counted from the start of the control topic). They are not rejected records.")
	for i, t := range topics {
		for _, k := range []string{projector.MaintenanceRepair, projector.MaintenanceRetraction, projector.MaintenanceRecommit} {
			e.sample("kcleanup_maintenance_records_total", float64(snaps[i].status.MaintenanceCounts[k]), "control_topic", t, "kind", k)
		}
	}
	e.family("kcleanup_history_at_risk", "gauge", "1 when accepted history is missing from the control topic or may be erased by the log cleaner: the recovery gate cannot tell until it is repaired.")
	for i, t := range topics {
		e.sample("kcleanup_history_at_risk", b2f(snaps[i].status.AtRisk), "control_topic", t)
	}
	e.family("kcleanup_blocked_operations", "gauge", "Pending operations this replica stopped retrying for a cause an operator must remove (only the owner knows).")
	for i, t := range topics {
		n := 0
		if owners[i] != nil {
			n = len(owners[i].blocked())
		}
		e.sample("kcleanup_blocked_operations", float64(n), "control_topic", t)
	}
	e.family("kcleanup_unauthorized", "gauge", "1 when a missing ACL blocks this replica on the control topic: its projection cannot read it, or (owner) an operation is blocked; /readyz names the ACL.")
	denied := d.unauthorized()
	for _, t := range topics {
		_, blocked := denied[t]
		e.sample("kcleanup_unauthorized", b2f(blocked), "control_topic", t)
	}
	e.family("kcleanup_owner", "gauge", "1 when this replica owns the control topic and finishes its operations.")
	owned := 0
	for i, t := range topics {
		if owners[i] != nil {
			owned++
		}
		e.sample("kcleanup_owner", b2f(owners[i] != nil), "control_topic", t)
	}
	e.family("kcleanup_owned_partitions", "gauge", "Control partitions this replica owns.")
	e.sample("kcleanup_owned_partitions", float64(owned))
	d.mu.Lock()
	admitted, refusals := d.group.admitted, maps.Clone(d.group.refusals)
	d.mu.Unlock()
	e.family("kcleanup_group_admitted", "gauge", "1 when the consumer group admitted this replica; 0 while joining or refused (see /readyz for why).")
	e.sample("kcleanup_group_admitted", b2f(admitted))
	e.family("kcleanup_group_errors_total", "counter", "Errors of the consumer-group session (the group refused or dropped this replica), by Kafka error code.")
	for _, code := range slices.Sorted(maps.Keys(refusals)) {
		e.sample("kcleanup_group_errors_total", float64(refusals[code]), "error", code)
	}

	m := d.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	e.family("kcleanup_takeovers_total", "counter", "Times this replica took ownership of a control topic.")
	e.sample("kcleanup_takeovers_total", float64(m.takeovers))
	e.family("kcleanup_finish_attempts_total", "counter", "Attempts to finish an operation, by result: applied, retry (transient failure) or blocked.")
	for _, t := range topics {
		for _, r := range attemptResults {
			e.sample("kcleanup_finish_attempts_total", float64(m.attempts[t][r]), "control_topic", t, "result", r)
		}
	}
	e.family("kcleanup_delete_records_seconds", "histogram", "Latency of DeleteRecords requests sent by this replica.")
	for _, t := range topics {
		h := m.deletes[t]
		if h == nil {
			continue
		}
		var cum uint64
		for i, le := range deleteBuckets {
			cum += h.counts[i]
			e.sample("kcleanup_delete_records_seconds_bucket", float64(cum), "control_topic", t, "le", formatValue(le))
		}
		e.sample("kcleanup_delete_records_seconds_bucket", float64(h.count), "control_topic", t, "le", "+Inf")
		e.sample("kcleanup_delete_records_seconds_sum", h.sum, "control_topic", t)
		e.sample("kcleanup_delete_records_seconds_count", float64(h.count), "control_topic", t)
	}
	return bw.Flush()
}
