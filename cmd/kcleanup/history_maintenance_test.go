package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/workertest"
)

// The fleet's repair of an overwritten key shows in `kcleanup history` as maintenance, with
// the worker and why; the overwrite itself stays a rejected record by its writer. kfake: only
// the fold and the record headers matter here.
func TestHistoryShowsTheFleetsMaintenance(t *testing.T) {
	clearEnv(t)
	c, addr := workertest.FakeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ctl := "action-state.kcleanup"
	if _, err := c.CreateControlTopic(ctx, ctl, 1); err != nil {
		t.Fatal(err)
	}
	plan, err := events.BuildPlan("C1", []events.Marker{{Topic: "action-state", TopicID: "Xw8WDWFFGCB7AAZnSGmHfw", Offsets: events.Offsets{0: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	env := events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Planned, PlanID: plan.PlanID, Plan: plan, At: time.Now().UTC(), Actor: "operator"}
	if _, err := c.Append(ctx, ctl, env); err != nil {
		t.Fatal(err)
	}
	if err := c.Client().ProduceSync(ctx, &kgo.Record{Topic: ctl, Partition: 0, Key: []byte(events.Key(plan.PlanID, events.Planned))}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	proj, err := c.Project(ctx, ctl)
	if err != nil {
		t.Fatal(err)
	}
	proj.Actor = "worker/test-3"
	if err := proj.Repair(ctx); err != nil {
		t.Fatal(err)
	}
	proj.Close()

	code, stdout, stderr := runCLI(t, "-b", addr, "history", "--control-topic", ctl)
	if code != exitOK {
		t.Fatalf("history: exit %d\n%s", code, stderr)
	}
	var repair, overwrite string
	for _, line := range strings.Split(stdout, "\n") {
		switch {
		case strings.Contains(line, "maintenance (repair)"):
			repair = line
		case strings.Contains(line, "overwrites-accepted"):
			overwrite = line
		}
	}
	if !strings.Contains(repair, "worker/test-3") || !strings.Contains(repair, "re-appends the record accepted at offset 0") {
		t.Errorf("the repair is not shown as the worker's maintenance:\n%s", stdout)
	}
	if overwrite == "" || strings.Contains(overwrite, "maintenance") {
		t.Errorf("the overwrite is not shown as a rejected record:\n%s", stdout)
	}

	code, stdout, _ = runCLI(t, "-b", addr, "-o", "json", "history", "--control-topic", ctl)
	var doc struct {
		SchemaVersion int `json:"schemaVersion"`
		Verdicts      []struct {
			Verdict     string `json:"verdict"`
			Actor       string `json:"actor"`
			Maintenance *struct {
				Kind, Actor, Reason string
			} `json:"maintenance"`
		} `json:"verdicts"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); code != exitOK || err != nil || doc.SchemaVersion != historySchemaVersion || len(doc.Verdicts) != 3 {
		t.Fatalf("history -o json: exit %d, %v\n%s", code, err, stdout)
	}
	if m := doc.Verdicts[2].Maintenance; m == nil || m.Kind != "repair" || doc.Verdicts[2].Actor != "worker/test-3" || doc.Verdicts[1].Maintenance != nil {
		t.Errorf("history -o json: maintenance not on the repair alone:\n%s", stdout)
	}
}
