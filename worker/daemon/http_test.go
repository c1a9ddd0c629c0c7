package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/gate"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/worker"
	"github.com/kcleanup/kcleanup/worker/httpauth"
)

// answer is one HTTP response, body read.
type answer struct {
	code int
	body string
}

func (a answer) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(a.body), v); err != nil {
		t.Fatalf("answer %d is not JSON: %v\n%s", a.code, err, a.body)
	}
}

func do(t *testing.T, method, url, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, string(b)}
}

func marker(topic, id string, offs events.Offsets) string {
	return string(events.Marker{Topic: topic, TopicID: id, Offsets: offs}.Encode())
}

// appliedFixture is a daemon serving one control topic on which plan C1
// (0:150, 1:120) is APPLIED, behind an httptest server.
type appliedFixture struct {
	c        *worker.Cluster
	r        *running
	url      string
	id, ctl  string
	plan     events.Plan
	validate string // URL of /v1/validate
}

func newAppliedFixture(t *testing.T, opts ...Option) appliedFixture {
	t.Helper()
	c := fakeGroupCluster(t)
	id, ctl := setup(t, c, "action-state")
	plan := workertest.MustPlan(t, "C1", "action-state", id, events.Offsets{0: 150, 1: 120})
	commit(t, c, ctl, plan)
	r := startDaemon(t, c, append(fastOptions(t, ctl), opts...)...)
	srv := httptest.NewServer(r.d.Handler())
	t.Cleanup(srv.Close)
	kafkatest.Eventually(t, 20*time.Second, "plan APPLIED", func() bool { return stateOf(t, c, ctl, plan.PlanID) == fsm.Applied })
	kafkatest.Eventually(t, 20*time.Second, "ready", func() bool { return do(t, "GET", srv.URL+"/readyz", "").code == 200 })
	return appliedFixture{c: c, r: r, url: srv.URL, id: id, ctl: ctl, plan: plan, validate: srv.URL + "/v1/validate"}
}

