package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

func newDemoCmd(g *globalOptions) *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Walk the C0/C1 example end to end on an embedded broker (with -b: on a real cluster)",
		Long: `demo needs nothing installed. It starts an in-process Kafka broker (franz-go's kfake: an
embedded fake, not Apache Kafka), creates a data topic action-state with 2 partitions, writes 200
action-state records to each, records the markers of two checkpoints (C0 needs partition 0
from offset 100, C1 from 150; two subtasks each), and then runs the real kcleanup commands
against it, narrating each step: plan C1, apply it, status, history, validate C0 (refused) and
validate C1 (allowed).

With -b/--bootstrap-server given on the command line, the same walk runs on that cluster, on
topics of its own (kcleanup-demo-<time>-<random> and its control topic), which it deletes at the
end unless --keep-topics is given. KCLEANUP_BOOTSTRAP_SERVER alone does not send the demo to a
cluster. The output is always text.

Exit 0 when every step behaved as the example says (C0 refused, C1 allowed), else 1. 'make test'
proves the same behaviour against a real Apache Kafka broker.`,
		Example: `  kcleanup demo
  kcleanup demo -b localhost:9092 --keep-topics`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			onCluster := cmd.Flags().Changed(flagBootstrap)
			return runDemo(cmd.Context(), cmd.OutOrStdout(), *g, onCluster, keep)
		},
	}
	cmd.Flags().BoolVar(&keep, "keep-topics", false, "on a real cluster (-b), keep the demo's topics instead of deleting them")
	return cmd
}

// demo is one walk through the example. Every kcleanup command it shows runs through the real
// command tree (newRootCmd), exactly as typed.
type demo struct {
	w         io.Writer
	g         globalOptions // of the demo's own connection
	cmdConfig string        // --command-config for the commands it runs ("none" on kfake)
	embedded  bool
	dir       string // markers and plan files
	topic     string
	control   string
	created   bool // the data topic exists, so a real cluster has topics to delete
	step      int
	problems  []string // what did not behave as the example says
}

func runDemo(ctx context.Context, w io.Writer, g globalOptions, onCluster, keep bool) error {
	d := &demo{w: w, g: g, cmdConfig: cmp.Or(g.commandConfig, noCommandConfig), topic: demoTopic, embedded: !onCluster}
	if d.embedded {
		fk, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			return errors.Wrap(err, "start the embedded broker")
		}
		defer fk.Close()
		d.g.bootstrapServers, d.g.commandConfig, d.cmdConfig = fk.ListenAddrs(), "", noCommandConfig
	} else {
		d.topic = uniqueDemoTopic(time.Now())
	}
	d.control = protocol.ControlTopicFor(d.topic)
	dir, err := os.MkdirTemp("", "kcleanup-demo-")
	if err != nil {
		return errors.Wrap(err, "make a folder for the demo's files")
	}
	d.dir = dir
	// The output names the files, so they stay for the reader to look at; the last line says
	// how to remove them. A folder the demo never wrote to goes.
	defer d.leaveFiles()

	d.introduce(keep)
	c, err := d.g.connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if !d.embedded && !keep {
		defer func() {
			if d.created {
				d.deleteTopics(c)
			}
		}()
	}
	if err := d.setUp(ctx, c); err != nil {
		return err
	}
	d.walk(ctx, c)
	if err := d.verdict(); err != nil {
		return err
	}
	d.say("\nDone. Planning and applying C1 deleted the records no recovery point from C1 on needs; C0 is now\n" +
		"refused with an error that names the offsets, and C1 is allowed.")
	if d.embedded {
		d.say("Reminder: that broker was embedded (kfake), not Apache Kafka. `make test` runs every claim against a\n" +
			"real broker; `kcleanup demo -b host:9092` runs this walk on your cluster.")
	}
	return nil
}

// leaveFiles ends the demo's use of its folder: kept, with the command that removes it, when
// the demo wrote files there (the output names them); removed when it is empty.
func (d *demo) leaveFiles() {
	if entries, err := os.ReadDir(d.dir); err == nil && len(entries) == 0 {
		_ = os.Remove(d.dir)
		return
	}
	d.say("\nThe demo's files (markers, plan and report) stay in %s; remove them with: rm -r %s", d.dir, d.dir)
}

