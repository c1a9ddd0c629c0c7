package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
)

// planOptions are the flags of `kcleanup plan`.
type planOptions struct {
	point         pointFlags
	recoveryPoint string
	out           string // "" means standard output
	noPreview     bool
	tombstones    tombstoneOptions
}

func newPlanCmd(g *globalOptions) *cobra.Command {
	var o planOptions
	cmd := &cobra.Command{
		Use:   "plan (--checkpoint PATH | --markers FILE... --recovery-point NAME) [--out FILE]",
		Short: "Make a cleanup plan from one recovery point: a Flink checkpoint or savepoint, or its markers",
		Long: `Make a cleanup plan from the markers of every subtask of one recovery point (checkpoint or
savepoint): the plan offset of each partition is the minimum over the markers. The plan is the
format of Flink Agents' KafkaActionStateCleanupTool, so plans move freely between the two.
Markers that say which checkpoint, operator and subtask they are from (checkpointId, operator,
parallelism, subtask, as kcleanup markers --checkpoint writes them) must be every subtask's of
one checkpoint, each once, or no plan is made; markers that do not say get a warning (pin and
validate check markers the same way).

--checkpoint PATH reads the markers from the checkpoint or savepoint itself, natively (no JVM):
PATH is a checkpoint directory (chk-N), a savepoint directory or its _metadata file, local,
file:// or s3:// (credentials from the standard AWS chain). The operator is the one holding the
union state recoveryMarker, or the one --operator-uid / --operator-uid-hash names (the flags of
Flink Agents' tool). The recovery point is PATH exactly as given unless --recovery-point names
it: the same invocation of both tools gives the same plan ID (two spellings of one path give two
IDs). --markers FILE reads markers files instead (kcleanup markers --checkpoint writes them; one
marker object or a JSON array of them; "-" reads standard input), with --recovery-point.

The plan goes to --out, which must not exist yet (a plan file is never overwritten), or to
standard output. A live preview shows, per partition, the current log start, the log start after
apply, how many offsets become deletable, and the committed boundary; with --out it is the
command's output, otherwise it goes to standard error. The plan itself needs no cluster: when the
cluster cannot be reached the plan is still written and the preview says it is unavailable.

When the control topic has no boundary yet (this would be its first plan), the preview also reads
the data topic for tombstones (null values) from the plan's offsets, at most
--tombstone-scan-limit records: one found, or a scan the limit stopped, means apply would refuse
the plan (docs/operator-guide.md, "Migrating from tombstones").

Exit 0: the plan is written and apply would accept it now (or there is no preview: --no-preview,
or the cluster could not be reached). Exit 1: no plan was written (a bad markers file, say), or
the plan is written but the preview says apply would refuse it now, as apply would exit.`,
		Example: `  kcleanup plan --checkpoint s3://flink/checkpoints/4f2a.../chk-42 --out chk-42.plan.json
  kcleanup plan --checkpoint /savepoints/savepoint-3f2a1b-0c5d6e7f8a9b --operator-uid action-state-markers
  kcleanup plan --markers chk-42/markers.json --recovery-point chk-42 --out chk-42.plan.json
  kcleanup plan --markers sub-0.json --markers sub-1.json --recovery-point sp-7 > sp-7.plan.json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.point.check(true, "plan"); err != nil {
				return err
			}
			if len(o.point.markers) > 0 && o.recoveryPoint == "" {
				return usageError(errors.WithHint(errors.WithHint(errors.New("--recovery-point is required with --markers"),
					"name the checkpoint or savepoint the markers are from, e.g. --recovery-point chk-42"), "run 'kcleanup plan --help' for usage"))
			}
			if err := o.tombstones.check(); err != nil {
				return err
			}
			return runPlan(cmd.Context(), *g, o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	o.point.add(f, true)
	f.StringVar(&o.recoveryPoint, "recovery-point", "", "`name` of the recovery point, e.g. the checkpoint ID (required with --markers; default with --checkpoint: PATH as given)")
	f.StringVar(&o.out, "out", "", "write the plan to this new `file` instead of standard output")
	f.BoolVar(&o.noPreview, "no-preview", false, "do not contact the cluster for a preview")
	o.tombstones.addFlags(f, false)
	return cmd
}

// planReport is the JSON document of `plan --out`: the plan, where it went, and the preview.
type planReport struct {
	PlanID  string          `json:"planId"`
	Out     string          `json:"out"`
	Plan    json.RawMessage `json:"plan"`
	Preview *previewDoc     `json:"preview"`
	// PreviewError says why there is no preview (unreachable cluster, missing topic).
	PreviewError string `json:"previewError,omitempty"`
}

// previewDoc is report.Preview with the refusal as text.
type previewDoc struct {
	report.Preview
	ApplyWouldRefuse string   `json:"applyWouldRefuse,omitempty"`
	RefusalHints     []string `json:"refusalHints,omitempty"`
}

func runPlan(ctx context.Context, g globalOptions, o planOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	plan, err := buildPlan(ctx, g.timeout, o.point, o.recoveryPoint, stdin, stderr)
	if err != nil {
		return err
	}
	if o.out == "" {
		if _, err := stdout.Write(plan.Encode()); err != nil {
			return errors.Wrap(err, "write the plan")
		}
	} else {
		if err := writeNewFile(o.out, plan.Encode()); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote plan %s to %s\n", plan.PlanID, o.out)
	}
	if o.noPreview && o.out == "" {
		return nil
	}

	var pv *previewDoc
	var pvErr error
	if o.noPreview {
		pvErr = errors.New("not requested (--no-preview)")
	} else {
		pv, pvErr = previewPlan(ctx, g, plan, o.tombstones)
	}
	switch {
	case o.out == "": // stdout holds the plan; the preview is a diagnostic
		printPreview(stderr, plan, pv, pvErr)
	case g.output == outputJSON:
		rep := planReport{PlanID: plan.PlanID, Out: o.out, Plan: plan.Encode(), Preview: pv}
		if pvErr != nil {
			rep.PreviewError = pvErr.Error()
		}
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	default:
		printPreview(stdout, plan, pv, pvErr)
	}
	return wouldRefuse(plan, o.out, pv)
}

// wouldRefuse is plan's verdict for scripts: exit 1, as apply's own refusal of the plan, when
// the preview says apply would refuse the plan now (exit 3 is the recovery gate's). The plan is
// written all the same: the cluster may change, and the operator may want it for the record. A
// preview that could not be made says nothing about apply: exit 0.
func wouldRefuse(plan events.Plan, out string, pv *previewDoc) error {
	if pv == nil || pv.ApplyWouldRefuse == "" {
		return nil
	}
	where := out
	if where == "" {
		where = "standard output"
	}
	why, _, _ := strings.Cut(pv.ApplyWouldRefuse, "\n")
	err := errors.Newf("apply would refuse plan %s now: %s (the plan was written to %s; the preview says every reason)", plan.PlanID, why, where)
	for _, h := range pv.RefusalHints {
		err = errors.WithHint(err, h)
	}
	return err
}

// buildPlan builds the plan of a recovery point given by --checkpoint or --markers.
// Reading a checkpoint is bounded by --timeout, as every read of the cluster is.
func buildPlan(ctx context.Context, timeout time.Duration, p pointFlags, recoveryPoint string, stdin io.Reader, warn io.Writer) (events.Plan, error) {
	if p.checkpoint == "" {
		return buildPlanFromFiles(p.markers, recoveryPoint, stdin, warn)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	markers, _, rp, _, err := p.readPoint(ctx, recoveryPoint, stdin, warn)
	if err != nil {
		return events.Plan{}, err
	}
	plan, err := events.BuildPlan(rp, markers)
	if err != nil {
		return events.Plan{}, errors.Wrapf(err, "checkpoint %s", p.checkpoint)
	}
	return plan, nil
}

// buildPlanFromFiles reads every markers file and builds the plan. Every error names the file it
// is about; a marker index in BuildPlan's errors counts markers across all files in order, so a
// hint maps the indices back to files. Markers that do not say which checkpoint and subtask
// they are from get a warning on warn (completeness cannot be checked).
func buildPlanFromFiles(files []string, recoveryPoint string, stdin io.Reader, warn io.Writer) (events.Plan, error) {
	if err := stdinOnce("markers", files); err != nil {
		return events.Plan{}, err
	}
	// Markers go into the builder one at a time (a file of 1,000 markers ×
	// 10,000 partitions is 142 MB of JSON, and three times that as maps).
	// A plan error waits until every file has been read (the builder keeps
	// it for Plan), so that a file that does not parse is reported first,
	// whatever its place.
	b, planErr := events.NewPlanBuilder(recoveryPoint)
	var origin []string // origin[i] is the file of marker i
	for _, name := range files {
		data, err := readInput(name, stdin)
		if err != nil {
			return events.Plan{}, err
		}
		n := 0
		if planErr == nil {
			n, err = b.AddMarkers(data)
		} else { // no builder: still read every file, for its errors
			err = events.ReadMarkers(bytes.NewReader(data), func(int, events.Marker) error { n++; return nil })
		}
		for range n {
			origin = append(origin, name)
		}
		if err != nil {
			return events.Plan{}, errors.WithHint(decodeError(err, "markers file", name, data),
				"a markers file holds one marker object or a JSON array of them: "+
					`{"schemaVersion":1,"topic":"T","topicId":"ID","offsets":{"0":100}}`)
		}
	}
	var plan events.Plan
	err := planErr
	if err == nil {
		plan, err = b.Plan() // the first plan error of AddMarkers, if any
	}
	if err != nil {
		if len(files) > 1 {
			err = errors.WithHint(err, "markers are numbered from 0 across all files: "+describeOrigin(origin))
		} else if len(files) == 1 {
			err = errors.Wrapf(err, "markers file %s", files[0])
		}
		return events.Plan{}, err
	}
	if !b.SubtasksChecked() {
		fmt.Fprint(warn, unsourcedMarkersWarning)
	}
	return plan, nil
}

// describeOrigin says which markers came from which file: "0-1 from a.json, 2 from b.json".
func describeOrigin(origin []string) string {
	var parts []string
	for i := 0; i < len(origin); {
		j := i
		for j+1 < len(origin) && origin[j+1] == origin[i] {
			j++
		}
		if i == j {
			parts = append(parts, fmt.Sprintf("%d from %s", i, origin[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d from %s", i, j, origin[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// writeNewFile creates path and writes data to it, failing if path exists: a plan that was
// reviewed must never be replaced behind the reviewer's back. A partly written file is removed.
func writeNewFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return errors.WithHintf(errors.Newf("--out %s already exists; kcleanup never overwrites a plan file", path),
			"choose another file name, or remove %s first if you are sure no one needs it", path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return errors.WithHintf(errors.Wrapf(err, "create %s", path),
			"the folder %s does not exist: create it first, or give --out a path in an existing folder", filepath.Dir(path))
	}
	if err != nil {
		return errors.WithHintf(errors.Wrapf(err, "create %s", path),
			"give --out a path where you may create files, or leave --out out to write the plan to standard output")
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return errors.Wrapf(err, "write %s", path)
	}
	return nil
}

// previewPlan asks the cluster what applying plan would do, within --timeout.
func previewPlan(ctx context.Context, g globalOptions, plan events.Plan, t tombstoneOptions) (*previewDoc, error) {
	control, err := g.controlTopicOf(plan.Topic)
	if err != nil {
		return nil, err
	}
	ctx, c, done, err := g.connectFor(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	pv, err := c.Preview(ctx, control, plan, t.apply(worker.Options{Bootstrap: g.bootstrap()}))
	if err != nil {
		return nil, g.unreachable(err)
	}
	doc := &previewDoc{Preview: pv}
	if pv.Refusal != nil {
		doc.ApplyWouldRefuse = pv.Refusal.Error()
		doc.RefusalHints = errors.GetAllHints(pv.Refusal)
	}
	return doc, nil
}

// printPreview writes the plan's summary and its preview table (or why there is none).
func printPreview(w io.Writer, plan events.Plan, pv *previewDoc, pvErr error) {
	fmt.Fprintf(w, "plan %s: topic %s (ID %s), recovery point %q\n",
		plan.PlanID, plan.Topic, plan.TopicID, plan.SourceRecoveryPoint)
	if pvErr != nil {
		fmt.Fprintf(w, "preview unavailable: %s\n", indentContinuation(pvErr.Error(), "  "))
		for _, h := range errors.GetAllHints(pvErr) {
			fmt.Fprintf(w, "  hint: %s\n", h)
		}
		return
	}
	note := ""
	if !pv.ControlTopicExists {
		note = " (does not exist yet: no boundary)"
	}
	fmt.Fprintf(w, "preview against the live cluster; control topic %s%s\n", pv.ControlTopic, note)
	tw := newTable(w)
	fmt.Fprintln(tw, "PARTITION\tPLAN OFFSET\tLOG START\tNEW LOG START\tDELETABLE\tHIGH WATERMARK\tBOUNDARY\tAPPLY")
	for _, r := range pv.Partitions {
		boundary := "none"
		if r.Boundary != nil {
			boundary = fmt.Sprint(*r.Boundary)
		}
		// A refused partition keeps every record: no new log start, nothing deletable, and why.
		newStart, deletable, verdict := fmt.Sprint(r.NewLogStart), fmt.Sprint(r.Deletable), "ok"
		if r.Refused != "" {
			newStart, deletable = "-", "-"
			verdict = "refused: " + strings.TrimPrefix(r.Refused, fmt.Sprintf("partition %d: ", r.Partition))
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%d\t%s\t%s\n",
			r.Partition, r.PlanOffset, r.LogStart, newStart, deletable, r.HighWatermark, boundary, verdict)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "DELETABLE counts offsets; compaction may already have removed some of those records.")
	if pv.ApplyWouldRefuse != "" {
		fmt.Fprintf(w, "apply would refuse this plan now:\n  %s\n", indentContinuation(pv.ApplyWouldRefuse, "  "))
		for _, h := range pv.RefusalHints {
			fmt.Fprintf(w, "  hint: %s\n", h)
		}
		return
	}
	fmt.Fprintln(w, "apply would accept this plan now.")
}
