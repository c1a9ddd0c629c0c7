package protocol

import (
	"fmt"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
)

// MirrorStanding is how an attached mirror stands against the boundary.
type MirrorStanding string

const (
	// MirrorInStep: the job's effective boundary on the mirror equals kcleanup's
	// boundary (or neither has one yet).
	MirrorInStep MirrorStanding = "in-step"
	// MirrorLagging: the mirror is valid and writable but below kcleanup's
	// boundary on some partition; the owning worker's mirror sync (or the
	// next apply) writes the plan that sets the boundary.
	MirrorLagging MirrorStanding = "lagging"
	// MirrorAhead: the mirror is above kcleanup's boundary on some partition (a
	// writer other than kcleanup): the job refuses recovery points kcleanup
	// allows. Nothing kcleanup writes lowers it.
	MirrorAhead MirrorStanding = "ahead"
	// MirrorUnwritable: kcleanup cannot keep the mirror in step (missing,
	// recreated, wrong settings, a fold the job fails on, a plan it could
	// not be comparable with, or no permission to write it).
	MirrorUnwritable MirrorStanding = "cannot-be-written"
	// MirrorHeld: an open transaction holds the mirror's last stable offset
	// below its end, so nothing after it can be read (read_committed) by
	// kcleanup or by a Flink Agents job recovering, until it ends. Pin says
	// whose: a kcleanup writer killed inside its transaction (the next
	// kcleanup writer fences it) or another producer's.
	MirrorHeld MirrorStanding = "held"
)

// MirrorHold is an open transaction that holds the mirror: what
// DescribeProducers and DescribeTransactions said of it.
type MirrorHold struct {
	// Offset is the last stable offset (the open transaction's first
	// record), HighWatermark the end.
	Offset        int64 `json:"offset"`
	HighWatermark int64 `json:"highWatermark"`
	// ProducerID and ProducerEpoch are the producer whose transaction is
	// open; -1 when the partition's producers could not be described.
	ProducerID    int64 `json:"producerId"`
	ProducerEpoch int16 `json:"producerEpoch"`
	// TransactionalID is that producer's, "" when not known.
	TransactionalID string `json:"transactionalId,omitempty"`
	// KcleanupWriter: it is kcleanup's own mirror writer
	// (MirrorTransactionalID), which the next kcleanup writer fences.
	KcleanupWriter bool `json:"kcleanupWriter"`
	// Since is when the transaction began (its first write when the
	// transaction could not be described); zero when not known.
	Since time.Time `json:"since,omitzero"`
	// TimeoutMs is the transaction's transaction.timeout.ms, 0 when not known.
	TimeoutMs int32 `json:"transactionTimeoutMs,omitempty"`
	// Unknown says why whose it is could not be told ("" when told).
	Unknown string `json:"unknown,omitempty"`
}

// Owner names the pinning transaction's producer, in words.
func (p MirrorHold) Owner() string {
	switch {
	case p.KcleanupWriter:
		return "kcleanup's writer " + p.TransactionalID
	case p.TransactionalID != "":
		return "a foreign producer, transactional ID " + p.TransactionalID
	case p.ProducerID >= 0:
		return fmt.Sprintf("a producer that is not kcleanup's writer (producer ID %d)", p.ProducerID)
	}
	return "an unknown producer"
}

// MirrorAssessment is how the attached mirror stands, with the reason and the
// fix in words an operator acts on. It is part of the status document
// (docs/schema/status.schema.json, "mirror").
type MirrorAssessment struct {
	Topic string `json:"topic"`
	// TopicID is the one it was attached with; LiveTopicID the topic's now
	// ("" when it is missing).
	TopicID     string `json:"topicId"`
	LiveTopicID string `json:"liveTopicId,omitempty"`
	// AttachedAt is the offset of the MIRROR_ATTACHED record that decides.
	AttachedAt int64          `json:"attachedAt"`
	Standing   MirrorStanding `json:"standing"`
	// Denied: it cannot be written (or read) only because the principal
	// that checked lacks a permission, not because of the mirror itself.
	Denied bool `json:"denied,omitempty"`
	// Reason says why it is not in step, Hint what to do ("" when in step).
	Reason string `json:"reason,omitempty"`
	Hint   string `json:"hint,omitempty"`
	// Boundary is the job's effective boundary on the mirror (absent when
	// its fold fails or it holds no plan); Plans how many plans it holds.
	Boundary events.Offsets `json:"boundary,omitempty"`
	Plans    int            `json:"plans"`
	// BoundaryPlan is the plan that carries kcleanup's boundary (what the
	// mirror must hold), "" while there is no boundary.
	BoundaryPlan string `json:"boundaryPlan,omitempty"`
	// Lag is how many offsets, summed over partitions, the mirror's
	// boundary is below kcleanup's (0 in step; the job's fold failing
	// counts the whole boundary; 0 when held: not read).
	Lag int64 `json:"lag"`
	// Pin is the open transaction that holds the mirror (standing held).
	Hold *MirrorHold `json:"hold,omitempty"`
}

