package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"

	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
)

// pinOptions are the flags of `kcleanup pin`.
type pinOptions struct {
	point         pointFlags
	recoveryPoint string
	forDuration   string
	until         string
	reason        string
}

func newPinCmd(g *globalOptions) *cobra.Command {
	var o pinOptions
	cmd := &cobra.Command{
		Use:   "pin (--checkpoint PATH | --markers FILE... --recovery-point NAME) [--for 14d | --until TIME] --reason TEXT",
		Short: "Pin a recovery point: refuse every cleanup above it until it expires or is unpinned",
		Long: `pin protects a recovery point (a rollback savepoint, the checkpoint a restore replays from)
against every later cleanup. It reads the recovery point exactly as plan does — the checkpoint or
savepoint itself with --checkpoint PATH (the recovery point is then PATH as given), or markers
files with --recovery-point — takes the minimum over the markers, per partition, appends a PINNED record to the control topic and reads
it back. From that record on, the control topic rejects every COMMITTED whose plan is above the
pin on a partition it protects (reason pinned), and apply and submit refuse such plans before
writing anything, naming the pin.

--for (e.g. 30m, 12h, 7d) or --until (RFC 3339) sets an expiry, judged by the time each later
COMMITTED carries; without either the pin holds until kcleanup unpin.

A pin that lands after a commit above it protects nothing that commit condemned: where the
boundary is already above the pin, the pin is void. pin then says so and exits 3 (void: it
protects nothing; partial: some partitions are not protected). The record stays on the control
topic either way (unpin it if it is of no use). Exit 0: the pin protects every partition.`,
		Example: `  kcleanup pin --checkpoint s3://flink/savepoints/savepoint-3f2a1b-0c5d6e7f8a9b --for 14d --reason "rollback point for release 42"
  kcleanup pin --markers sp-7/markers.json --recovery-point sp-7 --for 14d --reason "rollback point for release 42"
  kcleanup pin --markers chk-42/markers.json --recovery-point chk-42 --until 2026-12-24T00:00:00Z --reason "restore drill"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.point.check(true, "pin"); err != nil {
				return err
			}
			if len(o.point.markers) > 0 && o.recoveryPoint == "" {
				return usageError(errors.WithHint(errors.WithHint(errors.New("--recovery-point is required with --markers"),
					"name the checkpoint or savepoint the markers are from, e.g. --recovery-point sp-7"), "run 'kcleanup pin --help' for usage"))
			}
			return runPin(cmd.Context(), *g, o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	o.point.add(f, true)
	f.StringVar(&o.recoveryPoint, "recovery-point", "", "`name` of the recovery point, e.g. the savepoint ID (required with --markers; default with --checkpoint: PATH as given)")
	f.StringVar(&o.forDuration, "for", "", "expire after this `duration` (30m, 12h, 7d)")
	f.StringVar(&o.until, "until", "", "expire at this RFC 3339 `time`")
	f.StringVar(&o.reason, "reason", "", "why, for the audit (required)")
	_ = cmd.MarkFlagRequired("reason")
	cmd.MarkFlagsMutuallyExclusive("for", "until")
	return cmd
}

// parseExpiry turns --for or --until into an expiry after now (zero: none).
func parseExpiry(forDuration, until string, now time.Time) (time.Time, error) {
	switch {
	case forDuration != "":
		d, err := parseDays(forDuration)
		if err != nil || d <= 0 {
			return time.Time{}, usageError(errors.WithHint(errors.Newf("--for %q is not a positive duration", forDuration),
				"give a duration such as 30m, 12h or 7d"))
		}
		return now.Add(d), nil
	case until != "":
		t, err := time.Parse(time.RFC3339, until)
		if err != nil {
			return time.Time{}, usageError(errors.WithHint(errors.Newf("--until %q is not an RFC 3339 time", until),
				"give a time such as 2026-12-24T00:00:00Z"))
		}
		if !t.After(now) {
			return time.Time{}, usageError(errors.WithHint(errors.Newf("--until %s is not in the future", until),
				"a pin that has already expired protects nothing"))
		}
		return t.UTC(), nil
	}
	return time.Time{}, nil
}

// parseDays is time.ParseDuration with a "d" (24 h) unit for whole days.
func parseDays(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil {
			return 0, err
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// pinResult is the JSON answer of pin and unpin: the pin as the log
// decided it, on which control topic.
type pinResult struct {
	ControlTopic string `json:"controlTopic"`
	report.PinStatus
}

func runPin(ctx context.Context, g globalOptions, o pinOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	expires, err := parseExpiry(o.forDuration, o.until, time.Now())
	if err != nil {
		return err
	}
	if strings.TrimSpace(o.reason) == "" {
		return usageError(errors.WithHint(errors.New("--reason is blank"), "say why the recovery point is pinned: history shows it"))
	}
	plan, err := buildPlan(ctx, g.timeout, o.point, o.recoveryPoint, stdin, stderr)
	if err != nil {
		return err
	}
	control, err := g.controlTopicOf(plan.Topic)
	if err != nil {
		return err
	}
	pin, err := pinSession(ctx, g, control, plan.Topic, plan.TopicID, stderr, func(ctx context.Context, c *worker.Cluster, proj *worker.Projection, wo worker.Options) (projector.Pin, error) {
		return c.Pin(ctx, proj, worker.PinRequest{RecoveryPoint: plan.SourceRecoveryPoint, Topic: plan.Topic, TopicID: plan.TopicID,
			Offsets: plan.Offsets, Expires: expires, Reason: o.reason}, wo)
	})
	if err != nil {
		return err
	}
	if err := printPin(g, stdout, control, pin); err != nil {
		return err
	}
	switch st := pin.Status(time.Time{}); st {
	case projector.PinVoid, projector.PinPartial:
		return refusedError(errors.WithHint(errors.Newf("pin %s is %s: a commit above it landed first on %s, so what it condemned there is not protected",
			pin.PinID, strings.ToUpper(st), voidPartitions(pin)),
			"restore or roll back from a recovery point at or above the boundary (kcleanup status shows it); unpin this one when it is of no use: "+pin.UnpinCommand(control)))
	}
	return nil
}

func voidPartitions(p projector.Pin) string {
	var parts []string
	for _, part := range p.Offsets.Partitions() {
		if v, ok := p.Void[part]; ok {
			parts = append(parts, fmt.Sprintf("partition %d (boundary %d, set by plan %s; pinned %d)", part, v.Boundary, v.SetBy, p.Offsets[part]))
		}
	}
	return strings.Join(parts, ", ")
}

func newUnpinCmd(g *globalOptions) *cobra.Command {
	var reason, dataTopic string
	cmd := &cobra.Command{
		Use:   "unpin PIN_ID --reason TEXT",
		Short: "End a pin: cleanups above its recovery point are allowed again",
		Long: `unpin appends UNPINNED for the pin (its ID is in kcleanup status and in pin's output) and reads
it back. From that record on the pin protects nothing. --reason is required: history shows it.`,
		Example: `  kcleanup unpin 3f0c9a1b2c3d4e5f --topic action-state --reason "release 42 is healthy"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			control, err := g.readControlTopic(dataTopic)
			if err != nil {
				return err
			}
			pin, err := pinSession(cmd.Context(), *g, control, "", "", cmd.ErrOrStderr(), func(ctx context.Context, c *worker.Cluster, proj *worker.Projection, wo worker.Options) (projector.Pin, error) {
				return c.Unpin(ctx, proj, args[0], reason, wo)
			})
			if err != nil {
				return err
			}
			return printPin(*g, cmd.OutOrStdout(), control, pin)
		},
	}
	cmd.Flags().StringVar(&dataTopic, flagTopic, "", "data `topic` whose control topic (<topic>.kcleanup) holds the pin")
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit (required)")
	_ = cmd.MarkFlagRequired("reason")
	return cmd
}

