package main

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/report"
)

// opPin runs kcleanup pin for the recovery point with offsets and returns
// the process's answer and, when it wrote one, the pin document.
func (e *opEnv) pin(t *testing.T, topic, id, rp string, offsets events.Offsets, extra ...string) (int, pinResult, string) {
	t.Helper()
	m := opTestMarkers(t, t.TempDir(), rp+".markers.json", events.Marker{Topic: topic, TopicID: id, Offsets: offsets})
	code, stdout, stderr := e.run(t, append([]string{"-o", "json", "pin", "--markers", m, "--recovery-point", rp, "--reason", "test " + rp}, extra...)...)
	var doc pinResult
	if stdout != "" {
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("pin -o json: %v\n%s", err, stdout)
		}
	}
	return code, doc, stderr
}

// TestPinRefusesPlansAboveItUntilUnpinned: a pinned rollback point makes
// apply refuse every later plan above it, with the pin named and how to
// unpin, writing no COMMITTED and deleting nothing; status lists the pin;
// after unpin the same plan applies.
func TestPinRefusesPlansAboveItUntilUnpinned(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 2, 200, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	dir := t.TempDir()
	_, pathA := opTestPlan(t, dir, "chk-1", topic, id, events.Offsets{0: 50, 1: 50})
	if code, _, stderr := e.run(t, "apply", pathA); code != exitOK {
		t.Fatalf("apply chk-1: exit %d\n%s", code, stderr)
	}

	code, pin, stderr := e.pin(t, topic, id, "sp-7", events.Offsets{0: 100, 1: 120}, "--for", "14d")
	if code != exitOK || pin.State != projector.PinActive || pin.ControlTopic != control || pin.Expires == nil {
		t.Fatalf("pin: exit %d %+v\n%s", code, pin, stderr)
	}
	st := e.status(t, control)
	if len(st.Pins) != 1 || st.Pins[0].PinID != pin.PinID || st.Pins[0].State != projector.PinActive {
		t.Fatalf("status pins: %+v", st.Pins)
	}

	planB, pathB := opTestPlan(t, dir, "chk-2", topic, id, events.Offsets{0: 150, 1: 100})
	before := e.snapshot(t, topic, control)
	code, _, stderr = e.run(t, "apply", pathB)
	opWantFailure(t, code, stderr, exitError, "plan "+planB.PlanID+" is above pin "+pin.PinID+" on partition 0",
		"recovery point sp-7", "kcleanup unpin "+pin.PinID)
	e.assertUnchanged(t, topic, control, before)

	code, stdout, stderr := e.run(t, "-o", "json", "unpin", pin.PinID, "--control-topic", control, "--reason", "release 42 is healthy")
	if code != exitOK || !strings.Contains(stdout, `"state": "unpinned"`) {
		t.Fatalf("unpin: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, _, stderr := e.run(t, "apply", pathB); code != exitOK {
		t.Fatalf("apply chk-2 after unpin: exit %d\n%s", code, stderr)
	}
	if got := e.logStarts(t, topic); !got.Equal(planB.Offsets) {
		t.Errorf("log starts %v, want %v", got, planB.Offsets)
	}
	// history shows both pin records with what the log made of them.
	code, stdout, stderr = e.run(t, "history", "--control-topic", control)
	for _, want := range []string{"PINNED", "UNPINNED", "pinned " + pin.PinID + " from sp-7: offsets 0=100 1=120", "unpinned " + pin.PinID + " (recovery point sp-7): release 42 is healthy"} {
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("history lacks %q (exit %d):\n%s\n%s", want, code, stdout, stderr)
		}
	}
}

// TestPinAfterACommitAboveItIsVoid: a pin whose recovery point a commit
// already condemned protects nothing there; pin says so (exit 3), partial
// when some partitions are still protected.
func TestPinAfterACommitAboveItIsVoid(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 2, 200, opGoodDataConfigs())
	_, path := opTestPlan(t, t.TempDir(), "chk-1", topic, id, events.Offsets{0: 150, 1: 50})
	if code, _, stderr := e.run(t, "apply", path); code != exitOK {
		t.Fatalf("apply: exit %d\n%s", code, stderr)
	}
	code, pin, stderr := e.pin(t, topic, id, "sp-old", events.Offsets{0: 100, 1: 40})
	opWantFailure(t, code, stderr, exitRefused, "is VOID", "partition 0 (boundary 150", "partition 1 (boundary 50")
	if pin.State != projector.PinVoid || len(pin.Void) != 2 {
		t.Errorf("void pin: %+v", pin)
	}
	code, pin, stderr = e.pin(t, topic, id, "sp-mid", events.Offsets{0: 100, 1: 80})
	opWantFailure(t, code, stderr, exitRefused, "is PARTIAL", "partition 0 (boundary 150")
	if pin.State != projector.PinPartial || len(pin.Void) != 1 || pin.Void[0].Partition != 0 {
		t.Errorf("partial pin: %+v", pin)
	}
}

