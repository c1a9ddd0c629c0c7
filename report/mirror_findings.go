package report

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/topicconfig"
)

// MirrorFindings are doctor's findings about an attached mirror: its standing
// (cannot be written blocks cleanup, since nothing is deleted until the
// mirror shows the plan; lagging, ahead, and a permission the checking
// principal lacks warn), then the durability
// settings the job does not need but the boundary it carries does
// (MirrorTopicConfigs), as warnings. configs are the mirror topic's
// effective configs (nil when it could not be described).
func MirrorFindings(a protocol.MirrorAssessment, configs map[string]string, bootstrap string) []protocol.Finding {
	subject := "mirror topic " + a.Topic
	var out []protocol.Finding
	switch {
	case a.Standing == protocol.MirrorInStep:
		msg := fmt.Sprintf("in step: topic ID %s as attached, one partition, cleanup.policy=compact, the Flink Agents fold is valid, its effective boundary %s equals kcleanup's", a.TopicID, a.Boundary)
		if a.Plans == 0 {
			msg = fmt.Sprintf("in step: topic ID %s as attached, one partition, cleanup.policy=compact, no boundary yet and no plan on the mirror (a Flink Agents job refuses to recover from it until one is applied)", a.TopicID)
		}
		out = append(out, protocol.Finding{Severity: protocol.OK, Subject: subject, Message: msg})
	case a.Denied:
		// doctor and status run as an operator, not as the workers: a
		// missing grant of theirs blocks nothing, but a worker running as
		// the same principal could not keep the mirror in step.
		out = append(out, protocol.Finding{Severity: protocol.Warn, Subject: subject,
			Message: a.Reason + " (a worker running as this principal could not keep the mirror in step; run doctor with the workers' --command-config to check theirs)", Hint: a.Hint})
	case a.Standing == protocol.MirrorHeld:
		// It passes: the transaction ends (kcleanup's own writer is fenced
		// by the next kcleanup writer), and nothing is deleted meanwhile.
		out = append(out, protocol.Finding{Severity: protocol.Warn, Subject: subject,
			Message: a.Reason + "; nothing is deleted until the mirror is read past it", Hint: a.Hint})
	case a.Standing == protocol.MirrorLagging, a.Standing == protocol.MirrorAhead:
		out = append(out, protocol.Finding{Severity: protocol.Warn, Subject: subject,
			Message: fmt.Sprintf("%s (lag %d): %s", a.Standing, a.Lag, a.Reason), Hint: a.Hint})
	default:
		out = append(out, protocol.Finding{Severity: protocol.Block, Subject: subject,
			Message: fmt.Sprintf("%s: %s; nothing is deleted until the mirror holds each plan", a.Standing, a.Reason), Hint: a.Hint})
	}
	if configs == nil || a.LiveTopicID == "" {
		return out
	}
	return append(out, settingsFindings(subject, configs, bootstrap)...)
}

// settingsFindings warns of the durability settings a mirror should have
// (topicconfig.MirrorTopic: the control topic's, without the job's own two rules).
func settingsFindings(subject string, configs map[string]string, bootstrap string) []protocol.Finding {
	var out []protocol.Finding
	for _, p := range topicconfig.MirrorTopic(strings.TrimPrefix(subject, "mirror topic "), configs, bootstrap) {
		out = append(out, protocol.Finding{Severity: protocol.Warn, Subject: subject,
			Message: p.Message + " (the job does not need it; the boundary the mirror carries does: see kcleanup init --help)", Hint: p.Fix})
	}
	return out
}

// MirrorTopicFindings are init's findings about a mirror topic it created or
// found (created says which): the job's own rules (one partition,
// cleanup.policy=compact, a fold it recovers from) block; the durability
// settings and a replication factor below 3 warn.
func MirrorTopicFindings(v protocol.MirrorView, configs map[string]string, replicas int, bootstrap, created string) []protocol.Finding {
	subject := "mirror topic " + v.Topic
	if err := protocol.MirrorTopicProblem(v, "", bootstrap); err != nil {
		return []protocol.Finding{{Severity: protocol.Block, Subject: subject, Message: err.Error(), Hint: errors.FlattenHints(err)}}
	}
	msg := fmt.Sprintf("%s: one partition, cleanup.policy=compact, replication factor %d, topic ID %s", created, replicas, v.TopicID)
	if n := len(v.Fold.Operations()); n > 0 {
		b, err := v.Fold.Effective()
		if err != nil {
			return []protocol.Finding{{Severity: protocol.Block, Subject: subject, Message: fmt.Sprintf("holds %d plan(s) the Flink Agents job cannot recover from: %v", n, err),
				Hint: "attach an empty topic instead"}}
		}
		msg += fmt.Sprintf("; holds %d plan(s) in Flink Agents' format, effective boundary %s", n, b)
	}
	out := []protocol.Finding{{Severity: protocol.OK, Subject: subject, Message: msg}}
	if replicas < 3 {
		out = append(out, protocol.Finding{Severity: protocol.Warn, Subject: subject,
			Message: fmt.Sprintf("replication factor is %d; production needs at least 3 with min.insync.replicas=2 (the mirror's COMMITTED is written before any deletion)", replicas)})
	}
	return append(out, settingsFindings(subject, configs, bootstrap)...)
}