// pinSession reads control and runs do on it, once no other control topic governs the pinned
// topic incarnation (topic, topicID; "": the one control is bound to).
func pinSession(ctx context.Context, g globalOptions, control, topic, topicID string, stderr io.Writer,
	do func(context.Context, *worker.Cluster, *worker.Projection, worker.Options) (projector.Pin, error)) (projector.Pin, error) {
	ctx, c, done, err := g.connectFor(ctx)
	if err != nil {
		return projector.Pin{}, err
	}
	defer done()
	proj, err := g.project(ctx, c, control)
	if err != nil {
		return projector.Pin{}, err
	}
	defer proj.Close()
	gov, err := governors(ctx, g, c, proj, topic, topicID)
	if err != nil {
		return projector.Pin{}, err
	}
	o := worker.Options{
		Bootstrap: g.bootstrap(),
		Observe:   func(p protocol.Progress) { fmt.Fprintf(stderr, "[%s] %s\n", p.Step, p.Message) },
		Governors: gov,
	}
	pin, err := do(ctx, c, proj, o)
	if err != nil {
		return projector.Pin{}, governedError(g, err)
	}
	return pin, nil
}

func printPin(g globalOptions, stdout io.Writer, control string, pin projector.Pin) error {
	if g.output == outputJSON {
		return writeJSON(stdout, pinResult{ControlTopic: control, PinStatus: report.PinStatusOf(pin)})
	}
	tw := newTable(stdout)
	fmt.Fprintf(tw, "pin\t%s\n", pin.PinID)
	fmt.Fprintf(tw, "control topic\t%s (offset %d)\n", control, pin.Offset)
	fmt.Fprintf(tw, "recovery point\t%s\n", pin.RecoveryPoint)
	fmt.Fprintf(tw, "offsets\t%s\n", pin.Offsets)
	fmt.Fprintf(tw, "expires\t%s\n", expiryText(pin))
	fmt.Fprintf(tw, "state\t%s\n", pinStateText(pin))
	fmt.Fprintf(tw, "reason\t%s\n", clip(pin.Reason, report.TextLimit))
	return tw.Flush()
}

