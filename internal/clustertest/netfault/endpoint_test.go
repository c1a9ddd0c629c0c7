package netfault_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/clustertest/netfault"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/worker"
	"github.com/kcleanup/kcleanup/worker/daemon"
)

// endpointRead is the worker's --read-timeout in this test; a request may wait for a refresh
// in flight (one read) and then read once itself, hence the bound of two reads plus slack.
const endpointRead = 4 * time.Second

// TestValidateEndpointUnderNetworkFaults: a worker whose every byte crosses link A serves POST
// /v1/validate. Under every fault on link A (every broker, and a partition from the control
// topic's leader only and from the data topic's leader only), after a new, higher boundary was
// committed over the direct path (the worker's view of the log is now old), each request is
// answered within two reads plus slack, never 200 (ALLOWED) below the new boundary, 200 or 503
// (cannot tell) above it, never another status; after the heal the one above is ALLOWED again.
// Fails with a worker that answers from its cached view when the refresh fails.
func TestValidateEndpointUnderNetworkFaults(t *testing.T) {
	s := newScene(t)
	_, file := s.PlanFile("rp-100", 100)
	s.MustKcleanup(s.K.Bootstrap, "apply", file, "--timeout", "60s")
	link := s.net.Links()[0]
	c, err := worker.Connect(kgo.SeedBrokers(strings.Split(link.Bootstrap, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	d, err := daemon.New(c, daemon.WithControlTopics(s.Ctl), daemon.WithGroup("kcleanup-"+s.Topic+"-endpoint"),
		daemon.WithReadTimeout(endpointRead), daemon.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-ran })
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	marker := func(o int64) []byte {
		return events.Marker{Topic: s.Topic, TopicID: s.ID, Offsets: events.Offsets{0: o}}.Encode()
	}
	boundary := int64(100)
	above := marker(280)
	ask := func(body []byte) (int, string, time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/validate", bytes.NewReader(body))
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", time.Since(start), err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), time.Since(start), nil
	}
	kafkatest.Eventually(t, time.Minute, "the worker allows a recovery point above the boundary", func() bool {
		code, _, _, err := ask(above)
		return err == nil && code == http.StatusOK
	})
	ctlLeader, dataLeader := s.separateLeaders()
	type target struct {
		name  string
		nodes []int32
	}
	for _, f := range netfault.Faults() {
		ts := []target{{"every broker", nil}}
		if f.Name == netfault.Partition.Name {
			ts = append(ts, target{"the control topic's leader only", []int32{ctlLeader}},
				target{"the data topic's leader only", []int32{dataLeader}})
		}
		for _, tg := range ts {
			f.Apply(t, link, tg.nodes...)
			// A higher boundary, committed where the worker cannot see it (or only slowly).
			boundary += 15
			_, file := s.PlanFile(fmt.Sprintf("rp-%d", boundary), boundary)
			s.MustKcleanup(s.K.Bootstrap, "apply", file, "--no-wait", "--timeout", "60s")
			below := marker(boundary - 5)
			for _, q := range []struct {
				name    string
				body    []byte
				allowed bool
			}{{"below", below, false}, {"above", above, true}} {
				code, body, took, err := ask(q.body)
				t.Logf("%s on %s, %s: HTTP %d in %s", f, tg.name, q.name, code, took.Round(time.Millisecond))
				switch {
				case err != nil:
					t.Errorf("%s on %s, %s: no answer after %s: %v", f, tg.name, q.name, took, err)
				case took > 2*endpointRead+slack:
					t.Errorf("%s on %s, %s: answered after %s, beyond two reads of %s plus slack", f, tg.name, q.name, took, endpointRead)
				case code == http.StatusOK && !q.allowed:
					t.Errorf("%s on %s: ALLOWED below the boundary\n%s", f, tg.name, body)
				case code != http.StatusOK && code != http.StatusServiceUnavailable && !(code == http.StatusConflict && !q.allowed):
					t.Errorf("%s on %s, %s: HTTP %d, not a verdict\n%s", f, tg.name, q.name, code, body)
				}
			}
			link.Heal(t)
			kafkatest.Eventually(t, time.Minute, "ALLOWED above the boundary after the heal", func() bool {
				code, _, _, err := ask(above)
				return err == nil && code == http.StatusOK
			})
		}
	}
	s.Check()
}