// verdict is the demo's result: an error listing every step that did not behave as the
// example says, or nil.
func (d *demo) verdict() error {
	if len(d.problems) == 0 {
		return nil
	}
	return errors.Newf("the demo did not behave as the example says:\n%s", strings.Join(d.problems, "\n"))
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.w, format+"\n", args...)
}

func (d *demo) stepf(format string, args ...any) {
	d.step++
	fmt.Fprintf(d.w, "\nStep %d: %s\n", d.step, fmt.Sprintf(format, args...))
}

func (d *demo) expect(ok bool, format string, args ...any) {
	if !ok {
		d.problems = append(d.problems, fmt.Sprintf("step %d: ", d.step)+fmt.Sprintf(format, args...))
		d.say("  !! unexpected: "+format, args...)
	}
}

func (d *demo) introduce(keep bool) {
	addr := d.g.bootstrap()
	if d.embedded {
		d.stepf("start a Kafka broker.")
		d.say("  This demo runs on an EMBEDDED broker: franz-go's in-process fake (kfake) at %s, inside this\n"+
			"  process. It is not Apache Kafka, and nothing outside this process is touched. `make test` proves\n"+
			"  every step against a real Apache Kafka broker; `kcleanup demo -b host:9092` runs this walk on yours.", addr)
		return
	}
	d.stepf("use the Kafka cluster at %s (given with -b).", addr)
	what := "deletes them at the end (--keep-topics keeps them)"
	if keep {
		what = "keeps them afterwards (--keep-topics)"
	}
	d.say("  The demo creates its own topics, %s and %s, and %s.", d.topic, d.control, what)
}

// explainCommands says once what every command line shown below leaves out.
func (d *demo) explainCommands() {
	d.say("\n  The commands below are kcleanup's own, run in this process. Each also gets -b %s\n"+
		"  --control-topic %s; file names shown on command lines are in %s.", d.g.bootstrap(), d.control, d.dir)
}

// setUp creates the data topic and its records, and writes the markers of C0 and C1.
func (d *demo) setUp(ctx context.Context, c *worker.Cluster) error {
	ctx, cancel := context.WithTimeout(ctx, d.g.timeout)
	defer cancel()
	d.stepf("create the action-state topic and write the job's action state.")
	if err := createDataTopic(ctx, c, d.topic); err != nil {
		return d.g.unreachable(err)
	}
	d.created = true
	id, err := waitForTopic(ctx, c, d.topic)
	if err != nil {
		return err
	}
	if err := writeActionState(ctx, c, d.topic); err != nil {
		return err
	}
	d.say("  Topic %s: %d partitions, cleanup.policy=compact,delete, retention.ms=-1, retention.bytes=-1\n"+
		"  (Kafka itself never retires a record), topic ID %s. Each partition holds %d records, offsets 0-%d:\n"+
		"  one per completed action of the agent job (a card charged, an email sent, an LLM called).",
		d.topic, demoPartitions, id, demoRecords, demoRecords-1)

	d.stepf("the job takes two checkpoints, C0 and later C1.")
	d.say("  Each of its 2 subtasks records a marker in the checkpoint: the offset it reads from on restore.")
	tw := newTable(d.w)
	fmt.Fprintln(tw, "  CHECKPOINT\tSUBTASK\tPARTITION 0\tPARTITION 1\tFILE")
	for ci, cp := range demoCheckpoints {
		for i, offs := range cp.subtasks {
			// As kcleanup markers --checkpoint writes them: plan and validate check that they
			// are every subtask's of one checkpoint.
			src := &events.MarkerSource{CheckpointID: int64(ci), OperatorUID: "agent-actions", Parallelism: int32(len(cp.subtasks)), Subtask: int32(i)}
			m := events.Marker{Topic: d.topic, TopicID: id, Offsets: offs, Source: src}
			name := d.markerFile(cp.name, i)
			if err := os.WriteFile(filepath.Join(d.dir, name), m.Encode(), 0o644); err != nil {
				return errors.Wrap(err, "write a markers file")
			}
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%s\n", cp.name, i, offs[0], offs[1], name)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	d.say("  Restoring C0 needs partition 0 from offset 100 and partition 1 from 90 (the minimum over its\n" +
		"  subtasks); C1 needs 150 and 120.")
	return nil
}

// deleteTopics removes the demo's topics from a real cluster. A failure is reported with the
// command that finishes the job, but does not fail the demo: its walk is over.
func (d *demo) deleteTopics(c *worker.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), d.g.timeout)
	defer cancel()
	if err := deleteDemoTopics(ctx, c, d.topic, d.control); err != nil {
		d.say("\nWarning: could not delete the demo's topics: %v\n"+
			"  delete them with: kafka-topics --bootstrap-server %s --delete --topic '%s(\\.kcleanup)?'", err, d.g.bootstrap(), d.topic)
		return
	}
	d.say("\nDeleted the demo's topics %s and %s.", d.topic, d.control)
}

