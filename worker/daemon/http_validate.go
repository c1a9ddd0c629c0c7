package daemon

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/gate"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
)

// maxValidateBody bounds a /v1/validate request: markers of thousands of
// subtasks fit easily.
const maxValidateBody = 4 << 20

// writeVerdict answers with the status of the verdict's class: 200 allowed,
// 409 refused, 503 cannot tell, 400 invalid (404 for an unknown control
// topic).
func writeVerdict(w http.ResponseWriter, v gate.Verdict) {
	code := v.Class.HTTPStatus()
	if v.Reason == gate.UnknownControlTopic {
		code = http.StatusNotFound
	}
	writeJSONStatus(w, code, v)
}

// serveValidate is the recovery gate over HTTP: the same checks as
// `kcleanup validate` (Cluster.Validate), on this replica's live projection,
// which is read to the end first. It never says yes without proof.
func (d *Daemon) serveValidate(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxValidateBody))
	if err != nil {
		writeVerdict(w, report.Unjudged("", gate.BadRequest, errors.Wrap(err, "read request body")))
		return
	}
	markers, err := events.ParseMarkers(body)
	if err != nil {
		writeVerdict(w, report.Unjudged("", gate.BadRequest, err))
		return
	}
	// Markers that say where they were read must be every subtask's of one checkpoint.
	checked, err := events.CheckSubtasks(markers)
	if err != nil {
		writeVerdict(w, report.Unjudged("", gate.BadRequest, err))
		return
	}
	q := r.URL.Query()
	var pinFor time.Duration
	if q.Has("pinFor") {
		if pinFor, err = parsePinFor(q.Get("pinFor")); err != nil {
			writeVerdict(w, report.Unjudged("", gate.BadRequest, err))
			return
		}
	}
	topic, code, err := d.validateTopic(q.Get("controlTopic"), q.Has("controlTopic"), markers)
	if err != nil {
		reason := gate.BadRequest
		if code == http.StatusNotFound {
			reason = gate.UnknownControlTopic
		}
		writeVerdict(w, report.Unjudged(topic, reason, err))
		return
	}
	d.mu.Lock()
	stopping := d.stopping
	d.mu.Unlock()
	if stopping {
		writeVerdict(w, report.Unjudged(topic, gate.ShuttingDown, errors.New("this worker is shutting down; ask another replica")))
		return
	}
	v := d.view(topic)
	if !v.acquire(r.Context()) {
		writeVerdict(w, report.Unjudged(topic, gate.NotCaughtUp, errors.Wrap(r.Context().Err(), "wait for the projection")))
		return
	}
	defer v.release()
	ctx, cancel := context.WithTimeout(r.Context(), d.cfg.readTimeout)
	defer cancel()
	opts := worker.ValidateOptions{
		ControlTopic: topic,
		Bootstrap:    d.cfg.bootstrap,
		Read: func(ctx context.Context) (*worker.Projection, error) {
			if v.proj == nil {
				return nil, errors.Mark(errors.Newf("control topic %q is not being read", v.topic), worker.ErrNotCaughtUp)
			}
			return v.proj, v.refresh(ctx)
		},
	}
	var verdict gate.Verdict
	if pinFor > 0 {
		verdict = d.cluster.ValidateAndPin(ctx, markers, opts, pinFor, d.cfg.actor)
	} else {
		verdict = d.cluster.Validate(ctx, markers, opts)
	}
	if !checked && verdict.Allowed {
		verdict.Notes = append(verdict.Notes, events.SubtasksUnchecked)
	}
	writeVerdict(w, verdict)
}

// parsePinFor reads ?pinFor=: a positive Go duration, or whole days ("1d").
func parsePinFor(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		if _, serr := fmt.Sscanf(n, "%d", &days); serr == nil && fmt.Sprint(days) == n {
			d, err = time.Duration(days)*24*time.Hour, nil
		}
	}
	if err != nil || d <= 0 {
		return 0, errors.WithHint(errors.Newf("?pinFor=%q is not a positive duration", s), "give a duration such as 30m, 2h or 1d")
	}
	return d, nil
}

// validateTopic picks the control topic a validate request is about: the
// one named, the only one served, or the one bound to the markers' topic
// and topic ID.
func (d *Daemon) validateTopic(named string, given bool, markers []events.Marker) (string, int, error) {
	served := d.servedTopics()
	if given && strings.TrimSpace(named) == "" {
		// An unset variable in the caller's URL (?controlTopic=$CT) must not
		// become "whichever control topic this worker picks".
		return "", http.StatusBadRequest, errors.WithHintf(errors.New("?controlTopic= is given but blank"),
			"name the control topic that governs the markers' topic, or leave the parameter out; served: %v", served)
	}
	if given {
		if d.view(named) == nil {
			err := errors.WithHintf(errors.Newf("this worker does not serve control topic %q", named), "it serves %v", served)
			if d.cfg.regex != nil && d.cfg.regex.MatchString(named) {
				err = errors.WithHintf(err, "it serves the control topics matching %q that exist; a new one is found within %s of its creation: create it (kcleanup init), then ask again",
					d.cfg.pattern, d.cfg.discoverEvery)
			}
			return named, http.StatusNotFound, err
		}
		return named, 0, nil
	}
	// By regex the served set grows at run time: the only topic served now
	// may not be the markers' (theirs may be found later), so it is picked
	// only by its binding, like any other.
	if len(served) == 1 && d.cfg.regex == nil {
		return served[0], 0, nil
	}
	var match []string
	for _, t := range served {
		st := d.view(t).snap.Load().status
		if st.Topic != "" && st.Topic == markers[0].Topic && st.TopicID == markers[0].TopicID {
			match = append(match, t)
		}
	}
	if len(match) == 1 {
		return match[0], 0, nil
	}
	return "", http.StatusBadRequest, errors.WithHintf(
		errors.Newf("this worker serves %d control topics and none governs exactly topic %s (ID %s)", len(served), markers[0].Topic, markers[0].TopicID),
		"name one with ?controlTopic=<control topic>; served: %v", served)
}
