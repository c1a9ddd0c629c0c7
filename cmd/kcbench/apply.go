package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/worker"
)

// series is what one subject measured over the runs of one case.
type series struct {
	in, proc []float64 // seconds: measured inside the process, and the whole process
	rss      float64   // largest peak RSS, MB
}

// applySubject deletes every partition of a topic up to offset k, one way.
type applySubject struct {
	name string
	run  func(ctx context.Context, k int64) (in, proc time.Duration, rssMB float64, err error)
}

// apply is B2: one plan covering every partition of a data topic, applied
// from start to APPLIED by `kcleanup apply` (a whole process) and by the
// library, next to Kafka's own kafka-delete-records and to the floor (a bare
// franz-go program that sends DeleteRecords and lists the start offsets).
//
// Every subject works on the same topic, in turns: each deletes one more
// record from every partition (offset k, then k+1, ...), so each request
// has the same amount of work and the topic is identical for all of them.
// The order rotates from run to run.
func (b *bencher) apply(ctx context.Context) error {
	hasApply := b.hasCommand(ctx, "apply")
	if !hasApply {
		b.note("B2: %s has no apply command; measured the library (worker.Cluster.Apply) only", b.cfg.kcleanup)
	}
	tool, toolErr := b.kafkaTool()
	if toolErr != nil {
		b.note("B2: kafka-delete-records not measured: %v", toolErr)
	}
	names := []string{"floor", "kafka-delete-records", "kcleanup library", "kcleanup library, mirror attached", "kcleanup apply"}
	points := map[string][][2]float64{} // subject → (partitions, median seconds)
	for _, n := range b.cfg.applySizes {
		data := b.topic(fmt.Sprintf("apply-%d", n))
		control := b.topic(fmt.Sprintf("apply-%d.kcleanup", n))
		began := time.Now()
		topicID, err := createTopic(ctx, b.cl, data, n, b.dataTopicConfigs())
		if err != nil {
			return errors.WithHint(err, "a single test broker may not hold this many partitions; lower the size with -only or -quick")
		}
		b.logf("B2 apply: created %s with %d partitions in %s", data, n, time.Since(began).Round(time.Millisecond))
		if _, err := createTopic(ctx, b.cl, control, 1, worker.ControlTopicConfigs(b.replication())); err != nil {
			return err
		}
		plan := func(k int64) (string, error) { return b.writePlan(data, topicID, n, k) }
		// A data topic of the same size whose control topic has a Flink Agents
		// mirror attached: the library's apply that keeps the mirror in step,
		// next to the one without (issue 23, item 4). A topic of its own, not
		// a second control topic of the first: kcleanup refuses to commit while
		// two control topics govern one topic (protocol.SharedGovernance). Its
		// first plan (k=1) binds it, before the runs.
		// At 10,000 partitions a second topic of that size is more than the
		// development broker's open files allow: the goal is at 100.
		withMirror := n <= maxMirroredPartitions
		mirroredData := b.topic(fmt.Sprintf("apply-%d-mirrored", n))
		mirrored, mirror := b.topic(fmt.Sprintf("apply-%d-mirrored.kcleanup", n)), b.topic(fmt.Sprintf("apply-%d-mirrored.flink", n))
		var mirroredID string
		if withMirror {
			if mirroredID, err = createTopic(ctx, b.cl, mirroredData, n, b.dataTopicConfigs()); err != nil {
				return err
			}
			if _, err := createTopic(ctx, b.cl, mirrored, 1, worker.ControlTopicConfigs(b.replication())); err != nil {
				return err
			}
		}
		mirroredPlan := func(k int64) (string, error) { return b.writePlan(mirroredData, mirroredID, n, k) }
		steps := map[string][]float64{}           // the library's time per protocol step
		mirroredSteps := map[string][]float64{}   // the same, with the mirror attached
		mirroredKinds := map[string][]float64{}   // its time per kind of step executed
		wire := map[string]map[string][]float64{} // clients, connections, requests of each library row
		subjects := []applySubject{{name: "floor", run: func(ctx context.Context, k int64) (time.Duration, time.Duration, float64, error) {
			path, err := plan(k)
			if err != nil {
				return 0, 0, 0, err
			}
			m, res, err := runChild(ctx, "delete", "-bootstrap", b.cfg.bootstrap, "-plan", path)
			return seconds(res["seconds"]), m.Wall, m.MaxRSSMB, err
		}}, {name: "kcleanup library", run: func(ctx context.Context, k int64) (time.Duration, time.Duration, float64, error) {
			path, err := plan(k)
			if err != nil {
				return 0, 0, 0, err
			}
			m, res, err := runChild(ctx, "apply", "-bootstrap", b.cfg.bootstrap, "-control-topic", control, "-plan", path)
			for k, v := range res {
				if step, ok := strings.CutPrefix(k, "step "); ok {
					steps[step] = append(steps[step], v)
				}
			}
			wire[libraryRow] = appendWire(wire[libraryRow], res)
			return seconds(res["seconds"]), m.Wall, m.MaxRSSMB, err
		}}}
		if withMirror {
			subjects = append(subjects, applySubject{name: "kcleanup library, mirror attached", run: func(ctx context.Context, k int64) (time.Duration, time.Duration, float64, error) {
				path, err := mirroredPlan(k)
				if err != nil {
					return 0, 0, 0, err
				}
				m, res, err := runChild(ctx, "apply", "-bootstrap", b.cfg.bootstrap, "-control-topic", mirrored, "-plan", path)
				for k, v := range res {
					if step, ok := strings.CutPrefix(k, "step "); ok {
						mirroredSteps[step] = append(mirroredSteps[step], v)
					}
					if kind, ok := strings.CutPrefix(k, "took "); ok {
						mirroredKinds[kind] = append(mirroredKinds[kind], v)
					}
				}
				wire[mirroredRow] = appendWire(wire[mirroredRow], res)
				return seconds(res["seconds"]), m.Wall, m.MaxRSSMB, err
			}})
		}
		if tool != nil {
			subjects = append(subjects, applySubject{name: "kafka-delete-records", run: func(ctx context.Context, k int64) (time.Duration, time.Duration, float64, error) {
				path, err := b.writeOffsetsJSON(data, n, k)
				if err != nil {
					return 0, 0, 0, err
				}
				m, err := run(ctx, nil, tool[0], append(tool[1:], "--bootstrap-server", b.cfg.bootstrap, "--offset-json-file", path)...)
				if err == nil && strings.Contains(string(m.Stdout), "error") {
					err = errors.Newf("kafka-delete-records reported an error: %s", tail(m.Stdout, 500))
				}
				return 0, m.Wall, m.MaxRSSMB, err
			}})
		}
		if hasApply {
			subjects = append(subjects, applySubject{name: "kcleanup apply", run: func(ctx context.Context, k int64) (time.Duration, time.Duration, float64, error) {
				path, err := plan(k)
				if err != nil {
					return 0, 0, 0, err
				}
				m, err := run(ctx, nil, b.cfg.kcleanup, "apply", path, "-b", b.cfg.bootstrap, "--control-topic", control,
					"-o", "json", "--timeout", "5m")
				if err == nil {
					err = checkApplied(m.Stdout)
				}
				return 0, m.Wall, m.MaxRSSMB, err
			}})
		}
		perPartition := b.cfg.runs*len(subjects) + 2
		if err := produceData(ctx, b.cfg.bootstrap, data, n, perPartition); err != nil {
			return err
		}
		if withMirror {
			if err := produceData(ctx, b.cfg.bootstrap, mirroredData, n, perPartition); err != nil {
				return err
			}
			if err := b.applyInProcess(ctx, mirrored, mirroredData, mirroredID, n, 1); err != nil {
				return errors.Wrap(err, "bind the mirrored control topic")
			}
			if err := b.attachMirror(ctx, mirrored, mirror); err != nil {
				return errors.Wrap(err, "attach the B2 mirror")
			}
		}
		got := map[string]*series{}
		k := int64(1) // offset 1 is the mirrored control topic's first plan
		for r := range b.cfg.runs {
			b.logf("B2 apply: %d partitions, run %d of %d", n, r+1, b.cfg.runs)
			for i := range subjects {
				s := subjects[(i+r)%len(subjects)]
				k++
				in, proc, rss, err := s.run(ctx, k)
				if err != nil {
					return errors.Wrapf(err, "%s on %d partitions", s.name, n)
				}
				if got[s.name] == nil {
					got[s.name] = &series{}
				}
				g := got[s.name]
				g.in, g.proc, g.rss = append(g.in, in.Seconds()), append(g.proc, proc.Seconds()), max(g.rss, rss)
			}
		}
		if err := b.checkStarts(ctx, data, n, k); err != nil {
			return err
		}
		rows := applyRows(n, got)
		for i := range rows {
			switch rows[i].Subject {
			case libraryRow:
				rows[i].Extra, rows[i].Note = stepBreakdown(steps)
			case mirroredRow:
				rows[i].Extra, rows[i].Note = stepBreakdown(mirroredSteps)
				for kind, runs := range mirroredKinds {
					rows[i].Extra["executed "+kind+" seconds"] = median(runs)
				}
				if m := median(mirroredKinds["read-mirror"]) + median(mirroredKinds["write-mirror"]); m > 0 {
					rows[i].Note += fmt.Sprintf("; the mirror's reads and writes %s", formatSeconds(m))
				}
			}
			if w := wire[rows[i].Subject]; w != nil {
				for k, runs := range w {
					rows[i].Extra[k] = median(runs)
				}
				rows[i].Note += fmt.Sprintf("; %.0f requests, %.0f connections, %.0f clients", median(w["requests"]), median(w["connections"]), median(w["clients"]))
			}
		}
		b.add(rows...)
		for _, name := range names {
			if s := got[name]; s != nil {
				points[name+" (whole process)"] = append(points[name+" (whole process)"], [2]float64{float64(n), median(s.proc)})
				if name == "floor" || name == "kcleanup library" {
					points[name+" (in process)"] = append(points[name+" (in process)"], [2]float64{float64(n), median(s.in)})
				}
			}
		}
		// Free the broker of this size's partitions before the next size.
		dropped := []string{data, control}
		if withMirror {
			dropped = append(dropped, mirroredData, mirrored, mirror)
		}
		if err := b.drop(ctx, dropped...); err != nil {
			return err
		}
	}
	for _, name := range names {
		for _, how := range []string{" (in process)", " (whole process)"} {
			ps := points[name+how]
			var xs, ys []float64
			for _, p := range ps {
				xs, ys = append(xs, p[0]), append(ys, p[1])
			}
			b.fit("B2 apply", name+how, "partition", "s", xs, ys)
		}
	}
	return nil
}

