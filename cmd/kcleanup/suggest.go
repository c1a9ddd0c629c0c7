package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"
	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/worker"
)

// maxSuggestions bounds the names a "did you mean" offers.
const maxSuggestions = 3

// nearestNames are the names within a small edit distance of name (a third
// of its length, at least 1 and at most 3: a typo, not another topic),
// nearest first, then by name; at most maxSuggestions.
func nearestNames(name string, names []string) []string {
	limit := min(max(len(name)/3, 1), 3)
	type near struct {
		name string
		d    int
	}
	var found []near
	for _, n := range names {
		if n == name {
			continue
		}
		if d := levenshtein.ComputeDistance(name, n); d <= limit {
			found = append(found, near{n, d})
		}
	}
	slices.SortFunc(found, func(a, b near) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.name, b.name)
	})
	var out []string
	for _, f := range found[:min(len(found), maxSuggestions)] {
		out = append(out, f.name)
	}
	return out
}

// noTopic is the error for a topic the operator named that does not exist (a typo, most
// often): "no topic X", the nearest existing names, and how to list them. It never advises
// creating the name given; kind says what it was given as ("topic", "control topic").
func (g globalOptions) noTopic(ctx context.Context, c *worker.Cluster, kind, name string) error {
	err := errors.Mark(errors.Newf("no %s %s on the cluster at %s", kind, name, g.bootstrap()), worker.ErrTopicNotFound)
	for _, h := range g.typoHints(ctx, c, name) {
		err = errors.WithHint(err, h)
	}
	return err
}

// typoHints are the hints about a topic name that does not exist: the existing names nearest
// to it ("did you mean"), when there are any, and how to list them all.
func (g globalOptions) typoHints(ctx context.Context, c *worker.Cluster, name string) []string {
	var out []string
	if names, err := c.ListTopics(ctx); err == nil {
		if near := nearestNames(name, names); len(near) > 0 {
			out = append(out, fmt.Sprintf("did you mean %s?", strings.Join(near, ", ")))
		}
	}
	list := fmt.Sprintf("list the topics: kafka-topics --bootstrap-server %s --list", g.bootstrap())
	if g.commandConfig != "" {
		list += " --command-config " + g.commandConfig
	}
	return append(out, list)
}

// missingControlTopic words a control topic that does not exist. Given as a data topic
// (--topic T: the control topic is T.kcleanup) whose data topic exists, it is the one case to
// create: cleanup never ran for T. Otherwise a name nobody can find is most likely a typo:
// "no topic X" and the names it is nearest to, never "create X".
func (g globalOptions) missingControlTopic(ctx context.Context, c *worker.Cluster, controlTopic string) error {
	data, derived := strings.CutSuffix(controlTopic, protocol.ControlTopicFor(""))
	if g.controlTopic != "" || !derived {
		err := g.noTopic(ctx, c, "control topic", controlTopic)
		return errors.WithHint(err, "a new control topic is created for a data topic: kcleanup init --topic <data topic> [--control-topic <name>]")
	}
	if _, err := c.TopicMetadata(ctx, data); errors.Is(err, worker.ErrTopicNotFound) {
		return g.noTopic(ctx, c, "topic", data)
	}
	// A control topic given as the data topic (--topic T.kcleanup): say so, and never suggest
	// init --topic T.kcleanup, which would make a control topic for a control topic.
	if strings.HasSuffix(data, protocol.ControlTopicFor("")) && c.CheckControlShape(ctx, data) == nil {
		return errors.WithHintf(errors.Mark(errors.Newf("%s is a control topic, not a data topic: --topic names the data topic (its control topic would be %s, which does not exist)", data, controlTopic), worker.ErrTopicNotFound),
			"name it as the control topic: kcleanup status --control-topic %s (the same --control-topic in every command)", data)
	}
	return errors.WithHintf(errors.Mark(errors.Newf("control topic %s does not exist: cleanup never ran for topic %s under its default control topic", controlTopic, data), worker.ErrTopicNotFound),
		"if topic %s's cleanups are recorded under another control topic, name it (--control-topic); otherwise create its control topic once: kcleanup init --topic %s", data, data)
}
