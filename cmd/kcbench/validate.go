package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/worker"
	"github.com/kcleanup/kcleanup/worker/daemon"
)

// validate is B6: the recovery gate's throughput with the physical check on
// (every request reads the control topic to its end and asks the cluster for
// the control topic's settings and the data topic's live ID, log starts and
// high watermarks), through POST /v1/validate on an in-process worker, and
// through the library call `kcleanup validate` makes. The control-topic read
// alone, the gate's cost before the physical check, is the reference. It
// reports; it asserts nothing.
// validateRow is B7's subject for what kcleanup validate runs (goals.go reads it).
const validateRow = "worker.Cluster.Validate (what kcleanup validate runs, in process)"

func (b *bencher) validate(ctx context.Context) error {
	const partitions = 10
	requests := 1000
	if b.cfg.quick {
		requests = 200
	}
	data := b.topic("validate")
	control := data + ".kcleanup"
	b.topics = append(b.topics, control)
	if _, err := createTopic(ctx, b.cl, data, partitions, b.dataTopicConfigs()); err != nil {
		return err
	}
	if err := produceData(ctx, b.cfg.bootstrap, data, partitions, 1000); err != nil {
		return err
	}
	if _, err := createTopic(ctx, b.cl, control, 1, worker.ControlTopicConfigs(b.replication())); err != nil {
		return err
	}
	c, err := worker.Connect(seeds(b.cfg.bootstrap))
	if err != nil {
		return err
	}
	defer c.Close()
	info, err := c.TopicMetadata(ctx, data)
	if err != nil {
		return err
	}
	at := func(off int64) events.Offsets {
		o := events.Offsets{}
		for p := int32(0); p < partitions; p++ {
			o[p] = off
		}
		return o
	}
	plan, err := events.BuildPlan("chk-b6", []events.Marker{{Topic: data, TopicID: info.ID, Offsets: at(500)}})
	if err != nil {
		return err
	}
	proj, err := c.Project(ctx, control)
	if err != nil {
		return err
	}
	defer proj.Close()
	if _, err := c.Apply(ctx, proj, plan, worker.Options{Actor: "kcbench/b6"}); err != nil {
		return errors.Wrap(err, "apply the B6 plan")
	}
	markers := []events.Marker{{Topic: data, TopicID: info.ID, Offsets: at(600)}}
	body := string(markers[0].Encode())

	d, err := daemon.New(c, daemon.WithControlTopics(control), daemon.WithBootstrap(b.cfg.bootstrap),
		daemon.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		return err
	}
	dctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(dctx) }()
	defer func() { stop(); <-done }()
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	if err := waitReady(ctx, srv.URL); err != nil {
		return err
	}

	ask := func() error {
		resp, err := http.Post(srv.URL+"/v1/validate", "application/json", strings.NewReader(body))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			return errors.Newf("/v1/validate answered %d for an allowed recovery point", resp.StatusCode)
		}
		return nil
	}
	library := func() error {
		v := c.Validate(ctx, markers, worker.ValidateOptions{ControlTopic: control, Bootstrap: b.cfg.bootstrap})
		if !v.Allowed {
			return errors.Newf("Validate refused an allowed recovery point: %s", v.Message)
		}
		return nil
	}
	catchUp := func() error { return proj.CatchUp(ctx) }

	subjects := []struct {
		name    string
		clients int
		call    func() error
	}{
		{"POST /v1/validate, 1 client", 1, ask},
		{"POST /v1/validate, 8 clients", 8, ask},
		{validateRow, 1, library},
		{"control topic read to its end only (the gate before the physical check)", 1, catchUp},
	}
	c6 := fmt.Sprintf("%d requests, %d partitions", requests, partitions)
	b.logf("B7 validate: %s, %d runs", c6, b.cfg.runs)
	rows := make([]Row, len(subjects))
	for i, s := range subjects {
		var runs []float64
		for r := 0; r < b.cfg.runs; r++ {
			secs, err := timeCalls(requests, s.clients, s.call)
			if err != nil {
				return errors.Wrap(err, s.name)
			}
			runs = append(runs, secs)
		}
		rows[i] = Row{Bench: "B7 validate", Case: c6, Subject: s.name, RateUnit: "requests/s"}
		rows[i].setRuns(runs)
		if rows[i].Median > 0 {
			rows[i].Rate = float64(requests) / rows[i].Median
			rows[i].Note = fmt.Sprintf("%.2f ms per request", rows[i].Median/float64(requests)*1000)
		}
	}
	for i := range rows[:3] {
		rows[i].Ratios = []Ratio{{"control-topic read only", pairedRatio(rows[i].Runs, rows[3].Runs)}}
	}
	b.add(rows...)
	b.note("B7: each /v1/validate request takes its control topic's projection exclusively, so concurrent requests for one control topic queue; the physical check's round trips run in parallel with the control topic's")
	return nil
}

// timeCalls makes n calls over the given number of clients and returns the
// seconds they took together.
func timeCalls(n, clients int, call func() error) (float64, error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	next := make(chan struct{}, n)
	for i := 0; i < n; i++ {
		next <- struct{}{}
	}
	close(next)
	began := time.Now()
	for i := 0; i < clients; i++ {
		wg.Go(func() {
			for range next {
				if err := call(); err != nil {
					mu.Lock()
					first = cmpOr(first, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(began).Seconds(), first
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// waitReady polls /readyz until the worker has read its control topic.
func waitReady(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.New("the B6 worker never became ready")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
