package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
)

// pinOrder is what an operator pins with `kcleanup pin`: a recovery
// point's offsets, read from its markers, for the data topic incarnation
// the markers name (topicID: the live one, or the one before the topic was
// deleted and recreated), for a while (lasts; 0: no expiry).
type pinOrder struct {
	recoveryPoint string
	topicID       string
	offsets       events.Offsets
	lasts         time.Duration
}

// newPinner is the process of `kcleanup pin`: the pin mode of the run
// (protocol.NewPin), on its own projection, its host's clock skewed.
func (w *world) newPinner(o *pinOrder) *process {
	i := len(w.procs)
	return &process{index: i, pin: o, proj: projector.New(), actor: fmt.Sprintf("pin-%d@%d", i, w.tick), skew: w.drawSkew()}
}

// startPin begins a pin run; an operator runs the command at most twice
// (a run that waited or was blocked), each time a new PINNED: the CLI
// stamps its own time, so its pin ID is another.
func (p *process) startPin(w *world) bool {
	if p.tries >= 2 {
		p.done = true
		return false
	}
	p.tries++
	p.identified = false
	o := p.pin
	at := w.now().Add(p.skew) // the pinning host's clock
	var expires time.Time
	if o.lasts > 0 {
		expires = at.Add(o.lasts)
	}
	rec := events.NewPin(o.recoveryPoint, dataTopic, o.topicID, o.offsets, expires, "rollback", at, p.actor)
	p.run = protocol.NewPin(rec, p.config(w))
	p.rep, p.step = protocol.Report{}, protocol.Step{}
	return true
}

// identify is the pin mode's Identify: the data topic's ID and partitions
// from an uncached Metadata request (worker.Cluster.TopicMetadata), which
// may fail or be denied.
func (p *process) identify(w *world, s protocol.Step) protocol.Report {
	switch w.fault(Fail, Denied) {
	case Fail:
		return protocol.Report{Err: errors.New("sim: metadata request failed")}
	case Denied:
		return protocol.Report{Err: errors.New("sim: TOPIC_AUTHORIZATION_FAILED"), Code: protocol.CodeTopicAuthorizationFailed}
	}
	if s.Topic != w.topic.Name {
		return protocol.Report{Err: errors.Newf("sim: Identify of topic %q, not the data topic", s.Topic), Missing: true}
	}
	p.identified = true
	return protocol.Report{Topic: protocol.Topic{Name: w.topic.Name, ID: w.topic.ID, Partitions: slices.Clone(w.topic.Partitions)}}
}

// endPin counts how a pin run of a stale incarnation's markers was refused:
// by the control topic's binding (before Identify), or by Identify's ID.
func (p *process) endPin(w *world, s protocol.Step) {
	if p.pin.topicID == w.topic.ID || s.Kind != protocol.Refused {
		return
	}
	if p.identified {
		w.res.StaleByIdentify++
	} else {
		w.res.StaleByBinding++
	}
}

// checkPins: no PINNED of another incarnation than the live data topic's
// landed (the pin mode refuses markers of a recreated topic's predecessor).
func (w *world) checkPins() []error {
	var errs []error
	for _, r := range w.full {
		if !events.IsPinKey(r.Key) || r.Value == nil {
			continue
		}
		env, err := events.Decode(r.Key, r.Value)
		if err == nil && env.Event == events.Pinned && env.Pin.TopicID != w.topic.ID {
			errs = append(errs, errors.Newf("pins: PINNED %s at offset %d is for topic ID %s, but the data topic's is %s: the pin mode let markers of a recreated topic's predecessor through",
				env.Pin.PinID, r.Offset, env.Pin.TopicID, w.topic.ID))
		}
	}
	return errs
}
