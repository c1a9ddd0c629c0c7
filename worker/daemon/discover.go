package daemon

import (
	"context"
	"maps"
	"slices"
	"time"
)

// A fleet that serves control topics by a regular expression
// (WithControlTopicRegex, `kcleanup worker --control-topic-regex`) finds
// them at run time: a new job's control topic is served without a restart.
// Two paths add a topic's view, whichever comes first:
//
//   - discover lists the cluster's topics every discovery interval and adds
//     a view for each new match: every replica serves every control topic
//     (status, validate, readiness), owned or not;
//   - the consumer group (subscribed with the same expression; franz-go
//     refreshes its metadata as often) assigns a new topic to one replica,
//     whose own adds the view before it takes ownership.
//
// Either way a matching topic is served only when it is shaped like a
// control topic (one partition, cleanup.policy=compact: the gate's rules,
// worker.Cluster.ShapedAsControlTopics): a data topic the expression
// matches by mistake is never read as a control topic, owned, or written
// to by repairs and retractions. Its settings are read again at every
// discovery, so a control topic created with other settings and fixed
// later is served then.
//
// A view is never removed while the replica runs: a control topic that is
// deleted stays served, unreadable, so the replica reports it instead of
// forgetting it (restart the replicas once it is gone for good).

// DefaultDiscoveryInterval is how often a replica serving control topics by
// a regular expression looks for new ones.
const DefaultDiscoveryInterval = 10 * time.Second

// view returns the view of a served control topic, nil when not served.
func (d *Daemon) view(topic string) *view {
	d.viewsMu.RLock()
	defer d.viewsMu.RUnlock()
	return d.views[topic]
}

// servedTopics returns the control topics served now, as given or (by regex)
// sorted (the order of
// /v1/status, /readyz and /metrics).
func (d *Daemon) servedTopics() []string {
	d.viewsMu.RLock()
	defer d.viewsMu.RUnlock()
	return slices.Clone(d.served)
}

// allViews returns every view.
func (d *Daemon) allViews() []*view {
	d.viewsMu.RLock()
	defer d.viewsMu.RUnlock()
	out := make([]*view, 0, len(d.views))
	for _, t := range d.served {
		out = append(out, d.views[t])
	}
	return out
}

// matches reports whether a topic is a control topic this replica serves or
// would serve once discovered.
func (d *Daemon) matches(topic string) bool {
	if d.cfg.regex != nil {
		return d.cfg.regex.MatchString(topic)
	}
	return slices.Contains(d.cfg.topics, topic)
}

// addView serves a newly found control topic: it opens the view and, once
// Run has started the views, starts reading it. It reports whether the
// topic is served (false while shutting down, or when the reader cannot be
// created: the next discovery tries again).
func (d *Daemon) addView(topic string) bool {
	d.viewsMu.Lock()
	defer d.viewsMu.Unlock()
	if d.views[topic] != nil {
		return true
	}
	d.mu.Lock()
	runCtx, stopping := d.runCtx, d.stopping
	d.mu.Unlock()
	if stopping {
		return false
	}
	v := newView(d, topic)
	if err := v.open(); err != nil {
		d.log.Warn("cannot serve control topic", "control_topic", topic, errAttr(err))
		return false
	}
	d.views[topic] = v
	i, _ := slices.BinarySearch(d.served, topic)
	d.served = slices.Insert(d.served, i, topic)
	d.metrics.serve(topic)
	if d.viewsStarted && runCtx != nil {
		d.viewsWG.Add(1)
		go func() { defer d.viewsWG.Done(); v.run(runCtx) }()
	}
	d.log.Info("serving control topic", "control_topic", topic, "served", len(d.served))
	return true
}

// discover adds a view for every topic of the cluster that matches the
// replica's expression, now and then every discovery interval until ctx
// ends.
func (d *Daemon) discover(ctx context.Context) {
	for {
		d.discoverOnce(ctx)
		if !sleep(ctx, d.cfg.discoverEvery) {
			return
		}
	}
}

