package console

import (
	"bytes"
	"context"
	"image/png"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/consoletest"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
	"github.com/kcleanup/kcleanup/report/page"
	"github.com/kcleanup/kcleanup/topicconfig"
	"github.com/kcleanup/kcleanup/worker"
	"github.com/kcleanup/kcleanup/worker/daemon"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

// chromium finds Debian's headless Chromium (`make chromium` installs it).
// Under CI a missing browser fails the test: it is never skipped there.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KCLEANUP_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium found (KCLEANUP_CHROMIUM, chromium or chromium-browser on PATH): run `make chromium` (apt-get install -y chromium)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browser starts a headless Chromium for the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox cannot start
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancelT)
	return ctx
}

// screenshot saves a full-page PNG in KCLEANUP_SCREENSHOTS (a folder, such
// as docs/images) or the test's temporary folder, and checks it is one.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	img, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(img))
	if err != nil || cfg.Width < 300 || cfg.Height < 300 {
		t.Fatalf("screenshot %s is not a page: %v %+v", name, err, cfg)
	}
	dir := os.Getenv("KCLEANUP_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%dx%d)", path, cfg.Width, cfg.Height)
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// A worker's console on the real broker, in a real browser: a plan applied
// while the page is open appears, APPLIED, without a reload; the page is
// usable from the keyboard and fits a small screen.
func TestBrowserShowsAPlanAppliedWhileThePageIsOpen(t *testing.T) {
	b := kafkatest.Bootstrap(t)
	ctx := browser(t)
	cl := kafkatest.Client(t, b)
	topic := kafkatest.NewTopic(t, cl, "action-state", 2, map[string]string{
		"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1"})
	kafkatest.Produce(t, cl, topic, 0, 200)
	kafkatest.Produce(t, cl, topic, 1, 200)
	ctl := protocol.ControlTopicFor(topic)
	kafkatest.CreateTopic(t, cl, ctl, 1, topicconfig.CreateSettings())
	tctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := kafkatest.TopicIDUncached(tctx, cl, topic)
	if err != nil {
		t.Fatal(err)
	}
	c, err := worker.Connect(kgo.SeedBrokers(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)

	d, err := daemon.New(c, daemon.WithControlTopics(ctl), daemon.WithPollInterval(100*time.Millisecond),
		daemon.WithGroupTimings(6*time.Second, time.Second, 10*time.Second), Mount(),
		daemon.WithLogger(slog.New(slog.NewTextHandler(testLog{t}, nil))))
	if err != nil {
		t.Fatal(err)
	}
	dctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(dctx) }()
	t.Cleanup(func() { stop(); <-done })
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)

	do(t, ctx, "open the console", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible("#main"))
	// A mark on this document: a reload would lose it.
	eval[bool](t, ctx, `window.kcleanupTestMark = true`)
	if n := eval[int](t, ctx, `document.querySelectorAll("li.lane").length`); n != 0 {
		t.Fatalf("%d operations shown before any plan", n)
	}

	plan, err := events.BuildPlan("C1", []events.Marker{{Topic: topic, TopicID: id, Offsets: events.Offsets{0: 150, 1: 120}}})
	if err != nil {
		t.Fatal(err)
	}
	proj, err := c.Project(tctx, ctl, projector.KeepAudit())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(tctx, proj, plan, worker.Options{Actor: "test/apply"}); err != nil {
		t.Fatalf("apply: %+v", err)
	}
	proj.Close()

	lane := `li.lane[data-plan="` + plan.PlanID + `"][data-state="APPLIED"]`
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := chromedp.Do(wctx, chromedp.WaitVisible(lane)); err != nil {
		t.Fatalf("the applied plan did not appear on the open page within 30s: %v", err)
	}
	if !eval[bool](t, ctx, `window.kcleanupTestMark === true`) {
		t.Fatal("the page was reloaded: the plan must appear without one")
	}
	text := eval[string](t, ctx, `document.querySelector('[data-partition="0"]').innerText`)
	for _, want := range []string{"log start\n150", "boundary\n150"} {
		if !bytes.Contains([]byte(text), []byte(want)) {
			t.Errorf("partition 0's bar says %q, want %q", text, want)
		}
	}
	if got := eval[string](t, ctx, `document.querySelector('`+lane+` .lane-facts').innerText`); !bytes.Contains([]byte(got), []byte("offsets 0=150 1=120")) {
		t.Errorf("the lane says %q, want the offsets as the CLI writes them", got)
	}
	// The fleet, as the group coordinator describes it: this replica owns the topic.
	if err := chromedp.Do(wctx, chromedp.Poll[chromedp.Void](`(document.getElementById("fleet")||{innerText:""}).innerText.includes("(this replica)")`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Errorf("the fleet does not show this replica: %v", err)
	}
	if got := eval[string](t, ctx, `document.getElementById("fleet").innerText`); !bytes.Contains([]byte(got), []byte(ctl)) {
		t.Errorf("the fleet does not say this replica owns %s: %q", ctl, got)
	}
	screenshot(t, ctx, "console-live.png")

	// Keyboard: the first Tab reaches the skip link, and every operation
	// takes the focus.
	do(t, ctx, "press Tab", chromedp.KeyEvent("\t"))
	if cls := eval[string](t, ctx, `document.activeElement.className`); cls != "skip" {
		t.Errorf("the first Tab focused %q, want the skip link", cls)
	}
	if n := eval[int](t, ctx, `[...document.querySelectorAll("li.lane")].filter(e => e.tabIndex !== 0).length`); n != 0 {
		t.Errorf("%d operations cannot take the keyboard focus", n)
	}
	// A focused lane keeps the focus across an update.
	eval[bool](t, ctx, `document.querySelector('`+lane+`').focus(), true`)
	if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`document.getElementById("live").textContent.startsWith("live: checked")`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Errorf("the page did not poll: %v", err)
	}
	if id := eval[string](t, ctx, `document.activeElement.dataset.plan || ""`); id != plan.PlanID {
		t.Errorf("after an update the focus is on %q, want the lane it was on", id)
	}

	// A small screen: nothing wider than the viewport.
	do(t, ctx, "phone viewport", chromedp.EmulateViewport(390, 844))
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
		t.Errorf("on a 390 px screen the page is %d px too wide", w)
	}
	screenshot(t, ctx, "console-live-small.png")
}