// appendWire adds a child's counts of clients, connections and requests.
func appendWire(w map[string][]float64, res childResult) map[string][]float64 {
	if w == nil {
		w = map[string][]float64{}
	}
	for k, v := range res {
		if k == "clients" || k == "connections" || strings.HasPrefix(k, "requests") {
			w[k] = append(w[k], v)
		}
	}
	return w
}

// The rows of the library's apply, without and with a mirror attached.
const (
	libraryRow  = "worker.Cluster.Apply (library, in process)"
	mirroredRow = "worker.Cluster.Apply, a Flink Agents mirror attached (in process)"
	// maxMirroredPartitions is the largest B2 size measured with a mirror.
	maxMirroredPartitions = 1000
)

// applyRows turns one size's series into table rows with their ratios.
func applyRows(n int, got map[string]*series) []Row {
	c := fmt.Sprintf("%d partitions", n)
	var rows []Row
	row := func(subject string, runs []float64, rss float64, ratios ...Ratio) {
		r := Row{Bench: "B2 apply", Case: c, Subject: subject, PeakRSSMB: rss}
		r.setRuns(runs)
		if r.Median > 0 {
			r.Rate, r.RateUnit = float64(n)/r.Median, "partitions/s"
		}
		for _, x := range ratios {
			if x.Value > 0 {
				r.Ratios = append(r.Ratios, x)
			}
		}
		rows = append(rows, r)
	}
	floor, tool, lib, cmd := got["floor"], got["kafka-delete-records"], got["kcleanup library"], got["kcleanup apply"]
	mirrored := got["kcleanup library, mirror attached"]
	row("floor: franz-go DeleteRecords + ListOffsets (in process)", floor.in, 0)
	row("floor: franz-go DeleteRecords + ListOffsets (whole process)", floor.proc, floor.rss)
	if tool != nil {
		row("kafka-delete-records (whole process, JVM)", tool.proc, tool.rss, Ratio{"floor process", pairedRatio(tool.proc, floor.proc)})
	}
	row(libraryRow, lib.in, 0, Ratio{"floor", pairedRatio(lib.in, floor.in)})
	if mirrored != nil {
		row(mirroredRow, mirrored.in, 0, Ratio{"no mirror", pairedRatio(mirrored.in, lib.in)})
	}
	if cmd != nil {
		ratios := []Ratio{{"floor process", pairedRatio(cmd.proc, floor.proc)}}
		if tool != nil {
			ratios = append(ratios, Ratio{"kafka-delete-records", pairedRatio(cmd.proc, tool.proc)})
		}
		row("kcleanup apply (whole process)", cmd.proc, cmd.rss, ratios...)
	}
	return rows
}

