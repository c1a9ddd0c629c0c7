package daemon

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker/httpauth"
)

// Handler serves the replica's HTTP API:
//
//	GET  /healthz      200 while the process runs
//	GET  /readyz       200 when every served control topic was read to its end
//	                   within the ready window; 503 with the reasons otherwise
//	GET  /metrics      Prometheus metrics (prometheus/client_golang)
//	GET  /v1/status    every served control topic (?controlTopic= for one;
//	                   ?all=true for every operation and rejected record)
//	POST /v1/validate  the recovery gate: markers in, a verdict out
//
// and whatever was added with WithPage (the console, at /). With
// WithHTTPAuth protecting reads, everything but the probes needs an
// authenticated caller; a request that acts for its caller (?pinFor=) needs
// one always (requireCaller). A known path
// asked with another method is a 405 naming the methods it takes (Allow),
// never a 404 that reads as "no such endpoint".
func (d *Daemon) Handler() http.Handler {
	mux := http.NewServeMux()
	read := d.protectRead
	for _, p := range d.cfg.pages {
		h := read(p.page(d))
		for _, pattern := range p.patterns {
			mux.Handle(pattern, h)
		}
	}
	// Probes carry no credentials (kubelet): always open.
	mux.HandleFunc("GET /healthz", d.serveHealth)
	mux.HandleFunc("GET /readyz", d.serveReady)
	mux.Handle("GET /metrics", read(promhttp.HandlerFor(d.registry, promhttp.HandlerOpts{})))
	mux.Handle("GET /v1/status", read(http.HandlerFunc(d.serveStatus)))
	mux.Handle("POST /v1/validate", read(http.HandlerFunc(d.serveValidate)))
	// ServeMux answers every other wrong method with a bare 405; the gate's
	// callers are scripts, so this one says how to ask.
	mux.HandleFunc("/v1/validate", serveValidateMethod)
	return mux
}

// protectRead lets a read-only endpoint's request through when reads are
// open, or when its caller is authenticated.
func (d *Daemon) protectRead(h http.Handler) http.Handler {
	if !d.cfg.auth.Config().ProtectReads {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := d.requireCaller(w, r, "read this endpoint"); ok {
			h.ServeHTTP(w, r)
		}
	})
}

// requireCaller names the caller of r, or answers for it and returns false:
// 401 with a Bearer challenge for missing or unaccepted credentials, 403
// when this worker authenticates nobody (so nobody may ask it to act).
func (d *Daemon) requireCaller(w http.ResponseWriter, r *http.Request, what string) (httpauth.Caller, bool) {
	c, err := d.cfg.auth.Caller(r)
	switch {
	case err == nil:
		return c, true
	case errors.Is(err, httpauth.ErrNotConfigured):
		writeJSONStatus(w, http.StatusForbidden, apiError{
			Error: "this worker authenticates no caller, so it does not " + what + " for anyone",
			Hints: []string{"start the worker with --http-token-file FILE or with --http-client-ca-file CA (and --http-tls-cert-file, --http-tls-key-file) (docs/deploy.md, \"The HTTP API's callers\")",
				"or run the command yourself with your own credentials: kcleanup validate --markers FILE --pin-for D"},
		})
	default:
		w.Header().Set("WWW-Authenticate", `Bearer realm="kcleanup"`)
		writeJSONStatus(w, http.StatusUnauthorized, apiError{
			Error: "authentication required to " + what + ": " + err.Error(),
			Hints: []string{"send Authorization: Bearer <token> with a token of the worker's --http-token-file, or a client certificate signed by its --http-client-ca-file"},
		})
	}
	return httpauth.Caller{}, false
}

// serveValidateMethod answers a /v1/validate request that is not a POST
// (a browser, or curl without -X POST): 405, Allow: POST, and how to ask.
func serveValidateMethod(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", http.MethodPost)
	writeJSONStatus(w, http.StatusMethodNotAllowed, apiError{
		Error: r.Method + " /v1/validate: the recovery gate takes the markers by POST",
		Hints: []string{"curl -s -X POST --data-binary @markers.json http://" + r.Host + "/v1/validate"},
	})
}

