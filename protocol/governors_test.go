package protocol

import (
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
)

// TestRunsRefuseWhileAnotherControlTopicGoverns: every writer that is a run (apply, submit,
// preflight, pin, adopt), handed the Governors fact, refuses before its first step while
// another control topic governs the incarnation (bound self: both govern; unbound self: the
// other one does), and goes on to its first step when none does, when the fact names no
// incarnation, or when no fact was gathered (a worker's run).
func TestRunsRefuseWhileAnotherControlTopicGoverns(t *testing.T) {
	const self, topic, id = "t.kcleanup", "t", "AQIDBAUGBwgJCgsMDQ4PEA"
	plan, err := events.BuildPlan("rp", []events.Marker{{Topic: topic, TopicID: id, Offsets: events.Offsets{0: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	bound := projector.New()
	key, value := events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Planned, PlanID: plan.PlanID, Plan: plan, At: at, Actor: "test"}.Encode()
	if v := bound.Step(projector.Record{Offset: 0, Key: key, Value: value, Timestamp: at}); v.Outcome != projector.Accepted {
		t.Fatalf("PLANNED: %+v", v)
	}
	runs := map[string]func(Config) *Run{
		"apply":     func(c Config) *Run { return NewApply(plan, c) },
		"submit":    func(c Config) *Run { return NewSubmit(plan, c) },
		"preflight": func(c Config) *Run { return NewPreflight(plan, c) },
		"pin": func(c Config) *Run {
			return NewPin(events.NewPin("rp0", topic, id, events.Offsets{0: 5}, time.Time{}, "test", at, "test"), c)
		},
		"adopt": func(c Config) *Run {
			return NewAdopt(Adoption{FlinkTopic: "flink", DataTopic: topic, TopicID: id, Plans: []AdoptPlan{{Plan: plan}}, Boundary: plan.Offsets}, c)
		},
	}
	elsewhere := &Governors{Topic: topic, TopicID: id, Others: []string{"other.ctl"}}
	for _, c := range []struct {
		name   string
		st     *projector.State
		gov    *Governors
		refuse string // "" when the run goes on
	}{
		{"bound, another governs", bound, elsewhere, "control topics t.kcleanup and other.ctl both govern topic t"},
		{"unbound, another governs", projector.New(), elsewhere, "control topic t.kcleanup governs no topic yet, but other.ctl governs topic t"},
		{"bound, alone", bound, &Governors{Topic: topic, TopicID: id}, ""},
		{"no incarnation named", projector.New(), &Governors{Others: []string{"other.ctl"}}, ""},
		{"not gathered", bound, nil, ""},
	} {
		for name, run := range runs {
			r := run(Config{ControlTopic: self, Bootstrap: "b:9092", Now: at, Governors: c.gov})
			step := r.Next(c.st, Report{})
			if c.refuse == "" {
				if step.Kind == Refused && errors.Is(step.Err, ErrGovernedElsewhere) {
					t.Errorf("%s, %s: refused: %v", c.name, name, step.Err)
				}
				continue
			}
			if step.Kind != Refused || !errors.Is(step.Err, ErrGovernedElsewhere) || !errors.Is(step.Err, ErrRejected) || !strings.Contains(step.Err.Error(), c.refuse) {
				t.Errorf("%s, %s: first step %s (%v), want Refused: %s", c.name, name, step.Kind, step.Err, c.refuse)
			}
			if again := r.Next(c.st, Report{}); again.Kind != Refused {
				t.Errorf("%s, %s: after the refusal Next gave %s", c.name, name, again.Kind)
			}
		}
	}
}
