package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/checkpoint"
	"github.com/kcleanup/kcleanup/checkpoint/store"
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
	switch v.Reason {
	case gate.UnknownControlTopic:
		code = http.StatusNotFound
	case gate.CheckpointForbidden:
		code = http.StatusForbidden
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
	checked := true
	var markers []events.Marker
	if ask, isCheckpoint, err := parseCheckpointRequest(body); err != nil {
		writeVerdict(w, report.Unjudged("", gate.BadRequest, err))
		return
	} else if isCheckpoint {
		var ok bool
		if markers, ok = d.checkpointMarkers(w, r, ask); !ok {
			return
		}
	} else {
		if markers, err = events.ParseMarkers(body); err != nil {
			writeVerdict(w, report.Unjudged("", gate.BadRequest, err))
			return
		}
		// Markers that say where they were read must be every subtask's of one checkpoint.
		if checked, err = events.CheckSubtasks(markers); err != nil {
			writeVerdict(w, report.Unjudged("", gate.BadRequest, err))
			return
		}
	}
	q := r.URL.Query()
	var pinFor time.Duration
	actor := d.cfg.actor
	if q.Has("pinFor") {
		if pinFor, err = parsePinFor(q.Get("pinFor")); err != nil {
			writeVerdict(w, report.Unjudged("", gate.BadRequest, err))
			return
		}
		// A pin blocks every cleanup above it: the worker writes it with its
		// own Kafka credentials only for a caller it can name, and the pin's
		// actor names both (the audit trail says who asked).
		caller, ok := d.requireCaller(w, r, "pin a recovery point")
		if !ok {
			return
		}
		actor = d.cfg.actor + " for " + caller.Via + ":" + caller.Name
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
		verdict = d.cluster.ValidateAndPin(ctx, markers, opts, pinFor, actor)
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

// checkpointRequest is the body of POST /v1/validate that names a checkpoint instead of
// carrying markers: {"checkpoint":"PATH"} with at most one of "operatorUid" and
// "operatorUidHash", the flags of kcleanup validate --checkpoint.
type checkpointRequest struct {
	Checkpoint      string `json:"checkpoint"`
	OperatorUID     string `json:"operatorUid,omitempty"`
	OperatorUIDHash string `json:"operatorUidHash,omitempty"`
}

// parseCheckpointRequest tells a checkpoint request (an object with "checkpoint") from
// markers, and reads it strictly: an unknown field is an error, never ignored.
func parseCheckpointRequest(body []byte) (checkpointRequest, bool, error) {
	trimmed := bytes.TrimLeft(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return checkpointRequest{}, false, nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(trimmed, &fields) != nil {
		return checkpointRequest{}, false, nil // not an object: ParseMarkers says why
	}
	if _, ok := fields["checkpoint"]; !ok {
		return checkpointRequest{}, false, nil
	}
	for k := range fields {
		if k != "checkpoint" && k != "operatorUid" && k != "operatorUidHash" {
			return checkpointRequest{}, true, errors.WithHint(errors.Newf("unknown field %q in a checkpoint request", k),
				`send {"checkpoint":"PATH"}, with "operatorUid" or "operatorUidHash" when several operators hold the markers`)
		}
	}
	var req checkpointRequest
	if err := json.Unmarshal(trimmed, &req); err != nil {
		return req, true, errors.Wrap(err, "read the checkpoint request")
	}
	switch {
	case strings.TrimSpace(req.Checkpoint) == "":
		return req, true, errors.New(`"checkpoint" is blank: name the checkpoint or savepoint the job restores from`)
	case req.OperatorUID != "" && req.OperatorUIDHash != "":
		return req, true, errors.New(`"operatorUid" and "operatorUidHash" both name the operator: give one`)
	}
	return req, true, nil
}

// checkpointMarkers reads the markers of the checkpoint a request names, or answers for it.
// The worker reads with its own credentials, so only for a caller it can name (401/403, as
// ?pinFor=) and only under its --checkpoint-root locations (403 checkpoint-forbidden; every
// file the checkpoint names is held to them too); a checkpoint it cannot read proves nothing
// (503 checkpoint-unreadable).
func (d *Daemon) checkpointMarkers(w http.ResponseWriter, r *http.Request, ask checkpointRequest) ([]events.Marker, bool) {
	if _, ok := d.requireCaller(w, r, "read a checkpoint"); !ok {
		return nil, false
	}
	if len(d.cfg.checkpointRoots) == 0 {
		writeVerdict(w, report.Unjudged("", gate.CheckpointForbidden, errors.WithHint(
			errors.New("this worker reads no checkpoint: it has no --checkpoint-root"),
			"start the worker with --checkpoint-root LOCATION (repeatable) for the checkpoint and savepoint directories it may read, or send the markers instead (kcleanup markers --checkpoint PATH -o json)")))
		return nil, false
	}
	if ref, err := store.ParseRef(ask.Checkpoint, "/"); err == nil && ref.Scheme == "file" && !filepath.IsAbs(ask.Checkpoint) && !strings.HasPrefix(ask.Checkpoint, "file:") {
		// A worker's working directory means nothing to its callers.
		writeVerdict(w, report.Unjudged("", gate.BadRequest, errors.WithHint(errors.Newf("checkpoint path %q is relative", ask.Checkpoint),
			"name the checkpoint by an absolute path, a file:// URL or an s3:// URL")))
		return nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), d.cfg.readTimeout)
	defer cancel()
	cp, err := worker.ReadCheckpoint(ctx, ask.Checkpoint, checkpoint.Selector{OperatorUID: ask.OperatorUID, OperatorUIDHash: ask.OperatorUIDHash},
		store.Options{Confined: true, Roots: d.cfg.checkpointRoots})
	if err == nil {
		err = cp.Complete()
	}
	switch {
	case errors.Is(err, store.ErrOutsideRoots):
		writeVerdict(w, report.Unjudged("", gate.CheckpointForbidden, err))
		return nil, false
	case err != nil:
		writeVerdict(w, report.Unjudged("", gate.CheckpointUnreadable, err))
		return nil, false
	}
	return cp.Markers(), true
}
