package worker

import (
	"io"
	"net/http"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
)

// maxValidateBody bounds a /v1/validate request: markers of thousands of
// subtasks fit easily.
const maxValidateBody = 4 << 20

// ValidateResult is the recovery gate's verdict on one recovery point, as
// /v1/validate answers it. When refused, the first refusal's fields are
// repeated at the top level (reason, partition, requested, boundary, planId)
// for clients that read only one; Refusals lists them all.
type ValidateResult struct {
	Allowed      bool   `json:"allowed"`
	ControlTopic string `json:"controlTopic"`
	// ReadTo is the control-topic offset the verdict was made at.
	ReadTo int64 `json:"readTo"`
	*Refusal
	Hint     string    `json:"hint,omitempty"`
	Refusals []Refusal `json:"refusals,omitempty"`
}

// Refusal is one reason a recovery point may not be restored.
type Refusal struct {
	Reason projector.RefusalReason `json:"reason"`
	// Message is the sentence an operator reads, e.g. "Cannot restore Kafka
	// action state for action-state-0 from offset 100 because the committed
	// cleanup boundary is 150 (set by plan …)".
	Message string `json:"message"`
	// Marker is the index of the offending marker (-1: not about one).
	Marker    int    `json:"marker"`
	Topic     string `json:"topic,omitempty"`
	Partition *int32 `json:"partition,omitempty"`
	// Requested is what the marker needs (absent when it has no offset).
	Requested *int64 `json:"requested,omitempty"`
	Boundary  *int64 `json:"boundary,omitempty"`
	PlanID    string `json:"planId,omitempty"`
	// For a topic or topic-ID mismatch: what the marker says and what the
	// control topic governs.
	MarkerTopicID string `json:"markerTopicId,omitempty"`
	BoundTopic    string `json:"boundTopic,omitempty"`
	BoundTopicID  string `json:"boundTopicId,omitempty"`
}

// ValidateMarkers is the recovery gate of DESIGN §7 over a projection. The
// caller must have just caught the projection up (Projection.CatchUp): a
// verdict from a view that cannot prove it is caught up is worthless. A
// degraded projection refuses.
func ValidateMarkers(proj *Projection, markers []events.Marker) ValidateResult {
	res := ValidateResult{Allowed: true, ControlTopic: proj.Topic, ReadTo: proj.Next}
	for _, r := range proj.State.Refusals(markers) {
		res.Refusals = append(res.Refusals, refusalOf(r))
	}
	if len(res.Refusals) == 0 {
		return res
	}
	res.Allowed = false
	first := res.Refusals[0]
	res.Refusal = &first
	if hints := errors.GetAllHints(proj.State.Validate(markers)); len(hints) > 0 {
		res.Hint = hints[0]
	}
	return res
}

func refusalOf(r *projector.RefusalError) Refusal {
	out := Refusal{Reason: r.Reason, Message: r.Error(), Marker: r.Marker, Topic: r.Topic,
		MarkerTopicID: r.MarkerTopicID, BoundTopic: r.BoundTopic, BoundTopicID: r.BoundTopicID}
	switch r.Reason {
	case projector.RefuseBelowBoundary, projector.RefuseMissingPartition:
		p, b := r.Partition, r.Boundary
		out.Partition, out.Boundary, out.PlanID = &p, &b, r.PlanID
		if r.Reason == projector.RefuseBelowBoundary {
			req := r.Requested
			out.Requested = &req
		}
	}
	return out
}

// validateError is the body of a /v1/validate answer that is not a verdict.
// Allowed is always false, so a client that reads only that field fails
// closed.
type validateError struct {
	Allowed      bool     `json:"allowed"`
	ControlTopic string   `json:"controlTopic,omitempty"`
	Reason       string   `json:"reason"`
	Error        string   `json:"error"`
	Hints        []string `json:"hints,omitempty"`
}

// Reasons of a /v1/validate answer that is not a verdict.
const (
	validateBadRequest   = "bad-request"
	validateUnknownTopic = "unknown-control-topic"
	validateNotCaughtUp  = "not-caught-up"
	validateDegraded     = "degraded"
	validateStopping     = "shutting-down"
)

// serveValidate answers 200 (allowed), 409 (refused), 400 (the markers or
// the query are wrong), 404 (control topic not served), or 503 (this
// replica cannot prove it is caught up, the projection is degraded, or it is
// shutting down): it never says yes without proof.
func (d *Daemon) serveValidate(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, topic, reason string, err error) {
		writeJSONStatus(w, code, validateError{ControlTopic: topic, Reason: reason, Error: err.Error(), Hints: errors.GetAllHints(err)})
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxValidateBody))
	if err != nil {
		fail(http.StatusBadRequest, "", validateBadRequest, errors.Wrap(err, "read request body"))
		return
	}
	markers, err := events.ParseMarkers(body)
	if err != nil {
		fail(http.StatusBadRequest, "", validateBadRequest, err)
		return
	}
	topic, code, err := d.validateTopic(r.URL.Query().Get("controlTopic"), markers)
	if err != nil {
		reason := validateBadRequest
		if code == http.StatusNotFound {
			reason = validateUnknownTopic
		}
		fail(code, topic, reason, err)
		return
	}
	d.mu.Lock()
	stopping := d.stopping
	d.mu.Unlock()
	if stopping {
		fail(http.StatusServiceUnavailable, topic, validateStopping, errors.New("this worker is shutting down; ask another replica"))
		return
	}
	v := d.views[topic]
	if !v.acquire(r.Context()) {
		fail(http.StatusServiceUnavailable, topic, validateNotCaughtUp, r.Context().Err())
		return
	}
	err = v.prove(r.Context())
	var res ValidateResult
	if err == nil {
		res = ValidateMarkers(v.proj, markers)
	}
	v.release()
	switch {
	case errors.Is(err, ErrDegraded):
		fail(http.StatusServiceUnavailable, topic, validateDegraded, err)
	case err != nil:
		fail(http.StatusServiceUnavailable, topic, validateNotCaughtUp, errors.Mark(err, ErrNotCaughtUp))
	case !res.Allowed:
		writeJSONStatus(w, http.StatusConflict, res)
	default:
		writeJSONStatus(w, http.StatusOK, res)
	}
}

// validateTopic picks the control topic a validate request is about: the
// one named, the only one served, or the one bound to the markers' topic
// and topic ID.
func (d *Daemon) validateTopic(named string, markers []events.Marker) (string, int, error) {
	if named != "" {
		if d.views[named] == nil {
			return named, http.StatusNotFound, errors.WithHintf(errors.Newf("this worker does not serve control topic %q", named),
				"it serves %v", d.cfg.topics)
		}
		return named, 0, nil
	}
	if len(d.cfg.topics) == 1 {
		return d.cfg.topics[0], 0, nil
	}
	var match []string
	for _, t := range d.cfg.topics {
		st := d.views[t].snap.Load().status
		if st.Topic != "" && st.Topic == markers[0].Topic && st.TopicID == markers[0].TopicID {
			match = append(match, t)
		}
	}
	if len(match) == 1 {
		return match[0], 0, nil
	}
	return "", http.StatusBadRequest, errors.WithHintf(
		errors.Newf("this worker serves %d control topics and none governs exactly topic %s (ID %s)", len(d.cfg.topics), markers[0].Topic, markers[0].TopicID),
		"name one with ?controlTopic=<control topic>; served: %v", d.cfg.topics)
}
