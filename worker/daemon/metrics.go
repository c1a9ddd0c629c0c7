package daemon

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
)

// The worker's metrics, served by prometheus/client_golang: each replica
// has a registry of its own with the Go runtime and process collectors, the
// counters and histograms of what this process did (metrics), and a custom
// collector (snapshotCollector) that reads the gauges about each control
// topic from the views' snapshots at scrape time.

// deleteBuckets are the upper bounds (seconds) of the DeleteRecords latency
// histogram.
var deleteBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// attemptResults are the values of the result label of
// kcleanup_finish_attempts_total.
var attemptResults = []string{"applied", "retry", "blocked", "grace"}

type metrics struct {
	takeovers prometheus.Counter
	attempts  *prometheus.CounterVec   // control_topic, result
	deletes   *prometheus.HistogramVec // control_topic
	steps     *prometheus.HistogramVec // control_topic, step
}

func newMetrics() *metrics {
	return &metrics{
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "kcleanup_takeovers_total",
			Help: "Times this replica took ownership of a control topic."}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kcleanup_finish_attempts_total",
			Help: "Attempts to finish an operation, by result: applied, retry (transient failure) or blocked."},
			[]string{"control_topic", "result"}),
		deletes: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kcleanup_delete_records_seconds",
			Help: "Latency of DeleteRecords requests sent by this replica.", Buckets: deleteBuckets},
			[]string{"control_topic"}),
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kcleanup_protocol_step_seconds",
			Help:    "Duration of each protocol step this replica executed (package protocol's step kinds: describe, permissions, append, catch-up, recheck, delete, verify).",
			Buckets: prometheus.DefBuckets},
			[]string{"control_topic", "step"}),
	}
}

// registry is a replica's registry: runtime and process metrics, its own
// counters, and the snapshot gauges of topics.
func (m *metrics) registry(d *Daemon, topics []string) *prometheus.Registry {
	for _, t := range topics {
		m.serve(t)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.takeovers, m.attempts, m.deletes, m.steps, snapshotCollector{d})
	return reg
}

// serve makes every series of a served control topic exist, at 0, from the
// next scrape.
func (m *metrics) serve(topic string) {
	for _, r := range attemptResults {
		m.attempts.WithLabelValues(topic, r)
	}
}

func (m *metrics) takeover() { m.takeovers.Inc() }

func (m *metrics) attempt(topic, result string) { m.attempts.WithLabelValues(topic, result).Inc() }

func (m *metrics) observeDelete(topic string, took time.Duration) {
	m.deletes.WithLabelValues(topic).Observe(took.Seconds())
}

func (m *metrics) observeStep(topic, step string, took time.Duration) {
	m.steps.WithLabelValues(topic, step).Observe(took.Seconds())
}

// attemptCount and takeoverCount read the counters (tests).
func (m *metrics) attemptCount(topic, result string) float64 {
	return counterValue(m.attempts.WithLabelValues(topic, result))
}

func (m *metrics) takeoverCount() float64 { return counterValue(m.takeovers) }