func (d *demo) markerFile(checkpoint string, subtask int) string {
	return fmt.Sprintf("%s-subtask-%d.json", strings.ToLower(checkpoint), subtask)
}

func (d *demo) markerArgs(checkpoint string) []string {
	var args []string
	for i := range 2 {
		args = append(args, "--markers", filepath.Join(d.dir, d.markerFile(checkpoint, i)))
	}
	return args
}

// walk runs the commands of the example and checks each outcome.
func (d *demo) walk(ctx context.Context, c *worker.Cluster) {
	planFile := filepath.Join(d.dir, "plan-c1.json")
	d.explainCommands()
	d.stepf("create the control topic, once per data topic.")
	d.say("  init checks the data topic's settings, makes sure no other control topic governs it, and creates\n" +
		"  the compacted control topic. No other command creates one: apply refuses without it.")
	code, _ := d.kcleanup(ctx, "init", "--topic", d.topic)
	d.expect(code == exitOK, "init exited %d, want 0", code)

	d.stepf("plan a cleanup from C1, the oldest checkpoint we will ever restore from again.")
	d.say("  The plan is the per-partition minimum over C1's markers, in Flink Agents' plan format. Its ID is a\n" +
		"  hash of its content: an edited plan is rejected. The preview shows what would become deletable.")
	code, _ = d.kcleanup(ctx, append(append([]string{"plan"}, d.markerArgs("C1")...), "--recovery-point", "C1", "--out", planFile)...)
	d.expect(code == exitOK, "plan exited %d, want 0", code)

	d.stepf("apply the plan.")
	d.say("  kcleanup checks the plan against the live topic, then writes PLANNED and COMMITTED to the control\n" +
		"  topic before deleting anything: once COMMITTED is accepted, recovery refuses older recovery points.\n" +
		"  Only then DELETING, Kafka's DeleteRecords, a check of the new log-start offsets, and APPLIED.")
	code, _ = d.kcleanup(ctx, "apply", planFile)
	d.expect(code == exitOK, "apply exited %d, want 0", code)
	listCtx, cancel := context.WithTimeout(ctx, d.g.timeout)
	defer cancel()
	if start, err := c.StartOffsets(listCtx, d.topic); err == nil {
		d.say("  Kafka now starts partition 0 at offset %d and partition 1 at %d: %d and %d records are gone.",
			start[0], start[1], start[0], start[1])
		d.expect(start[0] == 150 && start[1] == 120, "log-start offsets %v, want 0=150 1=120", start)
	} else {
		d.expect(false, "list log-start offsets: %v", err)
	}

	d.stepf("look at the control topic: the committed boundary and the operation.")
	code, out := d.kcleanup(ctx, "status", "--topic", d.topic)
	d.expect(code == exitOK && strings.Contains(out, "APPLIED"), "status exited %d or shows no APPLIED operation", code)

	d.stepf("the history: every control record with the verdict the log gave it.")
	code, _ = d.kcleanup(ctx, "history", "--topic", d.topic)
	d.expect(code == exitOK, "history exited %d, want 0", code)

	d.stepf("a deployment pipeline asks whether the job may restore from C0.")
	d.say("  C0 needs records below the boundary, which may be gone: validate refuses (exit 3).")
	code, out = d.kcleanup(ctx, append([]string{"validate"}, d.markerArgs("C0")...)...)
	want := fmt.Sprintf("Cannot restore Kafka action state for %s-0 from offset 100 because the committed cleanup boundary is 150", d.topic)
	d.expect(code == exitRefused, "validate C0 exited %d, want 3 (refused)", code)
	d.expect(strings.Contains(out, want), "validate C0 did not say %q", want)

	d.stepf("and whether it may restore from C1.")
	d.say("  Every offset C1 needs is at or above the boundary: validate allows it (exit 0).")
	code, _ = d.kcleanup(ctx, append([]string{"validate"}, d.markerArgs("C1")...)...)
	d.expect(code == exitOK, "validate C1 exited %d, want 0 (allowed)", code)

	d.picture(ctx)
}