// protocolSteps are the steps of Cluster.Apply in order, as Observe names
// them; "project" is the read of the control topic before it.
var protocolSteps = []string{"project", "check", "planned", "mirror", "committed", "deleting", "delete-records", "verify", "applied"}

// stepBreakdown is the median time of each protocol step, as figures and as
// a note: where the time of an apply goes.
func stepBreakdown(steps map[string][]float64) (map[string]float64, string) {
	extra := map[string]float64{}
	var parts []string
	for _, s := range protocolSteps {
		if runs, ok := steps[s]; ok {
			m := median(runs)
			extra["step "+s+" seconds"] = m
			parts = append(parts, s+" "+formatSeconds(m))
		}
	}
	return extra, strings.Join(parts, ", ")
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// applyInProcess applies the plan that moves every partition of topic to k
// through control, with the library in this process.
func (b *bencher) applyInProcess(ctx context.Context, control, topic, topicID string, partitions int, k int64) error {
	path, err := b.writePlan(topic, topicID, partitions, k)
	if err != nil {
		return err
	}
	plan, err := readPlan(path)
	if err != nil {
		return err
	}
	c, err := worker.Connect(seeds(b.cfg.bootstrap))
	if err != nil {
		return err
	}
	defer c.Close()
	proj, err := c.Project(ctx, control)
	if err != nil {
		return err
	}
	defer proj.Close()
	_, err = c.Apply(ctx, proj, plan, worker.Options{Actor: "kcbench/setup"})
	return err
}

// attachMirror creates a mirror topic and attaches it to a bound control
// topic (seeding it with the boundary), as kcleanup mirror attach does.
func (b *bencher) attachMirror(ctx context.Context, control, mirror string) error {
	c, err := worker.Connect(seeds(b.cfg.bootstrap))
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.CreateMirrorTopic(ctx, mirror, 1); err != nil {
		return err
	}
	proj, err := c.Project(ctx, control)
	if err != nil {
		return err
	}
	defer proj.Close()
	_, err = c.AttachMirror(ctx, proj, mirror, "kcbench B2: apply with a mirror attached", worker.Options{Actor: "kcbench/setup"})
	return err
}

// writePlan writes the plan that moves every partition of a topic to k.
func (b *bencher) writePlan(topic, topicID string, partitions int, k int64) (string, error) {
	offsets := make(events.Offsets, partitions)
	for p := range partitions {
		offsets[int32(p)] = k
	}
	rp := fmt.Sprintf("kcbench-%d", k)
	plan := events.Plan{PlanID: events.ComputePlanID(rp, topic, topicID, offsets), SourceRecoveryPoint: rp,
		Topic: topic, TopicID: topicID, Offsets: offsets}
	if err := plan.Validate(); err != nil {
		return "", err
	}
	path := filepath.Join(b.tmp, fmt.Sprintf("%s-%d.plan.json", topic, k))
	return path, os.WriteFile(path, plan.Encode(), 0o644)
}

// writeOffsetsJSON writes kafka-delete-records' input: every partition to k.
func (b *bencher) writeOffsetsJSON(topic string, partitions int, k int64) (string, error) {
	type entry struct {
		Topic     string `json:"topic"`
		Partition int    `json:"partition"`
		Offset    int64  `json:"offset"`
	}
	doc := struct {
		Partitions []entry `json:"partitions"`
		Version    int     `json:"version"`
	}{Version: 1}
	for p := range partitions {
		doc.Partitions = append(doc.Partitions, entry{topic, p, k})
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	path := filepath.Join(b.tmp, fmt.Sprintf("%s-%d.offsets.json", topic, k))
	return path, os.WriteFile(path, data, 0o644)
}

// checkApplied checks that `kcleanup apply -o json` ended APPLIED.
func checkApplied(out []byte) error {
	var rep struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return errors.Wrapf(err, "kcleanup apply -o json printed %q", tail(out, 200))
	}
	if rep.State != "APPLIED" {
		return errors.Newf("kcleanup apply ended in state %q, not APPLIED", rep.State)
	}
	return nil
}

// checkStarts checks that every partition's log start is k: every subject
// did its part, and none deleted more.
func (b *bencher) checkStarts(ctx context.Context, topic string, partitions int, k int64) error {
	lo, err := kadm.NewClient(b.cl).ListStartOffsets(ctx, topic)
	if err != nil {
		return err
	}
	bad := 0
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != k {
			bad++
		}
	})
	if bad > 0 || len(lo[topic]) != partitions {
		return errors.Newf("%s: %d of %d partitions do not start at %d after the runs", topic, bad, partitions, k)
	}
	return nil
}

// kafkaTool is the command line of Kafka's kafka-delete-records, run the way
// cmd/kafkadev/kafka.sh runs Kafka's tools (same JVM flags), but without
// the script's own Java version check, which would add a second JVM start.
func (b *bencher) kafkaTool() ([]string, error) {
	java := "java"
	if home := os.Getenv("JAVA_HOME"); home != "" {
		java = filepath.Join(home, "bin", "java")
	}
	if _, err := exec.LookPath(java); err != nil {
		return nil, errors.Wrap(err, "no java")
	}
	lib := filepath.Join(b.cfg.root, ".cache", "kafka", b.rep.Machine.Kafka, "lib")
	if _, err := os.Stat(lib); err != nil {
		return nil, errors.WithHint(errors.Newf("no Kafka jars in %s", lib), "run make kafka-up once (it downloads them)")
	}
	return []string{java, "-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
		"-Dlog4j2.configurationFile=" + filepath.Join(b.cfg.root, "cmd", "kafkadev", "log4j2-tools.properties"),
		"-cp", lib + "/*", "org.apache.kafka.tools.DeleteRecordsCommand"}, nil
}