func expiryText(p projector.Pin) string {
	if p.Expires.IsZero() {
		return "never (until unpinned)"
	}
	return p.Expires.Format(time.RFC3339)
}

// pinStateText is the log's state, and whether this host's clock says the
// expiry has passed (the log judges it by each COMMITTED's own time).
func pinStateText(p projector.Pin) string {
	st := p.Status(time.Time{})
	switch {
	case st == projector.PinUnpinned:
		return fmt.Sprintf("unpinned at offset %d by %s: %s", p.Unpinned.Offset, p.Unpinned.Actor, clip(p.Unpinned.Reason, report.TextLimit))
	case !p.Expires.IsZero() && !time.Now().Before(p.Expires):
		return "expired (by this host's clock)"
	case st == projector.PinVoid || st == projector.PinPartial:
		return st + ": " + voidPartitions(p)
	}
	return "active: every plan above it is refused"
}

// printPins is the status view's list of pins that still say something:
// every pin not unpinned (unpinned ones are in history and -o json).
func printPins(w io.Writer, pins []report.PinStatus) error {
	var live []report.PinStatus
	for _, p := range pins {
		if p.Unpinned == nil {
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Pins (every plan above a pin is refused until it expires or is unpinned):")
	tw := newTable(w)
	fmt.Fprintln(tw, "  PIN\tRECOVERY POINT\tOFFSETS\tEXPIRES\tSTATE\tREASON")
	for _, p := range live {
		expires, state := "never", p.State
		if p.Expires != nil {
			expires = p.Expires.Format(time.RFC3339)
			if !time.Now().Before(*p.Expires) {
				state = "expired (this host's clock)"
			}
		}
		if len(p.Void) > 0 && state != "active" {
			var parts []string
			for _, v := range p.Void {
				parts = append(parts, strconv.Itoa(int(v.Partition)))
			}
			state += " (void on " + strings.Join(parts, ",") + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", p.PinID, clip(p.RecoveryPoint, tableKeyLimit), p.Offsets, expires, state, clip(p.Reason, tableDetailLimit))
	}
	return tw.Flush()
}