func counterValue(c prometheus.Counter) float64 {
	var pm dto.Metric
	if err := c.Write(&pm); err != nil {
		return 0
	}
	return pm.GetCounter().GetValue()
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// snapshotCollector reads the gauges about every control topic from the
// views' snapshots, in the order topics are served.
type snapshotCollector struct{ d *Daemon }

// Describe sends nothing: the families depend on what the snapshots hold
// (an unchecked collector).
func (snapshotCollector) Describe(chan<- *prometheus.Desc) {}

// emitter builds const metrics, a Desc per family.
type emitter struct {
	ch    chan<- prometheus.Metric
	descs map[string]*prometheus.Desc
}

func (e emitter) emit(typ prometheus.ValueType, name, help string, value float64, labels ...string) {
	var names, values []string
	for i := 0; i+1 < len(labels); i += 2 {
		names, values = append(names, labels[i]), append(values, labels[i+1])
	}
	key := name + "|" + strings.Join(names, ",")
	desc := e.descs[key]
	if desc == nil {
		desc = prometheus.NewDesc(name, help, names, nil)
		e.descs[key] = desc
	}
	e.ch <- prometheus.MustNewConstMetric(desc, typ, value, values...)
}

// Collect writes every gauge of the replica's control topics.
func (c snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	d := c.d
	e := emitter{ch: ch, descs: map[string]*prometheus.Desc{}}
	gauge := func(name, help string, v float64, labels ...string) {
		e.emit(prometheus.GaugeValue, name, help, v, labels...)
	}
	counter := func(name, help string, v float64, labels ...string) {
		e.emit(prometheus.CounterValue, name, help, v, labels...)
	}
	topics := d.servedTopics()
	snaps := make([]*snapshot, len(topics))
	owners := make([]*owner, len(topics))
	for i, t := range topics {
		snaps[i] = d.view(t).snap.Load()
		owners[i] = d.owned(t)
	}
	states := fsm.OperationStates()
	for i, t := range topics {
		for _, st := range states {
			gauge("kcleanup_operations", "Operations on the control topic, by lifecycle state.", float64(snaps[i].byState[st]), "control_topic", t, "state", string(st))
		}
	}
	for i, t := range topics {
		st := snaps[i].status
		for _, p := range st.Boundary.Partitions() {
			gauge("kcleanup_boundary", "Committed cleanup boundary: records below it may be deleted and recovery points that need them are refused.",
				float64(st.Boundary[p]), "control_topic", t, "topic", st.Topic, "partition", strconv.Itoa(int(p)))
		}
	}
	for i, t := range topics {
		gauge("kcleanup_projection_lag_records", "Control records between this replica's projection and the end of the control topic at its last read.", float64(snaps[i].lag), "control_topic", t)
	}
	for i, t := range topics {
		ok, _ := snaps[i].caughtUp(d.cfg.readyWindow)
		gauge("kcleanup_projection_caught_up", "1 when the projection read the control topic to its end within the ready window.", b2f(ok), "control_topic", t)
	}
	for i, t := range topics {
		gauge("kcleanup_projection_degraded", "1 when the control topic holds records from a newer kcleanup: nothing is deleted or approved until an upgrade.", b2f(snaps[i].status.Degraded), "control_topic", t)
	}
	for i, t := range topics {
		for _, r := range projector.Reasons() {
			if r == projector.ReasonOutOfOrder { // never recorded by the fold
				continue
			}
			counter("kcleanup_rejected_records_total", "Control records the fold rejected, by reason (counted from the start of the control topic).", float64(snaps[i].rejected[r]), "control_topic", t, "reason", string(r))
		}
	}
	for i, t := range topics {
		for _, k := range []string{projector.MaintenanceRepair, projector.MaintenanceRetraction, projector.MaintenanceRecommit} {
			counter("kcleanup_maintenance_records_total", "Records the worker fleet wrote to keep the control topic safe to compact (repairs, retraction tombstones, re-commits), by kind, from their headers (counted from the start of the control topic). They are not rejected records.",
				float64(snaps[i].status.MaintenanceCounts[k]), "control_topic", t, "kind", k)
		}
	}
	for i, t := range topics {
		gauge("kcleanup_history_at_risk", "1 when accepted history is missing from the control topic or may be erased by the log cleaner: the recovery gate cannot tell until it is repaired.", b2f(snaps[i].status.AtRisk), "control_topic", t)
	}
	now := time.Now()
	for i, t := range topics {
		active, soonest := pinGauges(snaps[i].status.Pins, now)
		gauge("kcleanup_pins_active", "Pinned recovery points that protect something now (active or partial, not unpinned, not expired by this replica's clock): every plan above one is refused.", float64(active), "control_topic", t)
		if !soonest.IsZero() {
			gauge("kcleanup_pin_soonest_expiry_timestamp_seconds", "When the first of those pins with an expiry expires (Unix time); absent when none has one.", float64(soonest.UnixNano())/1e9, "control_topic", t)
		}
	}
	for i, t := range topics {
		n := 0
		if owners[i] != nil {
			n = owners[i].awaitingOperator()
		}
		gauge("kcleanup_blocked_operations", "Pending operations this replica stopped retrying for a cause an operator must remove (only the owner knows; a pin hold, which passes by itself, is kcleanup_pin_held_operations).", float64(n), "control_topic", t)
	}
	for i, t := range topics {
		n := 0
		if owners[i] != nil {
			n = len(owners[i].waiting())
		}
		gauge("kcleanup_restore_grace_operations", "Pending operations whose deletion waits out the restore grace (--restore-grace) after the Flink Agents mirror showed them (only the owner knows): not stuck.", float64(n), "control_topic", t)
	}
	for i, t := range topics {
		gauge("kcleanup_clock_ahead_commits", "COMMITTED records whose writer stamped an \"at\" ahead of the time the broker appended them by more than the clock tolerance (--clock-tolerance, default 1m): a writer's clock is wrong, and the log judged pins at that at; /v1/status (clockAhead) names the writer.", float64(len(snaps[i].status.ClockAhead)), "control_topic", t)
		gauge("kcleanup_pin_held_operations", "Operations whose deletion a pin holds back because the broker's clock has not passed its expiry (they proceed by themselves then, or when it is unpinned).", float64(len(snaps[i].status.PinHolds)), "control_topic", t)
	}
	for i, t := range topics {
		data := snaps[i].data
		if data == nil || len(data.HighWatermark) == 0 { // never listed
			continue
		}
		var retained, starts int64
		for p, end := range data.HighWatermark {
			retained += end - data.LogStart[p]
			starts += data.LogStart[p]
		}
		labels := []string{"control_topic", t, "topic", snaps[i].status.Topic}
		gauge("kcleanup_data_retained_records", "Offsets the data topic retains, summed over its partitions (high watermark minus log start, as last listed for /v1/status): it grows while nothing is cleaned up.", float64(retained), labels...)
		gauge("kcleanup_data_log_start_offsets", "The data topic's log start offsets summed over its partitions: it moves only when records are deleted (by kcleanup or by retention).", float64(starts), labels...)
	}
	tombstones := d.tombstonesAbove()
	for _, t := range topics {
		// Every replica exports it (0 where it does not own the topic), as kcleanup_blocked_operations.
		_, found := tombstones[t]
		gauge("kcleanup_tombstones_above_boundary", "1 when the owner's watch found a tombstone (null value) in the data topic at or above the committed boundary: the job writes tombstones again and no deletion starts, by a worker or by kcleanup apply; /readyz says where and the fix (only the owner knows).", b2f(found), "control_topic", t)
	}
	for i, t := range topics {
		// Only the owner follows the policy, and only it exports the gauge.
		if owners[i] == nil {
			continue
		}
		if f := owners[i].retentionFollow(); f != nil {
			why := f.NoPlan
			if f.Error != "" {
				why = "error"
			}
			gauge("kcleanup_retention_blocked", "1 when the owner's last round of the control topic's retention policy made no plan for a reason that needs an operator (a watched location outside --checkpoint-root, a listing or recovery point it cannot read, no completed recovery point, a failed round); /v1/status says why.", b2f(f.Blocked), "control_topic", t, "reason", why)
			gauge("kcleanup_retention_last_round_timestamp_seconds", "When the owner last ran a round of the control topic's retention policy (Unix time).", float64(f.At.UnixNano())/1e9, "control_topic", t)
		}
	}
	mirrors := make([]*mirrorState, len(topics))
	for i, t := range topics {
		mirrors[i] = d.view(t).mirror.Load()
	}
	for i, t := range topics {
		if mirrors[i] == nil || mirrors[i].a == nil {
			continue
		}
		m := mirrors[i].a
		labels := []string{"control_topic", t, "mirror_topic", m.Topic}
		gauge("kcleanup_mirror_lag", "Offsets, summed over partitions, by which the Flink Agents mirror's effective boundary is below kcleanup's boundary (0 in step; the whole boundary while it cannot be written).", float64(m.Lag), labels...)
		gauge("kcleanup_mirror_in_step", "1 when the attached Flink Agents mirror's effective boundary equals kcleanup's boundary.", b2f(m.InStep()), labels...)
		gauge("kcleanup_mirror_writable", "0 when this replica cannot keep the attached Flink Agents mirror in step (missing, recreated, misconfigured, a fold the job fails on, or no permission to write it); /readyz says why.", b2f(m.Standing != protocol.MirrorUnwritable), labels...)
	}
	for i, t := range topics {
		if mirrors[i] != nil {
			counter("kcleanup_mirror_errors_total", "Checks of the attached Flink Agents mirror that could not read it to its end (the broker did not answer in time, or an open transaction pins it: /v1/status says whose).", float64(mirrors[i].errors), "control_topic", t)
		}
	}
	denied := d.unauthorized()
	for _, t := range topics {
		_, blocked := denied[t]
		gauge("kcleanup_unauthorized", "1 when a missing ACL blocks this replica on the control topic: its projection cannot read it, or (owner) an operation is blocked; /readyz names the ACL.", b2f(blocked), "control_topic", t)
	}
	owned := 0
	for i, t := range topics {
		if owners[i] != nil {
			owned++
		}
		gauge("kcleanup_owner", "1 when this replica owns the control topic and finishes its operations.", b2f(owners[i] != nil), "control_topic", t)
	}
	gauge("kcleanup_owned_partitions", "Control partitions this replica owns.", float64(owned))
	d.mu.Lock()
	admitted, refusals := d.group.admitted, maps.Clone(d.group.refusals)
	d.mu.Unlock()
	gauge("kcleanup_group_admitted", "1 when the consumer group admitted this replica; 0 while joining or refused (see /readyz for why).", b2f(admitted))
	for _, code := range slices.Sorted(maps.Keys(refusals)) {
		counter("kcleanup_group_errors_total", "Errors of the consumer-group session (the group refused or dropped this replica), by Kafka error code.", float64(refusals[code]), "error", code)
	}
}

// pinGauges counts the pins that protect something at now and finds the
// soonest expiry among them (zero when none expires).
func pinGauges(pins []report.PinStatus, now time.Time) (active int, soonest time.Time) {
	for _, p := range pins {
		if p.Unpinned != nil || p.State == projector.PinVoid {
			continue
		}
		if p.Expires != nil && !now.Before(*p.Expires) {
			continue
		}
		active++
		if p.Expires != nil && (soonest.IsZero() || p.Expires.Before(soonest)) {
			soonest = *p.Expires
		}
	}
	return active, soonest
}
