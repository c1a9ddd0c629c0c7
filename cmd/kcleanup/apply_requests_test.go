package main

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/events"
)

// requestCounter counts the requests an invocation's clients send, by API key.
type requestCounter struct {
	mu    sync.Mutex
	byKey map[int16]int
}

func (r *requestCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byKey == nil {
		r.byKey = map[int16]int{}
	}
	r.byKey[key]++
}

func (r *requestCounter) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var parts []string
	total := 0
	for k, n := range r.byKey {
		parts = append(parts, fmt.Sprintf("%s=%d", kmsg.NameForKey(k), n))
		total += n
	}
	sort.Strings(parts)
	return fmt.Sprintf("total=%d %s", total, strings.Join(parts, " "))
}

// TestApplyRequestsPerKind counts, with franz-go hooks on every client of one `kcleanup apply`
// on the real broker, the requests a first plan's whole apply sends, by API, and holds each
// count at or below what the apply path needs (issue 34 item 3): a second describe of the
// control topic (Metadata and DescribeConfigs) or a second read of it (ListOffsets, Fetch) on
// the way to PLANNED raises a count past its bound.
func TestApplyRequestsPerKind(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 2, 50, opGoodDataConfigs())
	_, path := opTestPlan(t, t.TempDir(), "chk-req", topic, id, events.Offsets{0: 30, 1: 20})

	count := &requestCounter{}
	testHooks = []kgo.Hook{count}
	t.Cleanup(func() { testHooks = nil })
	code, _, stderr := e.run(t, "apply", path)
	testHooks = nil
	if code != exitOK {
		t.Fatalf("apply: exit %d\n%s", code, stderr)
	}
	t.Logf("requests of one apply: %s", count)
	for key, most := range applyRequestBounds {
		if got := count.byKey[int16(key)]; got > most {
			t.Errorf("apply sent %d %s requests, at most %d expected (%s)", got, kmsg.NameForKey(int16(key)), most, count)
		}
	}
}

// applyRequestBounds are the most requests of each API one apply of a first plan needs.
// DescribeConfigs: the control topic once (worker.PrepareControlTopic, which also makes the
// shape check), the data topic at Describe and at both Rechecks. Before the control topic was
// described once per apply, apply sent 5 DescribeConfigs and 12 Metadata.
var applyRequestBounds = map[kmsg.Key]int{
	kmsg.DescribeConfigs: 4,
	kmsg.Metadata:        11,
}
