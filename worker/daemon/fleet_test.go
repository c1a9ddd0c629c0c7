package daemon

import (
	"testing"
	"time"
)

// The client ID carries a replica's name and start time, and reads back;
// any other member's client ID reads as not a worker's.
func TestMemberClientIDReadsBack(t *testing.T) {
	started := time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC)
	for _, name := range []string{"kc-0", "10.0.0.5:9308", "[::1]:9308", "kc@eu/1"} {
		id := MemberClientID(name, started)
		got, at, ok := ParseMemberClientID(id)
		if !ok || got != name || !at.Equal(started) {
			t.Errorf("%q: read back %q %s %t", id, got, at, ok)
		}
	}
	for _, id := range []string{"kcleanup", "kgo", "kcleanup-worker/", "kcleanup-worker/@2026-12-02T09:30:00Z", "kcleanup-worker/kc-0@yesterday", "consumer-1"} {
		if name, _, ok := ParseMemberClientID(id); ok {
			t.Errorf("%q read as worker %q", id, name)
		}
	}
	if _, err := New(nil, WithControlTopics("a.kcleanup"), WithReplicaName("kc\t0")); err == nil {
		t.Error("a replica name with a tab was accepted")
	}
}
