package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kcleanup/kcleanup/protocol"
)

// --restore-grace, on `kcleanup worker` and `kcleanup apply` (flag > environment > default): a
// process's own, which may only lengthen the grace the mirror's attachment carries
// (protocol.MirrorGrace). On `init --mirror-topic` and `mirror attach` it is the grace written
// with the attachment (flag only, default protocol.DefaultRestoreGrace).
const (
	flagRestoreGrace = "restore-grace"
	envRestoreGrace  = "KCLEANUP_RESTORE_GRACE"
	// defaultRestoreGrace is none of the process's own: the attachment's grace applies.
	defaultRestoreGrace = "0"
)

// addRestoreGraceFlag declares --restore-grace. It is a string so that the flag and its
// environment variable are parsed by the same code (restoreGrace).
func addRestoreGraceFlag(f *pflag.FlagSet) {
	f.String(flagRestoreGrace, defaultRestoreGrace,
		"lengthen the restore grace the Flink Agents mirror's attachment carries (kcleanup mirror grace sets that one) to this `duration` (90s, 15m, 2h, up to 1d); it can never shorten it; 0: the attachment's alone (env "+envRestoreGrace+")")
}

// addAttachGraceFlag declares --restore-grace of the commands that attach a mirror.
func addAttachGraceFlag(f *pflag.FlagSet) {
	f.String(flagRestoreGrace, protocol.DefaultRestoreGrace.String(),
		"the mirror's restore grace, written with the attachment: every apply and worker deletes nothing for a plan until this `duration` (whole seconds, up to 1d) after the mirror showed it, so that a Flink Agents restore that passed its check just before can finish replaying; set it to your longest restore; 0: off")
}

// attachGrace resolves --restore-grace of an attach (the flag alone: the environment variable
// is a process's own grace).
func attachGrace(cmd *cobra.Command) (time.Duration, error) {
	raw := cmd.Flags().Lookup(flagRestoreGrace).Value.String()
	d, err := parseGrace(raw, "--"+flagRestoreGrace)
	if err == nil && d%time.Second != 0 {
		err = usageError(errors.WithHint(errors.Newf("invalid --%s %q: not whole seconds", flagRestoreGrace, raw), "give whole seconds: 90s, 15m, 2h"))
	}
	return d, err
}

// restoreGrace resolves --restore-grace; bad input is a usage error.
func restoreGrace(cmd *cobra.Command) (time.Duration, error) {
	raw, src, err := lookupSetting(cmd, flagRestoreGrace, envRestoreGrace, defaultRestoreGrace)
	if err != nil {
		return 0, err
	}
	return parseGrace(raw, src)
}

// parseGrace reads a restore grace given by src; bad input is a usage error.
func parseGrace(raw, src string) (time.Duration, error) {
	d, err := parseDays(strings.TrimSpace(raw))
	hint := "give a duration such as 90s, 15m or 2h (at most " + protocol.MaxRestoreGrace.String() + "), or 0 for none: the time a Flink Agents restore takes to replay"
	switch {
	case err != nil:
		return 0, usageError(errors.WithHint(errors.Newf("invalid %s %q: not a duration", src, raw), hint))
	case d < 0:
		return 0, usageError(errors.WithHint(errors.Newf("invalid %s %q: negative", src, raw), hint))
	case d > protocol.MaxRestoreGrace:
		return 0, usageError(errors.WithHint(errors.Newf("invalid %s %q: above the longest grace, %s", src, raw, protocol.MaxRestoreGrace),
			hint+"; a recovery point needed for longer is pinned: kcleanup pin --markers … --recovery-point … --for 7d --reason …"))
	}
	return d, nil
}

// sleepThrough is kcleanup apply's executor for a Pause: it waits in-process.
func sleepThrough(ctx context.Context, p protocol.Paused, say func(protocol.Progress)) error {
	if p.Grace != nil {
		return waitGrace(ctx, *p.Grace, say)
	}
	return waitPinHold(ctx, *p.Hold, say)
}

// waitGrace waits, in this process, until the restore grace g is out, saying so first.
func waitGrace(ctx context.Context, g protocol.GraceWait, say func(protocol.Progress)) error {
	since := "its record was acknowledged at " + g.From.UTC().Format(time.RFC3339)
	if !g.Known {
		since = "its record's time is not known; first seen at " + g.From.UTC().Format(time.RFC3339)
	}
	say(protocol.Progress{Step: "grace", Message: fmt.Sprintf(
		"waiting out the restore grace of %s until %s: mirror %s shows plan %s and %s; nothing is deleted before (Ctrl-C stops the wait: the plan stays committed, and a worker or apply again deletes after it)",
		g.Grace, g.Until.UTC().Format(time.RFC3339), g.Mirror, g.PlanID, since)})
	t := time.NewTimer(time.Until(g.Until))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		until := g.Until.UTC().Format(time.RFC3339)
		return errors.WithHintf(errors.Wrapf(ctx.Err(), "stopped waiting out the restore grace of plan %s (until %s)", g.PlanID, until),
			"the wait for the restore grace (until %s) was stopped: nothing was deleted; the boundary is committed and recovery enforces it", until)
	}
}

// waitPinHold waits, in-process, until the broker's clock should have
// passed the expiry of the pin that holds the deletion back (its gap, on
// this host's monotonic clock, and a second): the next run judges again on
// the broker's time of its own DELETING.
func waitPinHold(ctx context.Context, h protocol.PinHold, say func(protocol.Progress)) error {
	wait := protocol.Paused{Hold: &h}.Wait(time.Now())
	say(protocol.Progress{Step: "pin", Message: fmt.Sprintf(
		"waiting %s for pin %s: the broker's clock reads %s and the pin expires at %s by it; nothing above the pin is deleted before (Ctrl-C stops the wait: the plan stays committed, and a worker or apply again deletes after it)",
		wait.Round(time.Second), h.Pin.PinID, h.Broker.UTC().Format(time.RFC3339), h.Expires.UTC().Format(time.RFC3339))})
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return errors.WithHint(errors.Wrapf(ctx.Err(), "stopped waiting for pin %s to expire by the broker's clock (at %s)", h.Pin.PinID, h.Expires.UTC().Format(time.RFC3339)),
			"nothing above the pin was deleted; the boundary is committed and recovery enforces it")
	}
}
