package protocol

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/topicconfig"
)

// Topic is what the cluster reported about a topic at one moment.
type Topic struct {
	Name string
	// ID is the topic ID in Kafka's text form (URL-safe base64, no padding).
	ID         string
	Partitions []int32
	// Replicas is the replication factor of the first partition.
	Replicas int
	// Configs holds the effective value of every topic config.
	Configs map[string]string
	// Start and End are the log-start offset and high watermark per partition.
	Start, End events.Offsets
}

// Severity says whether a finding blocks cleanup.
type Severity string

// Severities, from harmless to blocking.
const (
	OK    Severity = "ok"
	Warn  Severity = "warn"
	Block Severity = "block"
)

// Finding is one result of a health check: what was checked, what was seen,
// and the exact command that fixes it.
type Finding struct {
	Severity Severity `json:"severity"`
	Subject  string   `json:"subject"`
	Message  string   `json:"message"`
	Hint     string   `json:"hint,omitempty"`
}

// Blocking returns the findings that block cleanup.
func Blocking(fs []Finding) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Severity == Block {
			out = append(out, f)
		}
	}
	return out
}

// CheckDataTopic checks the configs a data topic needs (the rules of
// topicconfig.DataTopic) as findings: each problem blocks; none is one OK.
func CheckDataTopic(info Topic, bootstrap string) []Finding {
	subject := "data topic " + info.Name
	var out []Finding
	for _, p := range topicconfig.DataTopic(info.Name, info.Configs, bootstrap) {
		out = append(out, Finding{Block, subject, p.Message, p.Fix})
	}
	if len(out) == 0 {
		out = append(out, Finding{OK, subject, fmt.Sprintf("cleanup.policy=%s, retention.ms=-1, retention.bytes=-1", info.Configs["cleanup.policy"]), ""})
	}
	return out
}

// ControlTopicBlocked is the decision on a control topic's settings (the
// rules of topicconfig.ControlTopic, the ones init, doctor and the recovery
// gate apply): nil when none blocks, else an error marked ErrBlocked that
// names every blocking problem, with each problem's fix as a hint. Deleting
// while the log may lose the decision that allowed it is what the safety
// argument forbids; repairs go on, since they are what protects the log.
// The caller gathers partitions and configs (worker.Cluster.ControlTopicSafe).
func ControlTopicBlocked(controlTopic string, partitions int, configs map[string]string, bootstrap string) error {
	blocking := topicconfig.Blocking(topicconfig.ControlTopic(controlTopic, partitions, configs, bootstrap))
	if len(blocking) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(blocking))
	for _, p := range blocking {
		msgs = append(msgs, p.Message)
	}
	err := errors.Mark(errors.Newf("control topic %s is unsafe, so no deletion starts: %s", controlTopic, strings.Join(msgs, "; ")), ErrBlocked)
	for _, p := range blocking {
		err = errors.WithHint(err, p.Fix)
	}
	return err
}

// ControlTopicFor is the default control topic of a data topic.
func ControlTopicFor(dataTopic string) string { return dataTopic + ".kcleanup" }

// Governor is a control topic and the data topic incarnation its binding
// names (Topic, TopicID; "" while unbound).
type Governor struct{ ControlTopic, Topic, TopicID string }

// SharedGovernance is why control topic self may not commit for topic
// (with topicID): another control topic among known is bound to the same
// incarnation. Each of two such control topics is blind to the other's
// boundary, so a gate that reads either may allow what the other's boundary
// condemns. The error is marked ErrBlocked and its hint is the fix; nil
// when no other control topic is bound to it.
func SharedGovernance(self, topic, topicID string, known []Governor, bootstrap string) error {
	var others []string
	for _, k := range known {
		if k.ControlTopic != self && k.Topic == topic && k.TopicID == topicID {
			others = append(others, k.ControlTopic)
		}
	}
	if len(others) == 0 {
		return nil
	}
	slices.Sort(others)
	return errors.WithHintf(errors.Mark(errors.Newf(
		"control topics %s and %s both govern topic %s (topic ID %s): each is blind to the other's boundary, so the recovery gate reading either may allow what the other's boundary condemns; nothing is committed on either while both are bound",
		self, strings.Join(others, ", "), topic, topicID), ErrBlocked),
		"keep one control topic per data topic, the one the validate pipelines and workers name: compare the boundaries (kcleanup status --control-topic %s, and the other); "+
			"re-apply on the kept one any plan committed only on the other (kcleanup apply PLAN.json --control-topic <kept>), then delete the other: "+
			"kafka-topics --bootstrap-server %s --delete --topic <the other>",
		self, bootstrap)
}

