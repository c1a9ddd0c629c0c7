package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/protocol"
)

// TestSubmit appends PLANNED (creating the control topic first), then, on a second run, finds
// the plan there and writes nothing. The plan is not committed: recovery is not restricted and
// nothing is deleted.
func TestSubmit(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 2, 100, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	plan, path := opTestPlan(t, t.TempDir(), "chk-1", topic, id, events.Offsets{0: 40, 1: 50})

	code, stdout, stderr := e.run(t, "-o", "json", "submit", path)
	if code != exitOK {
		t.Fatalf("submit: exit %d\n%s", code, stderr)
	}
	var doc struct {
		SchemaVersion int       `json:"schemaVersion"`
		PlanID        string    `json:"planId"`
		ControlTopic  string    `json:"controlTopic"`
		State         fsm.State `json:"state"`
		Offset        int64     `json:"offset"`
		Outcome       string    `json:"outcome"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if doc.SchemaVersion != 1 || doc.PlanID != plan.PlanID || doc.ControlTopic != control || doc.State != fsm.Planned ||
		doc.Offset != 0 || doc.Outcome != "accepted" {
		t.Errorf("submit -o json: %+v", doc)
	}
	for _, f := range []string{"[planned] PLANNED " + plan.PlanID + " at control offset 0"} {
		if !strings.Contains(stderr, f) {
			t.Errorf("stderr lacks %q:\n%s", f, stderr)
		}
	}
	recs, _ := e.controlRecords(t, control)
	if len(recs) != 1 || recs[0].Key != events.Key(plan.PlanID, events.Planned) {
		t.Errorf("control records %+v, want one PLANNED", recs)
	}
	if got := e.logStarts(t, topic); !got.Equal(events.Offsets{0: 0, 1: 0}) {
		t.Errorf("submit moved log starts: %v", got)
	}
	if st := e.status(t, control); len(st.Boundary) != 0 {
		t.Errorf("submit set a boundary: %v", st.Boundary)
	}

	before := e.snapshot(t, topic, control)
	code, stdout, stderr = e.run(t, "submit", path)
	if code != exitOK || !strings.Contains(stderr, "is already on control topic "+control+" (PLANNED): nothing written") ||
		!strings.Contains(stdout, "next           kcleanup apply "+path) {
		t.Errorf("second submit: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	e.assertUnchanged(t, topic, control, before)
}

// TestSubmitControlTopicForAnotherIncarnation: a control topic that governs the topic's previous
// incarnation rejects a plan for the new one, naming both IDs.
func TestSubmitControlTopicForAnotherIncarnation(t *testing.T) {
	e := opTestEnv(t)
	topic, oldID := e.governedTopic(t, 1, 100, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	dir := t.TempDir()
	_, old := opTestPlan(t, dir, "chk-1", topic, oldID, events.Offsets{0: 10})
	if code, _, stderr := e.run(t, "submit", old); code != exitOK {
		t.Fatalf("submit: exit %d\n%s", code, stderr)
	}
	e.recreate(t, topic, 1, opGoodDataConfigs())
	newID := e.topicID(t, topic)
	_, fresh := opTestPlan(t, dir, "chk-2", topic, newID, events.Offsets{0: 0})
	before := e.snapshot(t, topic, control)
	code, _, stderr := e.run(t, "apply", fresh)
	opWantFailure(t, code, stderr, exitError,
		"control topic "+control+" governs topic "+topic+" (ID "+oldID+"); the plan is for "+topic+" (ID "+newID+")",
		"Hint: topic "+topic+" was deleted and recreated since this control topic was bound",
		"kcleanup init --topic "+topic+" --control-topic <new name>")
	e.assertUnchanged(t, topic, control, before)
}