func TestHealthAndReadinessBeforeAndAfterTheFirstRead(t *testing.T) {
	c := fakeGroupCluster(t)
	id, ctl := setup(t, c, "action-state")
	d, err := New(c, fastOptions(t, ctl)...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	if a := do(t, "GET", srv.URL+"/healthz", ""); a.code != 200 {
		t.Fatalf("/healthz %d before Run, want 200", a.code)
	}
	a := do(t, "GET", srv.URL+"/readyz", "")
	var rd readiness
	a.decode(t, &rd)
	if a.code != 503 || rd.Ready || rd.NotReady[ctl] != "not read yet" {
		t.Fatalf("/readyz before any read: %d %s", a.code, a.body)
	}
	// Validate fails closed before the control topic was ever read.
	a = do(t, "POST", srv.URL+"/v1/validate", marker("action-state", id, events.Offsets{0: 1, 1: 1}))
	if a.code != 503 || !strings.Contains(a.body, `"allowed": false`) || !strings.Contains(a.body, `"reason": "`+string(gate.NotCaughtUp)) {
		t.Fatalf("/v1/validate before any read: %d %s", a.code, a.body)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	kafkatest.Eventually(t, 20*time.Second, "ready", func() bool { return do(t, "GET", srv.URL+"/readyz", "").code == 200 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	a = do(t, "GET", srv.URL+"/readyz", "")
	if a.code != 503 || !strings.Contains(a.body, "shutting down") {
		t.Fatalf("/readyz after shutdown: %d %s", a.code, a.body)
	}
}

func TestStatusServesTheStatusDocument(t *testing.T) {
	f := newAppliedFixture(t)
	var st report.TopicStatus
	var a answer
	// The view reads every poll interval: wait until it has seen APPLIED.
	kafkatest.Eventually(t, 20*time.Second, "status shows the operation APPLIED", func() bool {
		a = do(t, "GET", f.url+"/v1/status?controlTopic="+f.ctl, "")
		st = report.TopicStatus{}
		a.decode(t, &st)
		return a.code == 200 && len(st.Operations) == 1 && st.Operations[0].State == fsm.Applied
	})
	// The keys of `kcleanup status -o json` are all present, lists never null.
	var raw map[string]any
	a.decode(t, &raw)
	for _, k := range []string{"schemaVersion", "controlTopic", "readTo", "boundary", "operations", "rejected", "degraded", "blocked", "owned", "caughtUp"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("status has no %q: %s", k, a.body)
		}
	}
	if raw["rejected"] == nil || raw["blocked"] == nil {
		t.Errorf("empty lists must be [] not null: %s", a.body)
	}
	if st.ControlTopic != f.ctl || st.Topic != "action-state" || st.TopicID != f.id {
		t.Fatalf("status names %s / %s %s", st.ControlTopic, st.Topic, st.TopicID)
	}
	if !st.Boundary.Equal(events.Offsets{0: 150, 1: 120}) || st.BoundarySetBy[0] != f.plan.PlanID {
		t.Fatalf("boundary %v set by %v", st.Boundary, st.BoundarySetBy)
	}
	if len(st.Operations) != 1 || st.Operations[0].PlanID != f.plan.PlanID || st.Operations[0].State != fsm.Applied {
		t.Fatalf("operations %+v", st.Operations)
	}
	if !st.Owned || !st.CaughtUp || st.ReadTo != 4 {
		t.Fatalf("owned=%v caughtUp=%v readTo=%d, want true true 4 (PLANNED, COMMITTED, DELETING, APPLIED)", st.Owned, st.CaughtUp, st.ReadTo)
	}
	var steps []events.Event
	for i, h := range st.Operations[0].History {
		if h.Offset != int64(i) || h.At.IsZero() || h.Actor == "" {
			t.Errorf("history step %d: %+v", i, h)
		}
		steps = append(steps, h.Event)
	}
	if want := []events.Event{events.Planned, events.Committed, events.Deleting, events.Applied}; !slices.Equal(steps, want) {
		t.Errorf("history %v, want %v", steps, want)
	}
	if raw["repairs"] == nil || raw["retractions"] == nil {
		t.Errorf("repairs and retractions must be [] not null: %s", a.body)
	}
	// The data topic's offsets, for the console's bars.
	kafkatest.Eventually(t, 20*time.Second, "status lists the data topic's offsets", func() bool {
		st = report.TopicStatus{}
		do(t, "GET", f.url+"/v1/status?controlTopic="+f.ctl, "").decode(t, &st)
		return st.DataTopic != nil && st.DataTopic.LogStart.Equal(events.Offsets{0: 150, 1: 120})
	})
	if d := st.DataTopic; d.Error != "" || len(d.HighWatermark) != 2 || d.HighWatermark[0] < 150 || d.ListedAt.IsZero() {
		t.Fatalf("dataTopic %+v", d)
	}

	var all report.WorkerStatus
	kafkatest.Eventually(t, 20*time.Second, "status describes the fleet", func() bool {
		all = report.WorkerStatus{}
		do(t, "GET", f.url+"/v1/status", "").decode(t, &all)
		return all.Fleet != nil && len(all.Fleet.Members) == 1 && slices.Equal(all.Fleet.Members[0].ControlTopics, []string{f.ctl})
	})
	if m := all.Fleet.Members[0]; !m.Self || m.MemberID == "" || all.Fleet.Error != "" {
		t.Fatalf("fleet %+v", all.Fleet)
	}
	workertest.ValidateWorkerStatus(t, []byte(do(t, "GET", f.url+"/v1/status", "").body))
	workertest.ValidateWorkerStatus(t, []byte(do(t, "GET", f.url+"/v1/status?all=true", "").body))
	if all.Group != GroupFor(f.ctl) || len(all.ControlTopics) != 1 || all.ControlTopics[0].ControlTopic != f.ctl {
		t.Fatalf("worker status %+v", all)
	}
	if a := do(t, "GET", f.url+"/v1/status?controlTopic=nope", ""); a.code != 404 {
		t.Fatalf("status of an unserved control topic: %d %s", a.code, a.body)
	}
	// A blank ?controlTopic= (an unset variable in the caller's URL) is a bad request, never the
	// only control topic served (issue 20 item 1).
	for _, q := range []string{"?controlTopic=", "?controlTopic=%20"} {
		if a := do(t, "GET", f.url+"/v1/status"+q, ""); a.code != 400 || !strings.Contains(a.body, "is given but blank") {
			t.Fatalf("status%s: %d %s", q, a.code, a.body)
		}
		a := do(t, "POST", f.validate+q, marker("action-state", f.id, events.Offsets{0: 1, 1: 1}))
		if a.code != 400 || !strings.Contains(a.body, "is given but blank") || strings.Contains(a.body, `"allowed": true`) {
			t.Fatalf("validate%s: %d %s", q, a.code, a.body)
		}
	}
	// The default view is not complete; ?all=true is; anything else is a 400.
	if st.Complete || st.OperationCounts[fsm.Applied] != 1 {
		t.Fatalf("default view: complete %v, counts %v", st.Complete, st.OperationCounts)
	}
	var complete report.TopicStatus
	do(t, "GET", f.url+"/v1/status?all=true&controlTopic="+f.ctl, "").decode(t, &complete)
	if !complete.Complete || len(complete.Operations) != 1 || complete.SchemaVersion != report.StatusSchemaVersion {
		t.Fatalf("?all=true: %+v", complete.Status)
	}
	if a := do(t, "GET", f.url+"/v1/status?all=yes", ""); a.code != 400 || !strings.Contains(a.body, "all=true") {
		t.Fatalf("?all=yes: %d %s", a.code, a.body)
	}
}

func TestValidateVerdicts(t *testing.T) {
	f := newAppliedFixture(t)
	msg := fmt.Sprintf("Cannot restore Kafka action state for action-state-0 from offset 100 because the committed cleanup boundary is 150 (set by plan %s)", f.plan.PlanID)

	t.Run("allowed", func(t *testing.T) {
		a := do(t, "POST", f.validate, marker("action-state", f.id, events.Offsets{0: 150, 1: 200}))
		var res gate.Verdict
		a.decode(t, &res)
		if a.code != 200 || !res.Allowed || res.Class != gate.Allowed || res.ControlTopic != f.ctl || *res.ReadTo != 4 || res.Hints == nil {
			t.Fatalf("%d %s", a.code, a.body)
		}
		// Hand-made markers: allowed, with the note that completeness was not checked.
		if !slices.Contains(res.Notes, events.SubtasksUnchecked) {
			t.Fatalf("notes %q: want the note that the markers' completeness cannot be checked", res.Notes)
		}
	})
	t.Run("allowed, every subtask's markers", func(t *testing.T) {
		src := func(st int) string {
			return fmt.Sprintf(`{"schemaVersion":1,"topic":"action-state","topicId":%q,"offsets":{"0":150,"1":200},"checkpointId":9,"operator":{"uid":"u"},"parallelism":2,"subtask":%d}`, f.id, st)
		}
		a := do(t, "POST", f.validate, "["+src(1)+","+src(0)+"]")
		var res gate.Verdict
		a.decode(t, &res)
		if a.code != 200 || !res.Allowed || slices.Contains(res.Notes, events.SubtasksUnchecked) {
			t.Fatalf("%d %s", a.code, a.body)
		}
	})
	t.Run("an array of markers, one below the boundary", func(t *testing.T) {
		body := "[" + marker("action-state", f.id, events.Offsets{0: 200, 1: 120}) + "," +
			marker("action-state", f.id, events.Offsets{0: 100, 1: 130}) + "]"
		a := do(t, "POST", f.validate, body)
		var res gate.Verdict
		a.decode(t, &res)
		if a.code != 409 || res.Allowed || res.Class != gate.Refused || res.Detail == nil {
			t.Fatalf("%d %s", a.code, a.body)
		}
		if res.Reason != gate.BelowBoundary || *res.Partition != 0 || *res.Requested != 100 ||
			*res.Boundary != 150 || res.PlanID != f.plan.PlanID || *res.Marker != 1 || res.Message != msg {
			t.Fatalf("refusal %s", a.body)
		}
		// The boundary, and the log start the apply moved to it: both checks refuse.
		if len(res.Hints) == 0 || len(res.Refusals) != 2 || res.Refusals[1].Reason != gate.OutOfRange ||
			!strings.Contains(res.Refusals[1].Message, "requested offset 100 is outside the available range [150, 200]") {
			t.Fatalf("hints %q, refusals %+v: %s", res.Hints, res.Refusals, a.body)
		}
	})
	t.Run("another topic incarnation", func(t *testing.T) {
		a := do(t, "POST", f.validate, marker("action-state", "AAAAAAAAAAAAAAAAAAAAAQ", events.Offsets{0: 150, 1: 120}))
		if a.code != 409 || !strings.Contains(a.body, string(gate.TopicIDMismatch)) || !strings.Contains(a.body, string(gate.TopicRecreated)) {
			t.Fatalf("%d %s", a.code, a.body)
		}
	})
	t.Run("a partition missing", func(t *testing.T) {
		a := do(t, "POST", f.validate, marker("action-state", f.id, events.Offsets{0: 150}))
		var res gate.Verdict
		a.decode(t, &res)
		if a.code != 409 || res.Reason != gate.MissingPartition || *res.Partition != 1 || res.Requested != nil {
			t.Fatalf("%d %s", a.code, a.body)
		}
	})
	for name, body := range map[string]string{
		"not JSON":         "{",
		"unknown field":    `{"schemaVersion":1,"topic":"action-state","topicId":"` + f.id + `","offsets":{"0":1},"extra":1}`,
		"negative offset":  `{"schemaVersion":1,"topic":"action-state","topicId":"` + f.id + `","offsets":{"0":-1}}`,
		"empty array":      `[]`,
		"empty body":       ``,
		"trailing content": marker("action-state", f.id, events.Offsets{0: 150, 1: 120}) + "x",
		"subtask 0 of two": `{"schemaVersion":1,"topic":"action-state","topicId":"` + f.id + `","offsets":{"0":150,"1":120},"checkpointId":7,"operator":{"uid":"u"},"parallelism":2,"subtask":0}`,
	} {
		t.Run("400 "+name, func(t *testing.T) {
			a := do(t, "POST", f.validate, body)
			var e gate.Verdict
			a.decode(t, &e)
			if a.code != 400 || e.Allowed || e.Reason != gate.BadRequest || e.Class != gate.Invalid || !strings.Contains(e.Message, "invalid") {
				t.Fatalf("%d %s", a.code, a.body)
			}
		})
	}
	t.Run("unknown control topic", func(t *testing.T) {
		a := do(t, "POST", f.validate+"?controlTopic=nope", marker("action-state", f.id, events.Offsets{0: 150, 1: 120}))
		if a.code != 404 || !strings.Contains(a.body, string(gate.UnknownControlTopic)) {
			t.Fatalf("%d %s", a.code, a.body)
		}
	})
	t.Run("GET is not allowed", func(t *testing.T) {
		if a := do(t, "GET", f.validate, ""); a.code != http.StatusMethodNotAllowed {
			t.Fatalf("%d %s", a.code, a.body)
		}
	})
	t.Run("degraded fails closed", func(t *testing.T) {
		produceRaw(t, f.c, f.ctl, f.plan.PlanID+"/COMMITTED", `{"schemaVersion":2,"event":"COMMITTED","whatever":"new fields"}`)
		a := do(t, "POST", f.validate, marker("action-state", f.id, events.Offsets{0: 150, 1: 200}))
		var e gate.Verdict
		a.decode(t, &e)
		if a.code != 503 || e.Allowed || e.Reason != gate.Degraded || e.Class != gate.CannotTell {
			t.Fatalf("%d %s", a.code, a.body)
		}
		body := get(t, f.url+"/metrics")
		if !strings.Contains(body, `kcleanup_projection_degraded{control_topic="`+f.ctl+`"} 1`) ||
			!strings.Contains(body, `kcleanup_rejected_records_total{control_topic="`+f.ctl+`",reason="newer-schema"} 1`) {
			t.Fatalf("metrics do not show the degraded projection:\n%s", body)
		}
	})
}

func produceRaw(t *testing.T, c *worker.Cluster, topic, key, value string) {
	t.Helper()
	r := &kgo.Record{Topic: topic, Partition: 0, Key: []byte(key), Value: []byte(value)}
	if err := c.Client().ProduceSync(context.Background(), r).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateFailsClosedWhenTheBrokerIsGone(t *testing.T) {
	c, fk := fakeGroupBroker(t)
	id, ctl := setup(t, c, "action-state")
	r := startDaemon(t, c, append(fastOptions(t, ctl), WithReadTimeout(300*time.Millisecond), WithReadyWindow(time.Second))...)
	srv := httptest.NewServer(r.d.Handler())
	defer srv.Close()
	kafkatest.Eventually(t, 20*time.Second, "ready", func() bool { return do(t, "GET", srv.URL+"/readyz", "").code == 200 })
	fk.Close()
	// Neither topic can be described: the gate cannot tell (503), whichever fact failed first.
	a := do(t, "POST", srv.URL+"/v1/validate", marker("action-state", id, events.Offsets{0: 1, 1: 1}))
	var v gate.Verdict
	a.decode(t, &v)
	if a.code != 503 || v.Allowed || v.Class != gate.CannotTell || !strings.Contains(v.Message, "could not be") {
		t.Fatalf("validate without a broker: %d %s", a.code, a.body)
	}
	kafkatest.Eventually(t, 20*time.Second, "not ready", func() bool { return do(t, "GET", srv.URL+"/readyz", "").code == 503 })
}

func TestValidatePicksTheControlTopicByBinding(t *testing.T) {
	c := fakeGroupCluster(t)
	idA, ctlA := setup(t, c, "a")
	idB, ctlB := setup(t, c, "b")
	commit(t, c, ctlA, workertest.MustPlan(t, "A1", "a", idA, events.Offsets{0: 10, 1: 10}))
	commit(t, c, ctlB, workertest.MustPlan(t, "B1", "b", idB, events.Offsets{0: 50, 1: 50}))
	r := startDaemon(t, c, fastOptions(t, ctlA, ctlB)...)
	srv := httptest.NewServer(r.d.Handler())
	defer srv.Close()
	kafkatest.Eventually(t, 20*time.Second, "ready", func() bool { return do(t, "GET", srv.URL+"/readyz", "").code == 200 })

	a := do(t, "POST", srv.URL+"/v1/validate", marker("b", idB, events.Offsets{0: 20, 1: 60}))
	var res gate.Verdict
	a.decode(t, &res)
	if a.code != 409 || res.ControlTopic != ctlB || *res.Boundary != 50 {
		t.Fatalf("validate of b's markers: %d %s", a.code, a.body)
	}
	a = do(t, "POST", srv.URL+"/v1/validate", marker("c", idB, events.Offsets{0: 20}))
	if a.code != 400 || !strings.Contains(a.body, "controlTopic") {
		t.Fatalf("markers no served control topic governs: %d %s", a.code, a.body)
	}
	// Both operations are finished: one replica owns both control topics.
	kafkatest.Eventually(t, 20*time.Second, "both APPLIED", func() bool {
		var ws report.WorkerStatus
		do(t, "GET", srv.URL+"/v1/status", "").decode(t, &ws)
		n := 0
		for _, ts := range ws.ControlTopics {
			if len(ts.Operations) == 1 && ts.Operations[0].State == fsm.Applied && ts.Owned {
				n++
			}
		}
		return n == 2
	})
}

// A page added with WithPage takes the paths the API does not serve, and
// the API keeps its own.
func TestWithPageServesNextToTheAPI(t *testing.T) {
	d, err := New(&worker.Cluster{}, WithControlTopics("a.kcleanup"),
		WithPage(func(d *Daemon) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte("page of " + d.WorkerStatus().ControlTopics[0].ControlTopic))
			})
		}, "GET /{$}"))
	if err != nil {
		t.Fatal(err)
	}
	h := d.Handler()
	for path, want := range map[string]string{"/": "page of a.kcleanup", "/healthz": "ok\n"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != 200 || rec.Body.String() != want {
			t.Errorf("GET %s: %d %q, want 200 %q", path, rec.Code, rec.Body.String(), want)
		}
	}
}