// testLog sends the daemon's log to the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// The views of the fixed story (the golden files' projections) in a real
// browser, for docs/images (make screenshots): the console of a replica
// with a blocked operation, rejected records and repairs, on a wide and a
// small screen, and the audit report. The report opens from a file, as an
// auditor opens it, with no server.
func TestScreenshotsOfEachView(t *testing.T) {
	ctx := browser(t)
	ws, now := consoletest.FleetStatus(t)
	srv := httptest.NewServer(Handler(func(bool) report.WorkerStatus { return ws }))
	t.Cleanup(srv.Close)
	_ = now // the handler uses the real clock: the fixture's pending plan shows as blocked either way
	do(t, ctx, "open the console", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible("#main"))
	screenshot(t, ctx, "console.png")
	do(t, ctx, "phone viewport", chromedp.EmulateViewport(390, 844))
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
		t.Errorf("on a 390 px screen the console is %d px too wide", w)
	}
	screenshot(t, ctx, "console-small.png")

	recs, _, _ := consoletest.Story(t)
	proj := consoletest.Projection(recs)
	file := filepath.Join(t.TempDir(), "report.html")
	var b bytes.Buffer
	if err := page.Render(&b, page.FromLog(report.StatusOf(proj), proj.View.State.Audit())); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "open the report", chromedp.EmulateViewport(1280, 900), chromedp.Navigate("file://"+file), chromedp.WaitVisible("#main"))
	if n := eval[int](t, ctx, `document.querySelectorAll("li.lane").length`); n != 3 {
		t.Errorf("the report shows %d operations, want the story's 3", n)
	}
	// The log has no high watermark: every bar ends in a visible part that
	// is not known, neither hatched "deleted" nor coloured "kept".
	if ok := eval[bool](t, ctx, `[...document.querySelectorAll(".bar")].every(bar => {
		const u = bar.querySelector(".seg.unknown"), gone = bar.querySelector(".seg.gone");
		return u && u.getBoundingClientRect().width > 0 && getComputedStyle(u).backgroundImage === "none" &&
			gone.getBoundingClientRect().width < bar.getBoundingClientRect().width;
	})`); !ok {
		t.Errorf("a bar of the report is hatched or coloured where the log has no high watermark")
	}
	screenshot(t, ctx, "report.png")
}
