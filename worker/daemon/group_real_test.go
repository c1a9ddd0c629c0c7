package daemon

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
)

// A worker whose session timeout the broker refuses (below
// group.min.session.timeout.ms, 6 s by default) is never admitted to the
// group: it must say so, not report ready while owning nothing. The same
// worker with the default session timeout is admitted and ready. Real
// broker: kfake does not enforce the session-timeout bounds.
func TestWorkerTheGroupRefusesIsNotReady(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Kafka broker")
	}
	c := workertest.Connect(t, kafkatest.Bootstrap(t))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ctl := fmt.Sprintf("group-refused-%d.kcleanup", time.Now().UnixNano())
	if _, err := c.CreateControlTopic(ctx, ctl, 1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = kadm.NewClient(c.Client()).DeleteTopic(context.Background(), ctl) })

	for _, tc := range []struct {
		name    string
		session time.Duration
		ready   bool
	}{
		{"refused session timeout", 2 * time.Second, false},
		{"default session timeout", DefaultSessionTimeout, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(c, WithControlTopics(ctl), WithGroup(ctl+"."+strings.ReplaceAll(tc.name, " ", "-")),
				WithGroupTimings(tc.session, 500*time.Millisecond, 0), WithPollInterval(100*time.Millisecond),
				WithShutdownGrace(time.Second), WithLogger(testLogger(t)))
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(d.Handler())
			defer srv.Close()
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- d.Run(runCtx) }()
			defer func() {
				stop()
				if err := <-done; err != nil {
					t.Errorf("Run: %v", err)
				}
			}()

			if tc.ready {
				kafkatest.Eventually(t, 30*time.Second, "ready", func() bool { return do(t, "GET", srv.URL+"/readyz", "").code == 200 })
				if m := do(t, "GET", srv.URL+"/metrics", "").body; !strings.Contains(m, "kcleanup_group_admitted 1\n") {
					t.Fatalf("metrics of an admitted replica:\n%s", m)
				}
				return
			}
			var a answer
			kafkatest.Eventually(t, 30*time.Second, "/readyz names the refusal", func() bool {
				a = do(t, "GET", srv.URL+"/readyz", "")
				return strings.Contains(a.body, "INVALID_SESSION_TIMEOUT")
			})
			var rd readiness
			a.decode(t, &rd)
			if a.code != 503 || rd.Ready || !strings.Contains(rd.Group, "--session-timeout") {
				t.Fatalf("/readyz of a refused replica: %d %s", a.code, a.body)
			}
			m := do(t, "GET", srv.URL+"/metrics", "").body
			if !strings.Contains(m, "kcleanup_group_admitted 0\n") || !strings.Contains(m, `kcleanup_group_errors_total{error="INVALID_SESSION_TIMEOUT"}`) {
				t.Fatalf("metrics of a refused replica:\n%s", m)
			}
			// It stays refused: a retry of the join does not make it ready.
			if a := do(t, "GET", srv.URL+"/readyz", ""); a.code != 503 {
				t.Fatalf("/readyz later: %d %s", a.code, a.body)
			}
		})
	}
}
