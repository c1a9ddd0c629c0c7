package protocol

import "time"

// Paused is what a finishing run waits for before it may delete: the
// restore grace (Grace) or a pin the broker's clock still holds (Hold).
// The run emits it as a step of kind Pause; the executor either sleeps
// until it is over and reports back (kcleanup apply: the run then goes on
// from a fresh catch-up), or ends the run there and retries when it is
// over (a worker: its scheduler holds no goroutine for a 15-minute
// grace; OwnerRetry.After). A Blocked step held by a pin whose expiry the
// broker's clock cannot judge carries the hold too, with no end.
type Paused struct {
	Grace *GraceWait
	Hold  *PinHold
}

// Wait is how long, from now on the executor's clock, the pause lasts. A
// pin's gap is measured on the broker's clock: a second more covers the
// two clocks ticking apart.
func (p Paused) Wait(now time.Time) time.Duration {
	switch {
	case p.Grace != nil:
		return max(p.Grace.Until.Sub(now), 0)
	case p.Hold != nil:
		return p.Hold.Gap() + time.Second
	}
	return 0
}

// MaxPauses is how many pauses one run sleeps through before it ends with
// Wait: a later mirror record may move the grace, a re-pin the hold, but
// not forever within one kcleanup apply.
const MaxPauses = 8

// resume is the run after the executor slept through a Pause: it starts
// over as a finishing run, from a catch-up, so that every fact (the
// mirror, the grace, the broker's time of a new DELETING) is read again.
func (r *Run) resume(p *Paused) Step {
	r.pauses++
	if r.pauses > MaxPauses {
		return Step{Kind: Wait, Err: r.paused.Err, Pause: p}
	}
	if g := p.Grace; g != nil && !g.Known && r.cfg.GraceSeen.IsZero() {
		// The record's time stays unknown: the grace runs from the first sight of it.
		r.cfg.GraceSeen = g.From
	}
	r.mode, r.mirror, r.mirrored = modeFinish, nil, ""
	r.phase = phaseCaughtUp
	return Step{Kind: CatchUp}
}

// pauseStep is the step of a run that must wait for p: Pause when it passes
// by itself at a known time, else Blocked (err says why either way).
func pauseStep(kind Kind, p Paused, err error) Step {
	return Step{Kind: kind, Err: err, Pause: &p}
}