func writeJSONStatus(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (d *Daemon) serveHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// readiness is the body of /readyz.
type readiness struct {
	Ready bool `json:"ready"`
	// NotReady says, per control topic, why it is not caught up.
	NotReady map[string]string `json:"notReady,omitempty"`
	// Group says why the consumer group has not admitted this replica.
	Group  string `json:"group,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Unauthorized says, per control topic, which missing ACL blocks this replica. It fails
	// readiness only through NotReady (a projection that cannot read its control topic);
	// an operation blocked by a missing Write or Delete leaves the replica ready, because
	// it still serves status and validation correctly (docs/deploy.md).
	Unauthorized map[string]string `json:"unauthorized,omitempty"`
	// Mirror says, per control topic, why its attached Flink Agents mirror
	// is not in step (lags, ahead, cannot be written or read) and the fix.
	// Like Unauthorized it does not fail readiness: the replica still
	// serves status and validation correctly, and no deletion starts until
	// the mirror holds the plan.
	Mirror map[string]string `json:"mirror,omitempty"`
	// Tombstones says, per control topic this replica owns, that its data
	// topic holds a tombstone at or above the committed boundary (the job
	// writes tombstones again), and the fix. Like Mirror it does not fail
	// readiness: status and validation stay correct; no deletion starts.
	Tombstones map[string]string `json:"tombstones,omitempty"`
	// Governance names, per control topic, another served control topic
	// bound to the same topic incarnation, and the fix: no deletion starts
	// on either (protocol.SharedGovernance). Like Mirror it does not fail
	// readiness.
	Governance map[string]string `json:"governance,omitempty"`
	// Unowned says, per control topic the group assigned this replica, why
	// the replica does not own it yet (its settings could not be read: a
	// broker that did not answer, no file descriptor left); it asks again
	// with backoff. Nobody finishes its operations meanwhile, but status and
	// validation stay correct, so it does not fail readiness.
	Unowned map[string]string `json:"unowned,omitempty"`
	// Descriptors says that the open-file limit is below what the control
	// topics served need (protocol.DescriptorShortfall), and the fix. The
	// replica keeps running, degraded; it does not fail readiness by itself.
	Descriptors string `json:"descriptors,omitempty"`
	// Memory says that the live heap is above GOMEMLIMIT
	// (protocol.MemoryShortfall): slower, not failing readiness.
	Memory string `json:"memory,omitempty"`
}

func (d *Daemon) serveReady(w http.ResponseWriter, _ *http.Request) {
	d.mu.Lock()
	stopping := d.stopping
	d.mu.Unlock()
	if stopping {
		writeJSONStatus(w, http.StatusServiceUnavailable, readiness{Reason: "shutting down"})
		return
	}
	r := readiness{Ready: true}
	// A member the group does not admit owns nothing, and never will if the
	// broker refuses its settings.
	admitted, why := d.groupReady()
	if u := d.unauthorized(); len(u) > 0 {
		r.Unauthorized = u
	}
	if m := d.mirrorNotInStep(); len(m) > 0 {
		r.Mirror = m
	}
	if ts := d.tombstonesAbove(); len(ts) > 0 {
		r.Tombstones = ts
	}
	if g := d.sharedGovernances(); len(g) > 0 {
		r.Governance = g
	}
	r.Unowned, r.Descriptors, r.Memory = d.unownedTopics(), d.descriptorShortfall(), d.memoryShortfall()
	for _, t := range d.servedTopics() {
		if ok, why := d.view(t).snap.Load().caughtUp(d.cfg.readyWindow); !ok {
			if r.NotReady == nil {
				r.NotReady = map[string]string{}
			}
			r.NotReady[t] = why
			r.Ready = false
		}
	}
	if !r.Ready {
		r.Reason = "not caught up with every control topic"
	}
	if !admitted {
		r.Ready, r.Reason, r.Group = false, why, why
	}
	if !r.Ready {
		writeJSONStatus(w, http.StatusServiceUnavailable, r)
		return
	}
	writeJSONStatus(w, http.StatusOK, r)
}

// topicStatus assembles a TopicStatus from the view's last snapshot: the
// complete document when all, else the default view.
func (d *Daemon) topicStatus(topic string, all bool) report.TopicStatus {
	s := d.view(topic).snap.Load()
	ts := report.TopicStatus{Status: s.summary, LagRecords: s.lag}
	if all {
		ts.Status = s.status
	}
	ts.Status.Mirror = d.view(topic).mirrorOf()
	ts.Blocked = []report.BlockedOperation{}
	if o := d.owned(topic); o != nil {
		ts.Owned = true
		ts.Blocked = o.blocked()
		ts.RestoreGrace = o.waiting()
		ts.Retrying = o.retrying()
		ts.Retention = o.retentionFollow()
	}
	ts.CaughtUp, _ = s.caughtUp(d.cfg.readyWindow)
	if !s.caughtUpAt.IsZero() {
		at := s.caughtUpAt.UTC()
		ts.CaughtUpAt = &at
	}
	if s.err != nil {
		ts.ReadError = s.err.Error()
	}
	ts.DataTopic = s.data
	return ts
}

// apiError is the body of every error answer.
type apiError struct {
	Error string   `json:"error"`
	Hints []string `json:"hints,omitempty"`
}

func (d *Daemon) serveStatus(w http.ResponseWriter, r *http.Request) {
	all := false
	switch v := r.URL.Query().Get("all"); v {
	case "", "false":
	case "true":
		all = true
	default:
		writeJSONStatus(w, http.StatusBadRequest, apiError{Error: "all=" + v + " is not true or false",
			Hints: []string{"ask /v1/status for the default view, /v1/status?all=true for every operation and rejected record"}})
		return
	}
	if q := r.URL.Query(); q.Has("controlTopic") {
		t := q.Get("controlTopic")
		if strings.TrimSpace(t) == "" {
			writeJSONStatus(w, http.StatusBadRequest, apiError{Error: "?controlTopic= is given but blank",
				Hints: []string{"name a served control topic, or leave the parameter out for all of them"}})
			return
		}
		if d.view(t) == nil {
			writeJSONStatus(w, http.StatusNotFound, apiError{Error: "this worker does not serve control topic " + t})
			return
		}
		writeJSONStatus(w, http.StatusOK, d.topicStatus(t, all))
		return
	}
	writeJSONStatus(w, http.StatusOK, d.WorkerStatusView(all))
}

// WorkerStatus is the document /v1/status?all=true serves: every control
// topic this replica serves, complete, from the snapshots of its last reads
// (it never waits for Kafka). Pages served next to the API (the console)
// render only this.
func (d *Daemon) WorkerStatus() report.WorkerStatus { return d.WorkerStatusView(true) }

// WorkerStatusView is /v1/status: the default view of every control topic
// (see Status.Complete), or the complete document when all.
func (d *Daemon) WorkerStatusView(all bool) report.WorkerStatus {
	ws := report.WorkerStatus{SchemaVersion: report.StatusSchemaVersion, Group: d.cfg.group, Actor: d.cfg.actor}
	for _, t := range d.servedTopics() {
		ws.ControlTopics = append(ws.ControlTopics, d.topicStatus(t, all))
	}
	ws.Fleet = d.fleet.Load()
	return ws
}
