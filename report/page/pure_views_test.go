package page

import (
	"regexp"
	"testing"

	"github.com/kcleanup/kcleanup/internal/consoletest"
	"github.com/kcleanup/kcleanup/report"
)

// The page and the report load nothing from anywhere else.
func TestPagesReferToNothingOutside(t *testing.T) {
	ws, now := consoletest.FleetStatus(t)
	recs, _, _ := consoletest.Story(t)
	proj := consoletest.Projection(recs)
	external := regexp.MustCompile(`(?i)(src|href)\s*=\s*"?(https?:)?//|@import|url\(`)
	for name, v := range map[string]View{"console": FromWorker(ws, now), "report": FromLog(report.StatusOf(proj), proj.View.State.Audit())} {
		b, err := HTML(v, false)
		if err != nil {
			t.Fatal(err)
		}
		if m := external.Find(b); m != nil {
			t.Errorf("%s refers to something outside the page: %q", name, m)
		}
	}
}

// A mirror's state shows as the status document words it, whatever its
// shape (the Flink Agents mirror adds the field).
func TestMirrorShowsWhatTheStatusSays(t *testing.T) {
	if got := mirrorOf(report.TopicStatus{}); got != "" {
		t.Errorf("no mirror: %q, want nothing", got)
	}
	withMirror := struct {
		report.TopicStatus
		Mirror map[string]any `json:"mirror"`
	}{Mirror: map[string]any{"topic": "action-state.flink", "lagging": true, "boundary": map[string]int{"0": 150}}}
	if got, want := mirrorOf(withMirror), `boundary: {"0":150} · lagging: true · topic: action-state.flink`; got != want {
		t.Errorf("mirror %q, want %q", got, want)
	}
}
