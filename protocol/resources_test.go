package protocol_test

import (
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/protocol"
)

func TestAssignedTopic(t *testing.T) {
	for _, c := range []struct {
		matches, read, shaped bool
		want                  protocol.Assignment
	}{
		{true, true, true, protocol.OwnAssigned},
		{true, true, false, protocol.RefuseAssigned},
		// Unread settings are not "not a control topic": ask again.
		{true, false, false, protocol.RetryAssigned},
		{false, true, true, protocol.RefuseAssigned},
		{false, false, false, protocol.RefuseAssigned},
	} {
		if got := protocol.AssignedTopic(c.matches, c.read, c.shaped); got != c.want {
			t.Errorf("AssignedTopic(matches %v, read %v, shaped %v) = %v, want %v", c.matches, c.read, c.shaped, got, c.want)
		}
	}
}

func TestDescriptorShortfall(t *testing.T) {
	if s := protocol.DescriptorShortfall(20000, 1000); s != "" {
		t.Errorf("20,000 for 1,000 control topics: %q, want none", s)
	}
	need := uint64(protocol.DescriptorsBase + protocol.DescriptorsPerControlTopic*1000)
	if s := protocol.DescriptorShortfall(need, 1000); s != "" {
		t.Errorf("exactly the need: %q, want none", s)
	}
	s := protocol.DescriptorShortfall(256, 1000)
	for _, want := range []string{"256", "2064", "1000 control topics", "too many open files", "ulimit -n"} {
		if !strings.Contains(s, want) {
			t.Errorf("256 for 1,000 control topics: %q does not say %q", s, want)
		}
	}
	if s := protocol.DescriptorShortfall(0, -1); s == "" {
		t.Error("a limit of 0 must fall short")
	}
}

func TestMemoryShortfall(t *testing.T) {
	for _, c := range []struct {
		limit, live int64
		short       bool
	}{
		{0, 100 << 20, false},
		{1<<63 - 1, 100 << 20, false}, // no GOMEMLIMIT
		{256 << 20, 100 << 20, false},
		{100 << 20, 100 << 20, false},
		{32 << 20, 130 << 20, true},
	} {
		s := protocol.MemoryShortfall(c.limit, c.live)
		if (s != "") != c.short {
			t.Errorf("MemoryShortfall(%d, %d) = %q, want short %v", c.limit, c.live, s, c.short)
		}
		if c.short && (!strings.Contains(s, "130 MiB") || !strings.Contains(s, "GOMEMLIMIT (32 MiB)")) {
			t.Errorf("MemoryShortfall(%d, %d) = %q: does not name the heap and the limit", c.limit, c.live, s)
		}
	}
}