// ErrNoControlTopic marks a writer's refusal to write to a control topic
// that does not exist (Governance.Check): no writer creates one.
var ErrNoControlTopic = errors.New("control topic does not exist")

// ErrGovernedElsewhere marks a writer's refusal because another control
// topic governs the topic incarnation it would write about.
var ErrGovernedElsewhere = errors.New("another control topic governs the topic")

// Governance is what a writer gathered before it writes a record about a
// data-topic incarnation (Topic, TopicID) to control topic Self: whether
// Self exists and is bound, and the other control topics, under any name,
// bound to that incarnation (worker.Cluster.GovernorsOf).
type Governance struct {
	Self          string
	Exists, Bound bool
	Topic         string
	TopicID       string
	Others        []string
}

// Check is the rule every writer of a control topic obeys — apply, submit,
// pin, unpin, mirror attach, adopt (docs/design.md §4; issue 35): it writes only to a control topic that exists (only
// init and adopt create one, after the same search), and never while another
// control topic governs the same incarnation, whose boundary the record
// would be blind to. A control topic that is missing or governs nothing
// beside one that governs the topic is the mistake of a forgotten
// --control-topic; two bound ones are SharedGovernance. The error is marked
// ErrRejected (nothing was written) and its hint names the governing
// control topic; nil when the write may go on.
func (g Governance) Check(bootstrap string) error {
	others := slices.Sorted(slices.Values(slices.DeleteFunc(slices.Clone(g.Others), func(s string) bool { return s == g.Self })))
	if len(others) > 0 && g.Exists && g.Bound {
		known := make([]Governor, len(others))
		for i, o := range others {
			known[i] = Governor{ControlTopic: o, Topic: g.Topic, TopicID: g.TopicID}
		}
		return errors.Mark(errors.Mark(SharedGovernance(g.Self, g.Topic, g.TopicID, known, bootstrap), ErrRejected), ErrGovernedElsewhere)
	}
	if len(others) > 0 {
		what := "does not exist"
		if g.Exists {
			what = "governs no topic yet"
		}
		return errors.WithHintf(errors.Mark(errors.Mark(errors.Newf(
			"control topic %s %s, but %s governs topic %s (topic ID %s): nothing was written to %s, since a second control topic would let the recovery gate allow what %s's boundary condemns",
			g.Self, what, strings.Join(others, " and "), g.Topic, g.TopicID, g.Self, others[0]), ErrRejected), ErrGovernedElsewhere),
			"name the control topic that governs %s in every command, worker and pipeline: --control-topic %s (or KCLEANUP_CONTROL_TOPIC=%s)",
			g.Topic, others[0], others[0])
	}
	if !g.Exists {
		return errors.WithHintf(errors.Mark(errors.Mark(errors.Newf(
			"control topic %s does not exist: nothing was written (only kcleanup init and adopt create a control topic)", g.Self), ErrRejected), ErrNoControlTopic),
			"if topic %s's cleanups are recorded under another control topic, name it (--control-topic); otherwise create its control topic once: kcleanup init --topic %s%s",
			g.Topic, g.Topic, controlFlag(g.Self, g.Topic))
	}
	return nil
}

// controlFlag is the --control-topic flag init needs to create self for
// topic ("" for the default name).
func controlFlag(self, topic string) string {
	if self == ControlTopicFor(topic) {
		return ""
	}
	return " --control-topic " + self
}
