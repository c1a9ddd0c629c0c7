package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/internal/consoletest"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
	"github.com/kcleanup/kcleanup/worker/daemon"
)

func TestHandlerServesThePageAndItsContent(t *testing.T) {
	ws, _ := consoletest.FleetStatus(t)
	srv := httptest.NewServer(Handler(func(bool) report.WorkerStatus { return ws }))
	defer srv.Close()

	get := func(path, etag string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	page := get("/", "")
	if page.StatusCode != 200 || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", page.StatusCode, page.Header.Get("Content-Type"))
	}
	if csp := page.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Fatalf("GET /: Content-Security-Policy %q lets the page load from elsewhere", csp)
	}
	main := get("/console/main", "")
	etag := main.Header.Get("ETag")
	if main.StatusCode != 200 || etag == "" {
		t.Fatalf("GET /console/main: %d, ETag %q", main.StatusCode, etag)
	}
	if again := get("/console/main", etag); again.StatusCode != http.StatusNotModified {
		t.Fatalf("GET /console/main with its ETag: %d, want 304", again.StatusCode)
	}
	if other := get("/nope", ""); other.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /nope: %d, want 404", other.StatusCode)
	}
}

// The console shows /v1/status's default view, and everything with
// ?all=true, as /v1/status does; it says what the default view left out.
func TestConsoleShowsTheDefaultViewAndAllOnRequest(t *testing.T) {
	ws, _ := consoletest.FleetStatus(t)
	var asked []bool
	srv := httptest.NewServer(Handler(func(all bool) report.WorkerStatus {
		asked = append(asked, all)
		v := ws
		v.ControlTopics = slices.Clone(ws.ControlTopics)
		if !all {
			v.ControlTopics[0].Complete = false
			v.ControlTopics[0].OperationsOmitted, v.ControlTopics[0].RejectedOmitted = 3, 7
		}
		return v
	}))
	defer srv.Close()
	body := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, b := body("/"); code != 200 || !strings.Contains(b, "3 older APPLIED operation(s) not shown") ||
		!strings.Contains(b, "7 older rejected record(s) not shown") {
		t.Errorf("default view: %d, does not say what it left out", code)
	}
	if code, b := body("/console/main?all=true"); code != 200 || strings.Contains(b, "not shown") {
		t.Errorf("?all=true: %d, or still says something is not shown", code)
	}
	if code, _ := body("/?all=maybe"); code != http.StatusBadRequest {
		t.Errorf("?all=maybe: %d, want 400", code)
	}
	if !slices.Equal(asked, []bool{false, true}) {
		t.Errorf("asked the worker for views %v, want [false true]", asked)
	}
}

// Mounted on a worker, the console takes its own paths only: a wrong
// method on the API's paths or on its own is a 405 with Allow, not its 404.
func TestMountedConsoleLeavesWrongMethodsTo405(t *testing.T) {
	d, err := daemon.New(&worker.Cluster{}, daemon.WithControlTopics("a.kcleanup"), Mount())
	if err != nil {
		t.Fatal(err)
	}
	h := d.Handler()
	for _, c := range []struct {
		method, path string
		code         int
		allow        string
	}{
		{http.MethodGet, "/", 200, ""},
		{http.MethodGet, "/v1/validate", 405, "POST"},
		{http.MethodPost, "/v1/status", 405, "GET, HEAD"},
		{http.MethodPost, "/", 405, "GET, HEAD"},
		{http.MethodPost, "/console/main", 405, "GET, HEAD"},
		{http.MethodGet, "/nope", 404, ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		if rec.Code != c.code || rec.Header().Get("Allow") != c.allow {
			t.Errorf("%s %s: %d Allow %q, want %d Allow %q", c.method, c.path, rec.Code, rec.Header().Get("Allow"), c.code, c.allow)
		}
	}
}
