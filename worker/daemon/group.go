package daemon

import (
	"fmt"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kerr"
)

// groupState is whether the consumer group admitted this replica. A member
// the group refuses (a session timeout outside the broker's bounds, a
// missing ACL) owns nothing and never will: it is not ready (/readyz 503
// with the reason) and kcleanup_group_admitted is 0, instead of a replica
// that looks healthy and does nothing, forever.
type groupState struct {
	admitted bool
	// refusal is why the group last refused the member ("" while admitted,
	// or before the first answer); code is its Kafka error code name.
	refusal, code string
	since         time.Time
	refusals      map[string]uint64 // error code name → count, for metrics
}

// groupAdmitted records a successful join (onAssigned).
func (d *Daemon) groupAdmitted() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.group.admitted && d.group.refusal != "" {
		d.log.Info("consumer group admitted this replica", "group", d.cfg.group, "after", d.group.refusal)
	}
	d.group.admitted, d.group.refusal, d.group.code = true, "", ""
}

// groupRefused records an error of the group management loop: franz-go has
// already called onLost (nothing is owned) and retries the join. why, when
// not empty, is the caller's wording of it.
func (d *Daemon) groupRefused(err error, why string) {
	described, code := d.describeGroupError(err)
	if why == "" {
		why = described
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.group.refusal != why {
		d.group.since = time.Now()
		if errors.Is(err, kerr.InvalidSessionTimeout) {
			d.log.Error("the consumer group refuses this replica: it owns nothing until restarted with a session timeout the broker accepts",
				"group", d.cfg.group, "reason", why)
		}
	}
	d.group.admitted, d.group.refusal, d.group.code = false, why, code
	if d.group.refusals == nil {
		d.group.refusals = map[string]uint64{}
	}
	d.group.refusals[code]++
}

// describeGroupError says why the group refused the member, with the fix
// when one is known.
func (d *Daemon) describeGroupError(err error) (why, code string) {
	code = "OTHER"
	var ke *kerr.Error
	if errors.As(err, &ke) {
		code = ke.Message
	}
	switch {
	case errors.Is(err, kerr.InvalidSessionTimeout):
		return fmt.Sprintf("the broker refused session timeout %s (INVALID_SESSION_TIMEOUT): it must lie within the broker's group.min.session.timeout.ms and group.max.session.timeout.ms (6s and 30m by default); restart with --session-timeout within them, e.g. --session-timeout=%s",
			d.cfg.sessionTimeout, DefaultSessionTimeout), code
	}
	return fmt.Sprintf("consumer group %s: %v", d.cfg.group, err), code
}

// groupReady reports whether the group admitted the member, and why not.
func (d *Daemon) groupReady() (bool, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.group.admitted:
		return true, ""
	case d.group.refusal != "":
		return false, d.group.refusal
	}
	return false, fmt.Sprintf("joining consumer group %s: not admitted yet", d.cfg.group)
}
