package protocol

import (
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
)

// Two control topics bound to one topic incarnation block each other; another incarnation,
// another topic, or an unbound control topic does not.
func TestSharedGovernance(t *testing.T) {
	known := []Governor{
		{ControlTopic: "t.kcleanup", Topic: "t", TopicID: "A"},
		{ControlTopic: "t.old.kcleanup", Topic: "t", TopicID: "OLD"}, // the earlier incarnation's
		{ControlTopic: "u.kcleanup", Topic: "u", TopicID: "A"},
		{ControlTopic: "fresh.kcleanup"}, // unbound
	}
	if err := SharedGovernance("t.kcleanup", "t", "A", known, "b:9092"); err != nil {
		t.Fatalf("alone: %v", err)
	}
	known = append(known, Governor{ControlTopic: "ops.t.ctl", Topic: "t", TopicID: "A"})
	for _, self := range []string{"t.kcleanup", "ops.t.ctl", "fresh.kcleanup"} {
		err := SharedGovernance(self, "t", "A", known, "b:9092")
		if !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "both govern topic t (topic ID A)") ||
			!strings.Contains(strings.Join(errors.GetAllHints(err), "\n"), "keep one control topic per data topic") {
			t.Errorf("%s: %v %q", self, err, errors.GetAllHints(err))
		}
	}
}

// TestGovernanceCheck is the rule every writer obeys (issue 35): it writes only to a control
// topic that exists, and never while another, under any name, governs the same incarnation.
func TestGovernanceCheck(t *testing.T) {
	g := Governance{Self: "t.kcleanup", Exists: true, Bound: true, Topic: "t", TopicID: "A"}
	if err := g.Check("b:9092"); err != nil {
		t.Fatalf("alone: %v", err)
	}
	for _, c := range []struct {
		name          string
		exists, bound bool
		others        []string
		want          []string
		mark          error
	}{
		{"missing", false, false, nil, []string{"control topic t.kcleanup does not exist: nothing was written", "kcleanup init --topic t"}, ErrNoControlTopic},
		{"missing, governed elsewhere", false, false, []string{"ops.t.ctl"}, []string{"control topic t.kcleanup does not exist, but ops.t.ctl governs topic t (topic ID A)", "--control-topic ops.t.ctl"}, ErrGovernedElsewhere},
		{"unbound, governed elsewhere", true, false, []string{"ops.t.ctl"}, []string{"control topic t.kcleanup governs no topic yet, but ops.t.ctl governs topic t", "--control-topic ops.t.ctl"}, ErrGovernedElsewhere},
		{"both bound", true, true, []string{"ops.t.ctl", "t.kcleanup"}, []string{"control topics t.kcleanup and ops.t.ctl both govern topic t (topic ID A)", "keep one control topic per data topic"}, ErrGovernedElsewhere},
	} {
		g := Governance{Self: "t.kcleanup", Exists: c.exists, Bound: c.bound, Topic: "t", TopicID: "A", Others: c.others}
		err := g.Check("b:9092")
		text := ""
		if err != nil {
			text = err.Error() + "\n" + strings.Join(errors.GetAllHints(err), "\n")
		}
		if !errors.Is(err, ErrRejected) || !errors.Is(err, c.mark) {
			t.Errorf("%s: %v", c.name, err)
		}
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: %q not in\n%s", c.name, w, text)
			}
		}
	}
	// The default name needs no flag; another name is created under its own.
	if err := (Governance{Self: "ops.t.ctl", Topic: "t", TopicID: "A"}).Check(""); !strings.Contains(strings.Join(errors.GetAllHints(err), "\n"), "kcleanup init --topic t --control-topic ops.t.ctl") {
		t.Errorf("named: %q", errors.GetAllHints(err))
	}
}