// MirrorInStep reports whether the mirror agrees with the boundary.
func (a MirrorAssessment) InStep() bool { return a.Standing == MirrorInStep }

// AssessMirror says how the attached mirror c.Mirror, read as v, stands against
// the boundary of c. writeErr is why this client cannot write the mirror
// (a permission probe), nil when it can or was not asked.
func AssessMirror(c MirrorControl, v MirrorView, writeErr error) MirrorAssessment {
	att := c.Mirror
	a := MirrorAssessment{Topic: att.Topic, TopicID: att.TopicID, AttachedAt: att.Offset, LiveTopicID: v.TopicID}
	boundary := c.Boundary
	var total int64
	for _, o := range boundary {
		total += o
	}
	a.BoundaryPlan = c.BoundaryPlan
	data := c.DataTopic
	if data == "" {
		data = "<data topic>"
	}
	detach := fmt.Sprintf("or detach it (kcleanup mirror detach --topic %s --reason …), after which the Flink Agents job no longer learns the boundary from it", data)
	unwritable := func(reason, hint string) MirrorAssessment {
		a.Standing, a.Reason, a.Hint, a.Lag = MirrorUnwritable, reason, hint+"; "+detach, total
		return a
	}
	switch {
	case v.Missing:
		return unwritable(fmt.Sprintf("mirror topic %s does not exist", att.Topic),
			fmt.Sprintf("create and attach it again (kcleanup init --topic %s --mirror-topic %s)", data, att.Topic))
	case v.TopicID != att.TopicID:
		return unwritable(fmt.Sprintf("mirror topic %s has topic ID %s, not %s, the one it was attached with: it was deleted and recreated", att.Topic, v.TopicID, att.TopicID),
			fmt.Sprintf("attach the new topic (kcleanup mirror attach %s --topic %s --reason …), which seeds it with the boundary", att.Topic, data))
	}
	if err := MirrorTopicProblem(v, "", "<broker>"); err != nil {
		return unwritable(err.Error(), hintOf(err))
	}
	a.Plans = len(v.Fold.Operations())
	if err := planProblem(c, v); err != nil && a.Plans > 0 {
		if b, berr := v.Fold.Effective(); berr == nil && above(b, boundary) {
			a.Boundary, a.Standing = b, MirrorAhead
			a.Reason = fmt.Sprintf("the mirror's boundary %s is above kcleanup's boundary %s: %v", b, boundary, err)
			a.Hint = "another writer raised it: the job refuses recovery points kcleanup allows; find that writer, or apply a kcleanup plan at or above the mirror's boundary"
			return a
		}
		return unwritable(err.Error(), "kcleanup cannot write the boundary there without breaking the job's fold")
	}
	if writeErr != nil {
		a.Denied = true
		return unwritable(fmt.Sprintf("this client cannot write mirror topic %s: %v", att.Topic, writeErr), hintOf(writeErr))
	}
	if a.Plans == 0 {
		if len(boundary) == 0 {
			a.Standing = MirrorInStep
			return a
		}
		a.Standing, a.Lag = MirrorLagging, total
		a.Reason = fmt.Sprintf("the mirror holds no plan yet; kcleanup's boundary is %s (plan %s)", boundary, a.BoundaryPlan)
		a.Hint = fmt.Sprintf("the owning worker writes it on its next pass (kcleanup mirror sync --topic %s does it now); a Flink Agents job must not read the mirror before then (it refuses to recover from an empty control topic)", data)
		return a
	}
	mb, _ := v.Fold.Effective() // planProblem passed: defined, at or below the boundary
	a.Boundary = mb
	for p, o := range boundary {
		a.Lag += o - mb[p]
	}
	if a.Lag == 0 {
		a.Standing = MirrorInStep
		return a
	}
	a.Standing = MirrorLagging
	a.Reason = fmt.Sprintf("the mirror's boundary %s is below kcleanup's boundary %s (plan %s is not on the mirror yet)", mb, boundary, a.BoundaryPlan)
	a.Hint = fmt.Sprintf("the owning worker writes it on its next pass (kcleanup mirror sync --topic %s does it now); until then a Flink Agents job reading the mirror allows recovery points kcleanup refuses: gate restores with kcleanup validate", data)
	return a
}

