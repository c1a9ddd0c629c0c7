package main

import (
	"context"
	"fmt"
	"io"

	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/worker"
)

// Reasons of a refusal that is not the projector's verdict on the markers (those are
// projector.Refuse*). They match the reasons a worker's /v1/validate gives where they overlap.
const (
	refuseNotCaughtUp      projector.RefusalReason = "not-caught-up"
	refuseNoControlTopic   projector.RefusalReason = "control-topic-missing"
	refuseDataTopicUnknown projector.RefusalReason = "data-topic-unreadable"
	refuseTopicRecreated   projector.RefusalReason = "topic-recreated"
	refuseBelowLogStart    projector.RefusalReason = "below-log-start"
	refuseUnknownPartition projector.RefusalReason = "unknown-partition"
)

// validateAllowedNoControl is what validate says when it allows without a control topic.
const validateAllowedNoControl = "no control topic: no cleanup boundary was ever committed"

func newValidateCmd(g *globalOptions) *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "validate --markers FILE [--markers FILE ...]",
		Short: "The recovery gate: may a job restore from the recovery point with these markers?",
		Long: `validate answers, for a deployment pipeline, whether a job may restore from a checkpoint or
savepoint: it reads the recovery point's markers (one marker object or a JSON array of them per
file), reads the control topic of the markers' data topic to its end, and allows the recovery
point only if, for every partition of the committed boundary, every marker offset is at or
above the boundary and the topic ID is the one the control topic governs.

Exit 0: allowed. Exit 3: refused; the message names the topic-partition, the offset the
recovery point needs and the committed boundary. validate fails closed: it also exits 3 when it
cannot read the control topic to its end within --timeout (the broker is unreachable, say) and
when the projection is degraded by a record from a newer kcleanup. Exit 1: a markers file could
not be read or parsed.

The control topic is <data topic>.kcleanup, or --control-topic. When the default control topic
does not exist, no boundary was ever committed: the recovery point is allowed, with a warning,
provided the data topic still has every record the markers need (same topic ID, every marker
offset at or above the partition's log start). A control topic named explicitly (by
--control-topic or KCLEANUP_CONTROL_TOPIC) that does not exist is refused: a misspelt name must
never approve a recovery point. Create it with 'kcleanup init' before cleanup ever runs.`,
		Example: `  kcleanup validate --markers chk-42/action-state-markers.json
  kcleanup validate --markers subtask-0.json --markers subtask-1.json -o json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			markers, origins, err := readMarkerFiles(files, cmd.InOrStdin())
			if err != nil {
				return err
			}
			return runValidate(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), *g, markers, origins)
		},
	}
	cmd.Flags().StringArrayVar(&files, "markers", nil, "recovery-point markers `file` (repeat for several files)")
	_ = cmd.MarkFlagRequired("markers")
	return cmd
}

// validateDoc is `kcleanup validate -o json`: the worker's /v1/validate verdict, with warnings.
type validateDoc struct {
	worker.ValidateResult
	Warnings []string `json:"warnings,omitempty"`
}

func runValidate(ctx context.Context, w, errw io.Writer, g globalOptions, markers []events.Marker, origins []string) error {
	topic := markers[0].Topic
	ctl, err := g.controlTopicOf(topic)
	if err != nil {
		return err
	}
	c, err := g.connect()
	if err != nil {
		return err
	}
	defer c.Close()

	proj, err := g.project(ctx, c, ctl)
	switch {
	case errors.Is(err, worker.ErrTopicNotFound):
		return validateWithoutControlTopic(ctx, w, errw, g, c, ctl, markers, origins)
	case err != nil:
		// Whatever stopped the read (an unreachable broker, a denied ACL, the deadline), the
		// verdict cannot be proven: fail closed.
		err = refusedError(errors.WithHintf(errors.Mark(errors.Wrapf(err,
			"refused: cannot prove that the view of control topic %s is caught up", ctl), worker.ErrNotCaughtUp),
			"validate refuses whenever it cannot read the control topic to its end within --timeout (%s): check -b %s, the network and --command-config, then run it again",
			g.timeout, g.bootstrap()))
		return reportRefusal(w, g, worker.ValidateResult{ControlTopic: ctl, Refusal: &worker.Refusal{
			Reason: refuseNotCaughtUp, Message: err.Error(), Marker: -1, Topic: topic}}, err)
	}
	defer proj.Close()

	res := worker.ValidateMarkers(proj, markers)
	if res.Allowed {
		if g.output == outputJSON {
			return writeJSON(w, validateDoc{ValidateResult: res})
		}
		return printAllowed(w, proj, markers)
	}
	return reportRefusal(w, g, res, refusedError(proj.State.Validate(markers)), origins...)
}

// reportRefusal prints a refusal on stdout (the verdict) and returns err, which main prints
// on stderr with its hints and maps to exit code 3.
func reportRefusal(w io.Writer, g globalOptions, res worker.ValidateResult, err error, origins ...string) error {
	res.Allowed = false
	if g.output == outputJSON {
		if res.Refusals == nil && res.Refusal != nil {
			res.Refusals = []worker.Refusal{*res.Refusal}
		}
		if res.Hint == "" {
			if hints := errors.GetAllHints(err); len(hints) > 0 {
				res.Hint = hints[0]
			}
		}
		if werr := writeJSON(w, validateDoc{ValidateResult: res}); werr != nil {
			return werr
		}
		return err
	}
	fmt.Fprintf(w, "REFUSED: the recovery point may not be restored (control topic %s", res.ControlTopic)
	if res.ReadTo > 0 {
		fmt.Fprintf(w, ", read to offset %d", res.ReadTo)
	}
	fmt.Fprintln(w, ")")
	if len(res.Refusals) == 0 {
		return err
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "  MARKER\tPARTITION\tNEEDS OFFSET\tBOUNDARY\tSET BY PLAN\tREASON")
	for _, r := range res.Refusals {
		marker := "-"
		if r.Marker >= 0 && r.Marker < len(origins) {
			marker = origins[r.Marker]
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", marker, optInt(r.Partition), optInt(r.Requested),
			optInt(r.Boundary), orDash(shorten(r.PlanID, shortPlanID)), r.Reason)
	}
	if ferr := tw.Flush(); ferr != nil {
		return ferr
	}
	return err
}

// printAllowed shows, per partition of the boundary, the lowest offset any marker needs.
func printAllowed(w io.Writer, proj *worker.Projection, markers []events.Marker) error {
	boundary := proj.State.Boundary()
	fmt.Fprintf(w, "ALLOWED: the recovery point may be restored (control topic %s, read to offset %d)\n", proj.Topic, proj.Next)
	if len(boundary) == 0 {
		fmt.Fprintln(w, "  no cleanup boundary is committed yet")
		return nil
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "  PARTITION\tLOWEST MARKER OFFSET\tBOUNDARY\tSET BY PLAN")
	for _, p := range boundary.Partitions() {
		lowest := int64(-1)
		for _, m := range markers {
			if off, ok := m.Offsets[p]; ok && (lowest < 0 || off < lowest) {
				lowest = off
			}
		}
		fmt.Fprintf(tw, "  %d\t%d\t%d\t%s\n", p, lowest, boundary[p], shorten(proj.State.BoundarySetBy(p), shortPlanID))
	}
	return tw.Flush()
}

func optInt[T int32 | int64](v *T) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}

// validateWithoutControlTopic decides when the control topic does not exist. The default
// control topic missing means that kcleanup never committed a boundary for the topic; as that
// is weak evidence (a deleted control topic looks the same), the data topic is asked instead:
// the recovery point is allowed only if the topic is the incarnation the markers name and still
// holds every offset they need. An explicitly named control topic that is missing is refused:
// a typo must not approve everything.
func validateWithoutControlTopic(ctx context.Context, w, errw io.Writer, g globalOptions, c *worker.Cluster,
	ctl string, markers []events.Marker, origins []string) error {
	topic := markers[0].Topic
	res := worker.ValidateResult{ControlTopic: ctl}
	refuse := func(reason projector.RefusalReason, err error) error {
		err = refusedError(err)
		res.Refusal = &worker.Refusal{Reason: reason, Message: err.Error(), Marker: -1, Topic: topic}
		return reportRefusal(w, g, res, err, origins...)
	}
	if g.controlTopic != "" && g.controlTopic != worker.ControlTopicFor(topic) {
		return refuse(refuseNoControlTopic, errors.WithHintf(errors.Newf(
			"refused: control topic %s does not exist; it was named explicitly (--%s or %s), and a misspelt name must never approve a recovery point",
			ctl, flagControlTopic, envControlTopic),
			"check the name; if cleanup never ran for topic %s, create its control topic first: kcleanup init --topic %s --control-topic %s (an empty control topic proves that no boundary exists)",
			topic, topic, ctl))
	}

	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	info, err := c.TopicMetadata(ctx, topic)
	if err == nil {
		info.Start, err = c.StartOffsets(ctx, topic)
	}
	if err != nil {
		return refuse(refuseDataTopicUnknown, errors.WithHint(errors.Wrapf(g.unreachable(err),
			"refused: control topic %s does not exist, and data topic %s could not be checked instead", ctl, topic),
			"if the data topic is gone, so is the action state this recovery point needs"))
	}
	res.Refusals = dataTopicRefusals(info, markers)
	if len(res.Refusals) > 0 {
		first := res.Refusals[0]
		res.Refusal = &first
		return reportRefusal(w, g, res, refusedError(errors.WithHint(errors.Newf("%s", first.Message),
			"restore from a newer recovery point whose markers are at or above the topic's log-start offsets")), origins...)
	}

	warning := fmt.Sprintf("control topic %s does not exist: no cleanup boundary was ever committed for topic %s; "+
		"if its cleanups are recorded under another control topic, pass --%s", ctl, topic, flagControlTopic)
	fmt.Fprintf(errw, "Warning: %s\n", warning)
	res.Allowed = true
	if g.output == outputJSON {
		return writeJSON(w, validateDoc{ValidateResult: res, Warnings: []string{warning}})
	}
	fmt.Fprintf(w, "ALLOWED: the recovery point may be restored (%s)\n", validateAllowedNoControl)
	fmt.Fprintf(w, "  checked instead: topic %s has the markers' topic ID %s and every marker offset is at or above its partition's log start\n",
		topic, info.ID)
	return nil
}

// dataTopicRefusals checks markers against the live data topic: the same incarnation, and every
// offset they need still there (at or above the log start).
func dataTopicRefusals(info worker.TopicInfo, markers []events.Marker) []worker.Refusal {
	var out []worker.Refusal
	for i, m := range markers {
		if m.TopicID != info.ID {
			out = append(out, worker.Refusal{Reason: refuseTopicRecreated, Marker: i, Topic: m.Topic, MarkerTopicID: m.TopicID,
				Message: fmt.Sprintf("Cannot restore Kafka action state for %s: the recovery point is from topic ID %s but the topic now has ID %s (it was deleted and recreated)",
					m.Topic, m.TopicID, info.ID)})
			continue
		}
		for _, p := range m.Offsets.Partitions() {
			off := m.Offsets[p]
			start, ok := info.Start[p]
			switch {
			case !ok:
				out = append(out, worker.Refusal{Reason: refuseUnknownPartition, Marker: i, Topic: m.Topic, Partition: &p,
					Requested: &off, Message: fmt.Sprintf("Cannot restore Kafka action state for %s-%d: the topic has no such partition", m.Topic, p)})
			case off < start:
				out = append(out, worker.Refusal{Reason: refuseBelowLogStart, Marker: i, Topic: m.Topic, Partition: &p, Requested: &off,
					Message: fmt.Sprintf("Cannot restore Kafka action state for %s-%d from offset %d because records below offset %d are already deleted (its log start), though no control topic records a cleanup boundary",
						m.Topic, p, off, start)})
			}
		}
	}
	return out
}
