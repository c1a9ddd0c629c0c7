package netfault_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/internal/clustertest/netfault"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/projector/invariant"
)

// EnvSoakDuration sets how long TestSoakUnderRandomNetworkFaults injects faults (a Go duration;
// `make soak DURATION=30m`). The default keeps it short in `make test`.
const EnvSoakDuration = "KCLEANUP_SOAK_DURATION"

// pinIDPattern finds the pin's ID in pin's output.
var pinIDPattern = regexp.MustCompile(`\b[0-9a-f]{16}\b`)

// TestSoakUnderRandomNetworkFaults: two workers (links A and B) serve the control topic while
// the CLI (link C) applies plans with rising boundaries, pins recovery points ahead of them and
// validates one below the last boundary it saw committed and one above; every few seconds a
// random fault hits a random link (all its brokers, or one). It counts faults, plans, pins and
// verdicts and fails on any violation: an ALLOWED below a boundary committed before the
// question, an invariant broken (I1-I6), or a committed plan not APPLIED within the liveness
// bound after the final heal.
func TestSoakUnderRandomNetworkFaults(t *testing.T) {
	duration := 40 * time.Second
	if v := os.Getenv(EnvSoakDuration); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive Go duration such as 30m", EnvSoakDuration, v)
		}
		duration = d
	}
	s := newScene(t)
	links := s.net.Links()
	s.startWorker("w1", links[0].Bootstrap)
	s.startWorker("w2", links[1].Bootstrap)
	cli := links[2]
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("soak for %s, seed %d", duration, seed)

	var faults atomic.Int64
	faultCounts := map[string]int{}
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		frng := rand.New(rand.NewPCG(uint64(seed), 1))
		all := netfault.Faults()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(2000+frng.IntN(3000)) * time.Millisecond):
			}
			s.net.HealAll(t)
			f, l := all[frng.IntN(len(all))], links[frng.IntN(len(links))]
			var nodes []int32
			where := "every broker"
			if frng.IntN(2) == 0 {
				n := kafkatest.Nodes[frng.IntN(len(kafkatest.Nodes))]
				nodes, where = []int32{n}, fmt.Sprintf("node %d", n)
			}
			f.Apply(t, l, nodes...)
			faults.Add(1)
			mu.Lock()
			faultCounts[f.Name]++
			mu.Unlock()
			t.Logf("fault: %s on %s, %s", f, l.Name, where)
		}
	})

	var plans []events.Plan
	counts := map[string]int{}
	violations := 0
	floor, boundary, end := int64(0), int64(0), int64(300)
	deadline := time.Now().Add(duration)
	for time.Now().Before(deadline) {
		if boundary+30 >= end {
			kafkatest.Produce(t, s.Cl, s.Topic, 0, 200)
			end += 200
		}
		boundary += 5 + rng.Int64N(10)
		// Now and then a pin just below the plan: the log must reject the plan's COMMITTED
		// (apply refuses it, nothing written); the pin is lifted afterwards.
		pinID := ""
		if rng.IntN(4) == 0 {
			pinAt := boundary - 2
			out, code, _ := s.Kcleanup(nil, cli.Bootstrap, "pin", "--markers", s.MarkersFile(pinAt), "--recovery-point",
				"pin-"+strconv.FormatInt(pinAt, 10), "--reason", "soak", "--timeout", "5s")
			counts["pin exit "+strconv.Itoa(code)]++
			if code == 0 {
				pinID = pinIDPattern.FindString(out)
			}
		}
		p, file := s.PlanFile("rp-"+strconv.FormatInt(boundary, 10), boundary)
		out, code, _ := s.Kcleanup(nil, cli.Bootstrap, "apply", file, "--no-wait", "--timeout", "5s")
		if pinID != "" && code == 0 {
			violations++
			t.Errorf("apply committed plan %d above pin %s that landed before it\n%s", boundary, pinID, out)
		}
		if pinID != "" { // lifted over the direct path: the faults are not this step's subject
			s.MustKcleanup(s.K.Bootstrap, "unpin", pinID, "--control-topic", s.Ctl, "--reason", "soak")
		}
		counts["apply exit "+strconv.Itoa(code)]++
		plans = append(plans, p)
		if code == 0 {
			floor = boundary
		} else if counts["apply exit "+strconv.Itoa(code)] <= 2 {
			t.Logf("apply exit %d:\n%s", code, out)
		}
		for _, tc := range []struct {
			name string
			at   int64
		}{{"below", floor - 3}, {"above", boundary + 10}} {
			if tc.at < 0 {
				continue
			}
			out, code, took := s.Kcleanup(nil, cli.Bootstrap, "validate", "--markers", s.MarkersFile(tc.at), "--timeout", "4s")
			counts[fmt.Sprintf("validate %s exit %d", tc.name, code)]++
			if tc.name == "below" && code == 0 {
				violations++
				t.Errorf("validate ALLOWED offset %d below the boundary %d committed before it asked\n%s", tc.at, floor, out)
			}
			if took > 4*time.Second+slack {
				violations++
				t.Errorf("validate took %s with --timeout 4s\n%s", took, out)
			}
		}
		time.Sleep(200 * time.Millisecond) // two cores shared with the brokers
	}
	close(stop)
	wg.Wait()
	s.net.HealAll(t)
	healed := time.Now()

	// Liveness: every plan the log committed is APPLIED within the bound.
	ctx, cancel := context.WithTimeout(context.Background(), liveness+time.Minute)
	defer cancel()
	var committed, pending int
	for {
		proj, err := s.C.Project(ctx, s.Ctl)
		if err != nil {
			t.Fatal(err)
		}
		committed, pending = 0, 0
		for _, p := range plans {
			op, ok := proj.State.Operation(p.PlanID)
			if !ok {
				continue
			}
			switch op.State {
			case fsm.Committed, fsm.Deleting:
				committed++
				pending++
			case fsm.Applied:
				committed++
			}
		}
		proj.Close()
		if pending == 0 || time.Since(healed) > liveness+30*time.Second {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	took := time.Since(healed)
	if pending > 0 || took > liveness {
		violations++
		t.Errorf("%d of %d committed plans not APPLIED %s after the heal (bound %s)", pending, committed, took, liveness)
	}
	errs := workertest.CheckInvariants(ctx, s.C, s.Ctl, invariant.InitialLogStart(events.Offsets{0: 0}))
	for _, err := range errs {
		violations++
		t.Errorf("invariant: %v", err)
	}
	t.Logf("soak %s: %d faults %v; %d plans (%d committed, all APPLIED %s after the heal); counts %v; violations %d",
		duration, faults.Load(), faultCounts, len(plans), committed, took.Round(time.Millisecond), counts, violations)
}