// HeldMirror is the assessment of an attached mirror that could not be read
// because an open transaction holds its last stable offset: whose, since
// when, and what ends it. The mirror's records are not judged (not read).
func HeldMirror(c MirrorControl, hold MirrorHold) MirrorAssessment {
	att := c.Mirror
	a := MirrorAssessment{Topic: att.Topic, TopicID: att.TopicID, LiveTopicID: att.TopicID, AttachedAt: att.Offset,
		Standing: MirrorHeld, BoundaryPlan: c.BoundaryPlan, Hold: &hold}
	a.Reason, a.Hint = hold.Explain(att.Topic, c.DataTopic)
	return a
}

// Explain says, in words an operator acts on, what pins mirror (of the
// data topic named in the hint): whose transaction, since when, and what
// ends it.
func (p MirrorHold) Explain(mirror, dataTopic string) (reason, hint string) {
	since := ""
	if !p.Since.IsZero() {
		since = " since " + p.Since.UTC().Format(time.RFC3339)
	}
	reason = fmt.Sprintf("mirror topic %s is held by an open transaction of %s%s: neither kcleanup nor a Flink Agents job can read it past offset %d (end %d) until it ends",
		mirror, p.Owner(), since, p.Offset, p.HighWatermark)
	if p.Unknown != "" {
		reason += " (whose it is could not be told: " + p.Unknown + ")"
	}
	timeout := "transaction.timeout.ms"
	if p.TimeoutMs > 0 {
		timeout = fmt.Sprintf("its transaction.timeout.ms, %d ms", p.TimeoutMs)
	}
	if dataTopic == "" {
		dataTopic = "<data topic>"
	}
	if p.KcleanupWriter {
		return reason, fmt.Sprintf("a kcleanup process died inside its mirror transaction: the owning worker's next attempt "+
			"(or kcleanup mirror sync --topic %s, or the next kcleanup apply) fences it, which aborts the transaction at once; the broker aborts it after %s otherwise",
			dataTopic, timeout)
	}
	return reason, fmt.Sprintf("kcleanup fences only its own writer (%s): wait for that producer to commit or abort (the broker aborts it after %s), or find and stop it "+
		"(kafka-transactions --bootstrap-server <broker> find-hanging --topic %s --partition 0; a hanging one: kafka-transactions … abort --topic %s --partition 0 --start-offset %d)",
		MirrorTransactionalID(mirror), timeout, mirror, mirror, p.Offset)
}

// above: a is above b on some partition.
func above(a, b events.Offsets) bool {
	for p, o := range a {
		if o > b[p] {
			return true
		}
	}
	return false
}

// UnreadableMirror is the assessment of an attached mirror this worker could not
// read at all (readErr: typically no Read or Describe permission).
func UnreadableMirror(c MirrorControl, readErr error) MirrorAssessment {
	att := c.Mirror
	a := MirrorAssessment{Topic: att.Topic, TopicID: att.TopicID, AttachedAt: att.Offset, Standing: MirrorUnwritable, Denied: true}
	for _, o := range c.Boundary {
		a.Lag += o
	}
	a.BoundaryPlan = c.BoundaryPlan
	a.Reason = fmt.Sprintf("this client cannot read mirror topic %s: %v", att.Topic, readErr)
	a.Hint = hintOf(readErr)
	return a
}

// hintOf is the fix an error carries (errors.WithHint), or a general one.
func hintOf(err error) string {
	if h := errors.FlattenHints(err); h != "" {
		return h
	}
	return "grant the permissions the message names"
}
