package main

import "testing"

func TestControlTopic(t *testing.T) {
	if got := controlTopicFor("action-state"); got != "action-state.kcleanup" {
		t.Fatalf("controlTopicFor: %q", got)
	}
	if got := (globalOptions{}).controlTopicOf("action-state"); got != "action-state.kcleanup" {
		t.Fatalf("derived: %q", got)
	}
	if got := (globalOptions{controlTopic: "ops.ctl"}).controlTopicOf("action-state"); got != "ops.ctl" {
		t.Fatalf("--control-topic must win: %q", got)
	}
}
