package main

import (
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/protocol"
)

func TestControlTopic(t *testing.T) {
	if got := protocol.ControlTopicFor("action-state"); got != "action-state.kcleanup" {
		t.Fatalf("protocol.ControlTopicFor: %q", got)
	}
	for _, tc := range []struct {
		flag, data, want, err string
	}{
		{"", "action-state", "action-state.kcleanup", ""},
		{"ops.ctl", "action-state", "ops.ctl", ""},
		{"action-state", "action-state", "", `--control-topic "action-state" is the data topic itself`},
		{"", "", "", "the data topic is empty"},
	} {
		got, err := (globalOptions{controlTopic: tc.flag}).controlTopicOf(tc.data)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || exitCode(err) != exitUsage {
				t.Errorf("%+v: error %v, want usage error %q", tc, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%+v: got %q, %v", tc, got, err)
		}
	}
}
