package worker

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/gate"
	"github.com/kcleanup/kcleanup/protocol"
)

// ErrNotControlTopic marks the error of a command given a topic that is not
// shaped like a control topic (gate.Shape): it is never read as one.
var ErrNotControlTopic = errors.New("topic is not shaped like a control topic")

// ControlTopicSuffix is what names the control topics kcleanup looks
// through when it needs to know which control topics govern a data topic,
// or keep a mirror (ControlTopics): every default control topic ends so
// (protocol.ControlTopicFor).
var ControlTopicSuffix = protocol.ControlTopicFor("")

// CheckControlShape refuses a topic that is not shaped like a control topic
// by its partitions and cleanup.policy (gate.Shape), naming what it looks
// like and the control topics whose bindings name it. A missing topic is
// ErrTopicNotFound, for the caller to word.
func (c *Cluster) CheckControlShape(ctx context.Context, topic string) error {
	info, err := c.TopicMetadata(ctx, topic)
	if err != nil {
		return err
	}
	configs, err := c.TopicConfigs(ctx, topic) // its error names the grant a denial needs
	if err != nil {
		return err
	}
	return c.notControlTopic(ctx, gate.ShapeOf(topic, len(info.Partitions), configs))
}

// CheckShape refuses, after a read, a control topic whose records are in
// neither kcleanup's nor Flink Agents' format (gate.Shape).
func (p *Projection) CheckShape(ctx context.Context) error {
	return p.cluster.notControlTopic(ctx, p.Shape())
}

// Shape is the projection's topic as a one-partition compacted topic with
// the records read so far (the caller checked the settings).
func (p *Projection) Shape() gate.Shape {
	k, f, o := p.Counts()
	return gate.Shape{Topic: p.Topic, Partitions: 1, Policy: "compact", Kcleanup: k, FlinkAgents: f, Other: o}
}

func (c *Cluster) notControlTopic(ctx context.Context, s gate.Shape) error {
	if s.Misfit() == "" {
		return nil
	}
	var bound []string
	if known, err := c.ControlTopics(ctx, false); err == nil { // best effort: the refusal stands without it
		for _, k := range known {
			if k.Topic == s.Topic && k.ControlTopic != s.Topic {
				bound = append(bound, k.ControlTopic)
			}
		}
	}
	err := errors.Mark(errors.New(s.NotControlTopic(bound)), ErrNotControlTopic)
	if len(bound) > 0 {
		if bound[0] == protocol.ControlTopicFor(s.Topic) {
			return errors.WithHintf(err, "name its control topic: --topic %s (or --control-topic %s)", s.Topic, bound[0])
		}
		return errors.WithHintf(err, "name its control topic: --control-topic %s", bound[0])
	}
	return errors.WithHintf(err, "if %s is the data topic, give --topic %s (its control topic is %s) or the control topic that governs it (--control-topic); "+
		"kcleanup never reads a topic of this shape as a control topic", s.Topic, s.Topic, protocol.ControlTopicFor(s.Topic))
}

// KnownControlTopic is a control topic found by ControlTopics and what its
// records say: the data topic it governs (Topic, TopicID; "" while none)
// and, when read whole, the Flink Agents mirror it keeps ("" while none).
type KnownControlTopic struct {
	protocol.Governor
	Mirror string
}

// Governors are the bindings of known control topics, for protocol.SharedGovernance.
func Governors(known []KnownControlTopic) []protocol.Governor {
	out := make([]protocol.Governor, len(known))
	for i, k := range known {
		out[i] = k.Governor
	}
	return out
}

// ControlTopics finds the control topics of the cluster kcleanup can know
// of without being told: every topic named *.kcleanup, and the extra names
// given (a fleet's --control-topic-regex matches), that is shaped like a
// control topic. Each is read until its binding is known (the first
// accepted PLANNED, which never changes), or to its end with whole (for
// the mirror it keeps). A candidate that cannot be read is left out.
// Sorted by name.
func (c *Cluster) ControlTopics(ctx context.Context, whole bool, extra ...string) ([]KnownControlTopic, error) {
	names, err := c.ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	var candidates []string
	for _, n := range names {
		if strings.HasSuffix(n, ControlTopicSuffix) || slices.Contains(extra, n) {
			candidates = append(candidates, n)
		}
	}
	return c.bindingsOf(ctx, candidates, whole)
}

// GovernorsOf names the control topics, under any name, bound to the
// incarnation (topic, topicID), besides except: every one-partition topic
// shaped like a control topic is read until its binding is known. The
// gate asks when the control topic it read governs no topic yet (an empty
// one that a mistaken init made, say) while the boundary may be kept in
// another one: *.kcleanup alone would miss a control topic that was named
// with --control-topic. Sorted by name.
func (c *Cluster) GovernorsOf(ctx context.Context, topic, topicID, except string) ([]string, error) {
	td, err := c.adm.ListTopics(ctx)
	if err != nil {
		return nil, errors.Wrap(err, "list topics, to find the control topics that govern "+topic)
	}
	want := topic + "/" + topicID
	var candidates, out []string
	ids := map[string][16]byte{}
	c.boundMu.Lock()
	for name, d := range td {
		if d.Err != nil || d.IsInternal || len(d.Partitions) != 1 || name == except || name == topic {
			continue
		}
		if b, ok := c.bound[d.ID]; ok && d.ID != ([16]byte{}) {
			if b == want {
				out = append(out, name)
			}
			continue
		}
		candidates = append(candidates, name)
		ids[name] = d.ID
	}
	c.boundMu.Unlock()
	slices.Sort(candidates)
	known, err := c.bindingsOf(ctx, candidates, false)
	if err != nil {
		return nil, err
	}
	c.boundMu.Lock()
	if c.bound == nil {
		c.bound = map[[16]byte]string{}
	}
	for _, k := range known {
		if id := ids[k.ControlTopic]; k.Topic != "" && id != ([16]byte{}) {
			c.bound[id] = k.Topic + "/" + k.TopicID
		}
		if k.Topic == topic && k.TopicID == topicID {
			out = append(out, k.ControlTopic)
		}
	}
	c.boundMu.Unlock()
	slices.Sort(out)
	return out, nil
}