func (d *Daemon) discoverOnce(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.readTimeout)
	defer cancel()
	topics, err := d.cluster.ListTopics(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("cannot list topics to find control topics", "regex", d.cfg.regex.String(), errAttr(err))
		}
		return
	}
	var candidates []string
	for _, t := range topics {
		if d.cfg.regex.MatchString(t) && d.view(t) == nil {
			candidates = append(candidates, t)
		}
	}
	sh, err := d.cluster.ControlTopicShapes(ctx, candidates)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("cannot read the settings of new topics the control topic regex matches", "regex", d.cfg.regex.String(), errAttr(err))
		}
		return
	}
	for _, t := range sh.Shaped {
		d.addView(t)
	}
	d.warnNotShaped(sh.NotShaped)
	if len(sh.Unread) > 0 {
		// Unread is not "not a control topic": the next discovery asks again.
		first := slices.Sorted(maps.Keys(sh.Unread))[0]
		d.log.Warn("cannot read the settings of topics the control topic regex matches; asking again at the next discovery",
			"regex", d.cfg.regex.String(), "topics", len(sh.Unread), "control_topic", first, errAttr(sh.Unread[first]))
	}
}

// warnNotShaped logs, once per topic, a topic the regex matches that is not
// shaped like a control topic: it is not served (and not owned).
func (d *Daemon) warnNotShaped(notShaped []string) {
	d.viewsMu.Lock()
	defer d.viewsMu.Unlock()
	if d.notShaped == nil {
		d.notShaped = map[string]bool{}
	}
	for _, t := range notShaped {
		if !d.notShaped[t] {
			d.notShaped[t] = true
			d.log.Warn("the control topic regex matches a topic that is not a control topic (not one partition with cleanup.policy=compact); it is not served",
				"topic", t, "regex", d.cfg.regex.String())
		}
	}
}

// watchEnds lists the high watermarks of every served control topic in one
// request every poll interval, so that a view whose control topic did not
// move publishes that it is still caught up without two ListOffsets
// requests of its own (view.stillCaughtUp): a replica serving a thousand
// idle control topics sends one request a poll instead of two thousand.
func (d *Daemon) watchEnds(ctx context.Context) {
	for {
		d.checkDescriptors() // as often: a limit raised on the running process is seen at once
		d.checkMemory()
		topics := d.servedTopics()
		if len(topics) == 0 { // ListOffsets of no topic would list every topic
			if !sleep(ctx, d.cfg.pollInterval) {
				return
			}
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, d.cfg.readTimeout)
		at := time.Now()
		ends, err := d.cluster.HighWatermarks(lctx, topics...)
		cancel()
		for _, t := range topics {
			v := d.view(t)
			if v == nil {
				continue
			}
			if hw, ok := ends[t]; err == nil && ok {
				v.listed.Store(&listedEnd{hw: hw, at: at})
			} else {
				v.listed.Store(nil) // the view reads for itself
			}
		}
		if !sleep(ctx, d.cfg.pollInterval) {
			return
		}
	}
}

// runCtxOrBackground is the context of Run (a background one before).
func (d *Daemon) runCtxOrBackground() context.Context {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.runCtx == nil {
		return context.Background()
	}
	return d.runCtx
}

// shaped reports whether a topic the group assigned before discovery found
// it is shaped like a control topic (see discover), or why its settings
// could not be read.
func (d *Daemon) shaped(topic string) (bool, string) {
	ctx, cancel := context.WithTimeout(d.runCtxOrBackground(), d.cfg.readTimeout)
	defer cancel()
	sh, err := d.cluster.ControlTopicShapes(ctx, []string{topic})
	if err == nil {
		err = sh.Unread[topic]
	}
	if err != nil {
		return false, err.Error()
	}
	return len(sh.Shaped) == 1, ""
}