// TestPinRacingACommitFromTwoProcesses runs `pin` and `apply --no-wait` of
// a plan above it in separate processes: started together (two rounds),
// and one after the other in both orders, so that both orders happen: the
// log decides, and every reader agrees with both processes. Either the pin
// landed first (pin exit 0, apply refused naming it, no COMMITTED
// accepted, nothing deleted) or the commit did (apply exit 0, the pin void
// on what it condemned, exit 3); a fresh fold of the control topic says
// the same as each process, twice.
func TestPinRacingACommitFromTwoProcesses(t *testing.T) {
	e := opTestEnv(t)
	opTestBinary(t) // build before the race starts
	orders := map[string]int{}
	for round := 0; round < 4; round++ {
		topic, id := e.governedTopic(t, 1, 200, opGoodDataConfigs())
		control := protocol.ControlTopicFor(topic)
		dir := t.TempDir()
		_, path0 := opTestPlan(t, dir, "chk-0", topic, id, events.Offsets{0: 10})
		if code, _, stderr := e.run(t, "apply", path0); code != exitOK {
			t.Fatalf("round %d: apply chk-0: exit %d\n%s", round, code, stderr)
		}
		plan, path := opTestPlan(t, dir, "chk-1", topic, id, events.Offsets{0: 150})
		markers := opTestMarkers(t, dir, "sp.markers.json", events.Marker{Topic: topic, TopicID: id, Offsets: events.Offsets{0: 100}})

		var p, a opProcess
		runPin := func() {
			p = e.runProcess(t, nil, "-o", "json", "pin", "--markers", markers, "--recovery-point", "sp", "--reason", "race")
		}
		runApply := func() { a = e.runProcess(t, nil, "apply", "--no-wait", path) }
		switch round {
		case 2:
			runApply()
			runPin()
		case 3:
			runPin()
			runApply()
		default:
			var wg sync.WaitGroup
			start := make(chan struct{})
			wg.Add(2)
			go func() { defer wg.Done(); <-start; runPin() }()
			go func() { defer wg.Done(); <-start; runApply() }()
			close(start)
			wg.Wait()
		}

		var doc pinResult
		if err := json.Unmarshal([]byte(p.stdout), &doc); err != nil {
			t.Fatalf("round %d: pin -o json: %v\n%s\n%s", round, err, p.stdout, p.stderr)
		}
		var readers []report.Status
		for range 2 {
			readers = append(readers, e.status(t, control))
		}
		for i, st := range readers {
			op := findOp(st, plan.PlanID)
			if len(st.Pins) != 1 || st.Pins[0].PinID != doc.PinID {
				t.Fatalf("round %d reader %d: pins %+v, the process wrote %s", round, i, st.Pins, doc.PinID)
			}
			switch {
			case p.code == exitOK && a.code == exitError:
				orders["pin first"]++
				// The pin landed before apply's check (refused in step 1: "above pin"), or between
				// its PLANNED and COMMITTED (the log rejects the COMMITTED as pinned): both are the
				// pin first, and either way the error names the pin.
				if !strings.Contains(a.stderr, "above pin "+doc.PinID) && !strings.Contains(a.stderr, "(reason pinned): pin "+doc.PinID) {
					t.Errorf("round %d: pin first, but apply's error names neither refusal for pin %s:\n%s", round, doc.PinID, a.stderr)
				}
				if st.Pins[0].State != projector.PinActive || op.State == fsm.Committed || op.State == fsm.Applied || !st.Boundary.Equal(events.Offsets{0: 10}) {
					t.Errorf("round %d reader %d: pin first, but the log says pin %s, plan %s, boundary %v", round, i, st.Pins[0].State, op.State, st.Boundary)
				}
			case p.code == exitRefused && a.code == exitOK:
				orders["commit first"]++
				if st.Pins[0].State != projector.PinVoid || !st.Boundary.Equal(plan.Offsets) || len(st.Pins[0].RejectedCommits) != 0 {
					t.Errorf("round %d reader %d: commit first, but the log says pin %s, boundary %v, rejected %v", round, i, st.Pins[0].State, st.Boundary, st.Pins[0].RejectedCommits)
				}
			default:
				t.Fatalf("round %d: pin exit %d, apply exit %d: want one to win\npin:\n%s\napply:\n%s", round, p.code, a.code, p.stderr, a.stderr)
			}
		}
		if e.logStarts(t, topic)[0] > 100 && p.code == exitOK {
			t.Errorf("round %d: records above the pin were deleted: log start %v", round, e.logStarts(t, topic))
		}
	}
	t.Logf("orders (per reader): %v", orders)
	if orders["pin first"] == 0 || orders["commit first"] == 0 {
		t.Errorf("both orders must have happened: %v", orders)
	}
}