// bindingReadTimeout bounds the read of one candidate's binding (bindingsOf).
const bindingReadTimeout = 5 * time.Second

// bindingsOf reads the candidates shaped like control topics, each until
// its binding is known or, with whole, to its end.
func (c *Cluster) bindingsOf(ctx context.Context, candidates []string, whole bool) ([]KnownControlTopic, error) {
	shaped, _, err := c.ShapedAsControlTopics(ctx, candidates)
	if err != nil {
		return nil, err
	}
	out := make([]KnownControlTopic, len(shaped))
	ok := make([]bool, len(shaped))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, name := range shaped {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			// One candidate that does not answer (deleted since it was listed, a leader
			// moving) must not hold every writer's search up to its whole deadline.
			ctx, cancel := context.WithTimeout(ctx, bindingReadTimeout)
			defer cancel()
			p, err := c.OpenProjection(name)
			if err != nil {
				return
			}
			defer p.Close()
			if whole {
				err = p.CatchUp(ctx)
			} else {
				err = p.readBinding(ctx)
			}
			if err != nil {
				return
			}
			k := KnownControlTopic{Governor: protocol.Governor{ControlTopic: name}}
			k.Topic, k.TopicID, _ = p.State.Binding()
			if m, attached := p.State.Mirror(); attached {
				k.Mirror = m.Topic
			}
			out[i], ok[i] = k, true
		})
	}
	wg.Wait()
	var found []KnownControlTopic
	for i := range out {
		if ok[i] {
			found = append(found, out[i])
		}
	}
	return found, nil
}

// readBinding reads a control topic until its binding is known or to its
// end: the binding is set by the first accepted PLANNED, at the start of
// the log as a rule, so a few records are read, not the history.
func (p *Projection) readBinding(ctx context.Context) error {
	end, err := p.cluster.stableEnd(ctx, "control topic", p.Topic)
	if err != nil {
		return err
	}
	for step := int64(16); p.Next < end; step *= 8 {
		if err := p.readTo(ctx, min(end, p.Next+step)); err != nil {
			return err
		}
		if _, _, bound := p.State.Binding(); bound {
			return nil
		}
		if k, _, _ := p.Counts(); k == 0 {
			return nil // its first records are none of kcleanup's: it binds nothing
		}
	}
	return nil
}

// Governors gathers, in one listing (GovernorsOf), the fact every writer of
// proj's control topic hands to its decision (Options.Governors): the other
// control topics, under any name, bound to the incarnation (topic, topicID),
// or, with topic "", to the one proj's control topic is bound to (an
// unbound one names none: nothing to search for). A search that fails is an
// error, never "none".
func (c *Cluster) Governors(ctx context.Context, proj *Projection, topic, topicID string) (*protocol.Governors, error) {
	if topic == "" {
		var bound bool
		if topic, topicID, bound = proj.State.Binding(); !bound {
			return &protocol.Governors{}, nil
		}
	}
	others, err := c.GovernorsOf(ctx, topic, topicID, proj.Topic)
	if err != nil {
		return nil, errors.WithHint(errors.Wrapf(err, "look for the control topics that govern topic %s before writing to %s", topic, proj.Topic),
			"the principal needs Describe on the cluster's topics and Read on those with one partition; nothing was written")
	}
	return &protocol.Governors{Topic: topic, TopicID: topicID, Others: others}, nil
}

// Governed is protocol.GovernedElsewhere for a writer that is no run, on
// the fact its caller gathered (o.Governors; nil: none gathered).
func Governed(proj *Projection, o Options) error { return governed(proj, o) }

func governed(proj *Projection, o Options) error {
	if o.Governors == nil {
		return nil
	}
	return protocol.GovernedElsewhere(proj.State, proj.Topic, *o.Governors, o.Bootstrap)
}

// OneGovernor gathers the rest of what protocol.Governance.Check judges and
// judges it, before a write to g.Self about the incarnation (g.Topic,
// g.TopicID): the caller says whether g.Self exists and is bound, and this
// finds the other control topics, under any name, bound to that incarnation
// (GovernorsOf). A search that fails is an error, never "none".
func (c *Cluster) OneGovernor(ctx context.Context, g protocol.Governance, bootstrap string) error {
	others, err := c.GovernorsOf(ctx, g.Topic, g.TopicID, g.Self)
	if err != nil {
		return errors.WithHint(errors.Wrapf(err, "look for the control topics that govern topic %s before writing to %s", g.Topic, g.Self),
			"the principal needs Describe on the cluster's topics and Read on those with one partition; nothing was written")
	}
	g.Others = others
	return g.Check(bootstrap)
}
