package clustertest_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/worker/daemon"
)

// TestWipedBrokerReReplicates: after an APPLIED, a follower of the control topic is stopped,
// its data deleted and started again: it re-replicates both topics, serves the data topic's log
// start the APPLIED reported, and the control topic reads the same before and after. A worker
// serves POST /v1/validate all along: every request is answered, a recovery point below the
// boundary is never allowed, and one above it is allowed while the broker is away or catching up.
func TestWipedBrokerReReplicates(t *testing.T) {
	s := newScene(t)
	s.MustKcleanup(s.K.Bootstrap, "init", "--topic", s.Topic)
	s.waitISR(s.Ctl, 3)
	s.waitISR(s.Topic, 3)
	p, file := s.PlanFile("rp-1", 100)
	s.MustKcleanup(s.K.Bootstrap, "apply", file)
	_, logStart := s.Operation(p.PlanID)
	before := s.controlRecords()

	r := s.partition(s.Ctl)
	victim := r.Replicas[0]
	if victim == r.Leader {
		victim = r.Replicas[1]
	}
	gate := s.serveValidation()
	gate.mark()
	s.K.Stop(t, victim)
	s.K.Wipe(t, victim)
	s.K.Start(t, victim)
	s.waitISR(s.Ctl, 3)
	s.waitISR(s.Topic, 3)
	gate.stop()
	kafkatest.Eventually(t, time.Minute, fmt.Sprintf("wiped broker %d serves log start %d", victim, logStart[0]), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got, err := s.K.LogStartOn(ctx, victim, s.Topic, 0)
		return err == nil && got == logStart[0]
	})
	if after := s.controlRecords(); !reflect.DeepEqual(before, after) {
		t.Errorf("the control topic reads differently after broker %d was wiped:\nbefore %d records, after %d", victim, len(before), len(after))
	}
	s.Check()
}

// controlRecords reads the whole control topic.
func (s *scene) controlRecords() []projector.Record {
	s.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	end, err := s.Adm.ListEndOffsets(ctx, s.Ctl)
	if err != nil {
		s.T.Fatal(err)
	}
	o, _ := end.Lookup(s.Ctl, 0)
	recs, err := workertest.ReadControl(ctx, s.C, s.Ctl, o.Offset)
	if err != nil {
		s.T.Fatal(err)
	}
	return recs
}

// validationPoll is a worker serving POST /v1/validate, asked every 100 ms for a recovery point
// below the boundary and one above it, until stop.
type validationPoll struct {
	s    *scene
	done chan struct{}
	wg   sync.WaitGroup

	mu        sync.Mutex
	down      bool           // from the victim's stop on (mark)
	answers   map[string]int // "below 409", "above 200", ...
	aboveDown int            // allowed above since the victim's stop
	failures  []string
}

func (s *scene) serveValidation() *validationPoll {
	s.T.Helper()
	d, err := daemon.New(s.C, daemon.WithControlTopics(s.Ctl), daemon.WithGroup("kcleanup-"+s.Topic+"-wipe"),
		daemon.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		s.T.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = d.Run(ctx) }()
	s.T.Cleanup(func() { cancel(); <-ran })
	srv := httptest.NewServer(d.Handler())
	s.T.Cleanup(srv.Close)
	below := events.Marker{Topic: s.Topic, TopicID: s.ID, Offsets: events.Offsets{0: 50}}.Encode()
	above := events.Marker{Topic: s.Topic, TopicID: s.ID, Offsets: events.Offsets{0: 150}}.Encode()
	ask := func(body []byte) (int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/validate", bytes.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	kafkatest.Eventually(s.T, time.Minute, "the worker allows a recovery point above the boundary", func() bool {
		code, err := ask(above)
		return err == nil && code == http.StatusOK
	})
	p := &validationPoll{s: s, done: make(chan struct{}), answers: map[string]int{}}
	p.wg.Go(func() {
		for {
			select {
			case <-p.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			for _, q := range []struct {
				name string
				body []byte
			}{{"below", below}, {"above", above}} {
				code, err := ask(q.body)
				p.mu.Lock()
				switch {
				case err != nil:
					p.failures = append(p.failures, fmt.Sprintf("%s: no answer: %v", q.name, err))
				case q.name == "below" && code == http.StatusOK:
					p.failures = append(p.failures, "below the boundary: ALLOWED")
				case code != http.StatusOK && code != http.StatusConflict && code != http.StatusServiceUnavailable:
					p.failures = append(p.failures, fmt.Sprintf("%s: HTTP %d, not a verdict", q.name, code))
				case q.name == "above" && code == http.StatusOK && p.down:
					p.aboveDown++
				}
				p.answers[fmt.Sprintf("%s %d", q.name, code)]++
				p.mu.Unlock()
			}
		}
	})
	return p
}

// mark says the victim is about to stop.
func (p *validationPoll) mark() {
	p.mu.Lock()
	p.down = true
	p.mu.Unlock()
}

// stop ends the poll and fails the test on what it saw.
func (p *validationPoll) stop() {
	t := p.s.T
	t.Helper()
	time.Sleep(300 * time.Millisecond) // a request or two after the ISR is full again
	close(p.done)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Logf("validation while a broker was wiped: %v; allowed above the boundary %d time(s) from its stop until its ISR was full again", p.answers, p.aboveDown)
	for _, f := range p.failures {
		t.Error(f)
	}
	if p.aboveDown == 0 {
		t.Error("the worker never allowed a recovery point above the boundary from the broker's stop until it was back in sync")
	}
}
