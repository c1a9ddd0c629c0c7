package console

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/report/page"
	"github.com/kcleanup/kcleanup/worker/daemon"
)

// Handler serves the console of a replica:
//
//	GET /              the whole page
//	GET /console/main  its content, which the page polls (ETag: 304 when unchanged)
//
// Both take ?all=true, as /v1/status does: by default the page shows the
// default view (every operation not APPLIED, the most recent others, the
// most recent rejected records, counts of all). status is the replica's
// /v1/status document (Daemon.WorkerStatusView): the console renders that
// and nothing else.
func Handler(status func(all bool) report.WorkerStatus) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { serve(w, r, status, false) })
	mux.HandleFunc("GET /console/main", func(w http.ResponseWriter, r *http.Request) { serve(w, r, status, true) })
	return mux
}

// Mount adds the console to a worker daemon's HTTP server, at the paths
// Handler serves and no other: a path neither serves is a 404, and a path
// asked with the wrong method (POST /, GET /v1/validate) a 405.
func Mount() daemon.Option {
	return daemon.WithPage(console, "GET /{$}", "GET /console/main")
}

func console(d *daemon.Daemon) http.Handler { return Handler(d.WorkerStatusView) }

func serve(w http.ResponseWriter, r *http.Request, status func(all bool) report.WorkerStatus, main bool) {
	all := false
	switch v := r.URL.Query().Get("all"); v {
	case "", "false":
	case "true":
		all = true
	default:
		http.Error(w, "all="+v+" is not true or false: open / for the default view, /?all=true for everything", http.StatusBadRequest)
		return
	}
	body, err := page.HTML(page.FromWorker(status(all), time.Now()), main)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:12]) + `"`
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Type", "text/html; charset=utf-8")
	// Nothing but the page itself: no script, style or image from elsewhere.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write(body)
}