func findOp(st report.Status, planID string) report.OperationStatus {
	for _, op := range st.Operations {
		if op.PlanID == planID {
			return op
		}
	}
	return report.OperationStatus{}
}

// TestPinExpires: a pin with --for protects until the time a COMMITTED
// carries is past its expiry; then the same plan applies.
func TestPinExpires(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 1, 200, opGoodDataConfigs())
	dir := t.TempDir()
	_, path0 := opTestPlan(t, dir, "chk-0", topic, id, events.Offsets{0: 10})
	if code, _, stderr := e.run(t, "apply", path0); code != exitOK {
		t.Fatalf("apply chk-0: exit %d\n%s", code, stderr)
	}
	code, pin, stderr := e.pin(t, topic, id, "sp", events.Offsets{0: 100}, "--for", "3s")
	if code != exitOK || pin.Expires == nil {
		t.Fatalf("pin: exit %d %+v\n%s", code, pin, stderr)
	}
	_, path := opTestPlan(t, dir, "chk-1", topic, id, events.Offsets{0: 150})
	code, _, stderr = e.run(t, "apply", path)
	opWantFailure(t, code, stderr, exitError, "above pin "+pin.PinID, "it expires at")
	// Wait for the expiry (a condition, not a timing assertion).
	for !time.Now().After(pin.Expires.Add(time.Second)) {
		time.Sleep(100 * time.Millisecond)
	}
	if code, _, stderr := e.run(t, "apply", path); code != exitOK {
		t.Fatalf("apply after the pin expired: exit %d\n%s", code, stderr)
	}
}

// TestValidatePinForUnderAConcurrentApply runs `validate --pin-for` and an
// apply of a plan above the recovery point in separate processes: started
// together (two rounds) and one after the other in both orders. Whenever
// validate answers ALLOWED, the apply was refused (the pin landed first)
// and nothing the recovery point needs is deleted; otherwise validate
// refuses (exit 3), the answer for the log as it then stood.
func TestValidatePinForUnderAConcurrentApply(t *testing.T) {
	e := opTestEnv(t)
	opTestBinary(t)
	answers := map[int]int{}
	for round := 0; round < 4; round++ {
		topic, id := e.governedTopic(t, 1, 200, opGoodDataConfigs())
		dir := t.TempDir()
		_, path0 := opTestPlan(t, dir, "chk-0", topic, id, events.Offsets{0: 10})
		if code, _, stderr := e.run(t, "apply", path0); code != exitOK {
			t.Fatalf("round %d: apply chk-0: exit %d\n%s", round, code, stderr)
		}
		_, path := opTestPlan(t, dir, "chk-1", topic, id, events.Offsets{0: 150})
		markers := opTestMarkers(t, dir, "restore.markers.json", events.Marker{Topic: topic, TopicID: id, Offsets: events.Offsets{0: 100}})

		var v, a opProcess
		runValidate := func() { v = e.runProcess(t, nil, "-o", "json", "validate", "--markers", markers, "--pin-for", "10m") }
		runApply := func() { a = e.runProcess(t, nil, "apply", path) }
		switch round {
		case 2:
			runApply()
			runValidate()
		case 3:
			runValidate()
			runApply()
		default:
			var wg sync.WaitGroup
			start := make(chan struct{})
			wg.Add(2)
			go func() { defer wg.Done(); <-start; runValidate() }()
			go func() { defer wg.Done(); <-start; runApply() }()
			close(start)
			wg.Wait()
		}
		answers[v.code]++
		var doc struct {
			Allowed bool   `json:"allowed"`
			PinID   string `json:"pinId"`
		}
		if err := json.Unmarshal([]byte(v.stdout), &doc); err != nil {
			t.Fatalf("round %d: validate -o json: %v\n%s\n%s", round, err, v.stdout, v.stderr)
		}
		start := e.logStarts(t, topic)[0]
		switch v.code {
		case exitOK:
			if !doc.Allowed || doc.PinID == "" {
				t.Errorf("round %d: exit 0 but %+v", round, doc)
			}
			opWantFailure(t, a.code, a.stderr, exitError, "pin "+doc.PinID) // refused before PLANNED ("above pin X") or its COMMITTED rejected by the log ("reason pinned): pin X")
			if start > 100 {
				t.Errorf("round %d: ALLOWED with a pin, yet the log start is %d, above the recovery point's 100", round, start)
			}
		case exitRefused:
			if a.code != exitOK || doc.Allowed {
				t.Errorf("round %d: validate refused, apply exit %d\n%s", round, a.code, a.stderr)
			}
		default:
			t.Fatalf("round %d: validate exit %d\n%s\n%s", round, v.code, v.stdout, v.stderr)
		}
	}
	t.Logf("validate exit codes: %v", answers)
	if answers[exitOK] == 0 || answers[exitRefused] == 0 {
		t.Errorf("both answers must have happened: %v", answers)
	}
}