// A known path asked with the wrong method is a 405 naming the methods it
// takes, never a 404 that reads as "no such endpoint"; an unknown path is a 404.
func TestWrongMethodIsMethodNotAllowed(t *testing.T) {
	d, err := New(&worker.Cluster{}, WithControlTopics("a.kcleanup"))
	if err != nil {
		t.Fatal(err)
	}
	h := d.Handler()
	for _, c := range []struct {
		method, path string
		code         int
		allow        string
	}{
		{http.MethodGet, "/v1/validate", 405, "POST"},
		{http.MethodPut, "/v1/validate", 405, "POST"},
		{http.MethodPost, "/v1/status", 405, "GET, HEAD"},
		{http.MethodPost, "/healthz", 405, "GET, HEAD"},
		{http.MethodDelete, "/readyz", 405, "GET, HEAD"},
		{http.MethodPost, "/metrics", 405, "GET, HEAD"},
		{http.MethodGet, "/v1/nope", 404, ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		if rec.Code != c.code || rec.Header().Get("Allow") != c.allow {
			t.Errorf("%s %s: %d Allow %q, want %d Allow %q", c.method, c.path, rec.Code, rec.Header().Get("Allow"), c.code, c.allow)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://worker:9308/v1/validate", nil))
	var e apiError
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || !strings.Contains(e.Error, "POST") ||
		len(e.Hints) != 1 || !strings.Contains(e.Hints[0], "curl -s -X POST --data-binary @markers.json http://worker:9308/v1/validate") {
		t.Fatalf("GET /v1/validate says how to ask? %s", rec.Body)
	}
}

// TestValidatePinFor: POST /v1/validate?pinFor= pins what it allows, on
// the worker's live view, and the verdict names the pin; the pin is on the
// control topic (a later plan above it is refused by the fold); a refused
// answer writes no pin; a bad pinFor is a bad request.
func TestValidatePinFor(t *testing.T) {
	tokens := writeFile(t, t.TempDir(), "tokens.csv", aliceToken+",alice\n")
	f := newAppliedFixture(t, WithHTTPAuth(authed(t, httpauth.Config{TokenFile: tokens})))
	bearer := []string{"Authorization", "Bearer " + aliceToken}
	a := send(t, http.DefaultClient, "POST", f.validate+"?pinFor=30m", marker("action-state", f.id, events.Offsets{0: 160, 1: 130}), bearer...)
	var res gate.Verdict
	a.decode(t, &res)
	if a.code != 200 || !res.Allowed || res.PinID == "" || res.PinExpires == nil {
		t.Fatalf("%d %s", a.code, a.body)
	}
	kafkatest.Eventually(t, 20*time.Second, "the pin in /v1/status", func() bool {
		return strings.Contains(do(t, "GET", f.url+"/v1/status", "").body, res.PinID)
	})
	refused := send(t, http.DefaultClient, "POST", f.validate+"?pinFor=30m", marker("action-state", f.id, events.Offsets{0: 100, 1: 130}), bearer...)
	var r gate.Verdict
	refused.decode(t, &r)
	if refused.code != 409 || r.PinID != "" {
		t.Fatalf("refused: %d %s", refused.code, refused.body)
	}
	if bad := send(t, http.DefaultClient, "POST", f.validate+"?pinFor=soon", marker("action-state", f.id, events.Offsets{0: 160, 1: 130}), bearer...); bad.code != 400 {
		t.Fatalf("bad pinFor: %d %s", bad.code, bad.body)
	}
}