// picture shows the story as a picture: partition 0 in the terminal, and the audit report (the
// console's views, worker/console) written to a file to open in a browser.
func (d *demo) picture(ctx context.Context) {
	d.stepf("the same story as a picture.")
	d.say("  Partition 0 of %s (each character is 10 offsets):\n", d.topic)
	d.say("    offset 0 %s%s 200", strings.Repeat("░", 15), strings.Repeat("█", 5))
	d.say("             %s^ 150: log start and committed boundary (set by plan C1)", strings.Repeat(" ", 15))
	d.say("             %s^ C0 needs 100: below the boundary, refused", strings.Repeat(" ", 10))
	d.say("             %s^ C1 needs 150: allowed", strings.Repeat(" ", 15))
	d.say("    ░ deleted by the cleanup   █ kept\n")
	report := filepath.Join(d.dir, "report.html")
	d.say("  $ kcleanup history --topic %s -o html > %s", d.topic, filepath.Base(report))
	var html, errs strings.Builder
	code := execute(ctx, newRootCmd(), []string{
		"-b", d.g.bootstrap(), "--command-config", d.cmdConfig, "--control-topic", d.control,
		"--timeout", d.g.timeout.String(), "history", "--topic", d.topic, "-o", "html",
	}, &html, &errs)
	if code != exitOK {
		_, _ = io.WriteString(&prefixWriter{w: d.w, prefix: "    "}, errs.String())
		d.expect(false, "history -o html exited %d, want 0", code)
		return
	}
	if err := os.WriteFile(report, []byte(html.String()), 0o644); err != nil {
		d.expect(false, "write the report: %v", err)
		return
	}
	d.say("  Open this file in a browser:\n\n    file://%s\n\n"+
		"  It is the audit report, one self-contained file with the boundary of each partition, the C1\n"+
		"  operation's timeline (who moved it from PLANNED to APPLIED, when, how long each step\n"+
		"  took) and every record with its verdict. Every `kcleanup worker --http-addr :9308` serves the\n"+
		"  same views live at http://<worker>:9308/ (the operator console).", report)
}

// kcleanup runs one kcleanup command line through the real command tree, against the demo's
// cluster and control topic, shows it and its output, and returns its exit code and output.
// Every global flag is given explicitly, so KCLEANUP_* variables cannot send a command elsewhere.
func (d *demo) kcleanup(ctx context.Context, args ...string) (int, string) {
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = strings.TrimPrefix(a, d.dir+string(filepath.Separator))
	}
	d.say("  $ kcleanup %s", strings.Join(shown, " "))
	full := append([]string{
		"-b", d.g.bootstrap(), "--command-config", d.cmdConfig, "--control-topic", d.control,
		"--timeout", d.g.timeout.String(), "-o", string(outputTable),
	}, args...)
	var buf strings.Builder
	code := execute(ctx, newRootCmd(), full, &buf, &buf)
	out := buf.String()
	_, _ = io.WriteString(&prefixWriter{w: d.w, prefix: "    "}, out)
	d.say("    (exit %d)", code)
	return code, out
}
