package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/protocol"
)

// requestCounter counts the requests an invocation's clients send, by API key (a franz-go hook),
// and, reading the requests off the wire (a dialer), per topic: the DescribeConfigs that name it,
// the ListOffsets that ask its offsets, and its reads: the fetch sessions opened on it (a Fetch of
// session epoch 0 or -1, the first request of each new reader) and the Fetches from its offset 0.
type requestCounter struct {
	mu        sync.Mutex
	byKey     map[int16]int
	described map[string]int
	listed    map[string]int
	opened    map[string]int
	fromStart map[string]int
	// names maps topic IDs to names, for Fetch requests that name topics by ID (v13+).
	names map[[16]byte]string
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

// dial connects as franz-go would and reads what the client writes.
func (r *requestCounter) dial(ctx context.Context, network, host string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &readConn{Conn: c, r: r}, nil
}

type readConn struct {
	net.Conn
	r   *requestCounter
	buf []byte
}

// Write parses each whole request frame written (plaintext: the test broker's listener).
func (c *readConn) Write(b []byte) (int, error) {
	c.buf = append(c.buf, b...)
	for len(c.buf) >= 4 {
		n := int(binary.BigEndian.Uint32(c.buf))
		if len(c.buf) < 4+n {
			break
		}
		c.r.request(c.buf[4 : 4+n])
		c.buf = c.buf[4+n:]
	}
	return c.Conn.Write(b)
}

// request notes the topics a DescribeConfigs, ListOffsets or Fetch request names.
func (r *requestCounter) request(frame []byte) {
	if len(frame) < 10 {
		return
	}
	key, version := int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:]))
	var req kmsg.Request
	switch kmsg.Key(key) {
	case kmsg.DescribeConfigs, kmsg.ListOffsets, kmsg.Fetch:
		req = kmsg.RequestForKey(key)
	default:
		return
	}
	req.SetVersion(version)
	body := frame[8:]
	idLen := int(int16(binary.BigEndian.Uint16(body)))
	body = body[2+max(idLen, 0):]
	if req.IsFlexible() {
		body = body[1:] // no tagged fields in franz-go's request header
	}
	if err := req.ReadFrom(body); err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	inc := func(m *map[string]int, topic string) {
		if *m == nil {
			*m = map[string]int{}
		}
		(*m)[topic]++
	}
	switch req := req.(type) {
	case *kmsg.DescribeConfigsRequest:
		for _, res := range req.Resources {
			if res.ResourceType == kmsg.ConfigResourceTypeTopic {
				inc(&r.described, res.ResourceName)
			}
		}
	case *kmsg.ListOffsetsRequest:
		for _, t := range req.Topics {
			inc(&r.listed, t.Topic)
		}
	case *kmsg.FetchRequest:
		for _, t := range req.Topics {
			name := t.Topic
			if n, ok := r.names[t.TopicID]; ok && name == "" {
				name = n
			}
			if req.SessionEpoch <= 0 {
				inc(&r.opened, name)
			}
			for _, p := range t.Partitions {
				if p.FetchOffset == 0 {
					inc(&r.fromStart, name)
				}
			}
		}
	}
}

// TestApplyDescribesTheControlTopicOnce reads the requests of one `kcleanup apply` of a first
// plan, then of a second, on the real broker off the wire (issue 34 item 3): the control topic's configs are
// described once (worker.PrepareControlTopic, whose description also serves the shape check;
// before, the session's read described it again: 2), the control topic is read once (one
// reader opened on it, one Fetch from its offset 0: the catch-ups of the run read on with the
// same reader), and Preflight runs once (one "check" step). The per-API totals and per-topic
// counts are logged; the totals vary with the shared broker's other topics (the search for
// another governor reads them).
func TestApplyDescribesTheControlTopicOnce(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 2, 50, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	_, path := opTestPlan(t, t.TempDir(), "chk-req", topic, id, events.Offsets{0: 30, 1: 20})
	ctx, cancel := context.WithTimeout(context.Background(), opTestTimeout)
	defer cancel()
	td, err := e.adm.ListTopics(ctx, topic, control)
	if err != nil {
		t.Fatal(err)
	}

	// A first plan (the control topic empty: its first read fetches nothing), then a second
	// (the read fetches PLANNED, COMMITTED, DELETING and APPLIED of the first).
	for i, offs := range []events.Offsets{{0: 30, 1: 20}, {0: 40, 1: 30}} {
		if i > 0 {
			_, path = opTestPlan(t, t.TempDir(), "chk-req2", topic, id, offs)
		}
		count := &requestCounter{names: map[[16]byte]string{}}
		for name, d := range td {
			count.names[d.ID] = name
		}
		testOpts = []kgo.Opt{kgo.WithHooks(count), kgo.Dialer(count.dial)}
		t.Cleanup(func() { testOpts = nil })
		code, _, stderr := e.run(t, "apply", path)
		testOpts = nil
		if code != exitOK {
			t.Fatalf("apply %d: exit %d\n%s", i+1, code, stderr)
		}
		t.Logf("requests of apply %d: %s; by topic: DescribeConfigs %v, ListOffsets %v, readers opened %v, Fetches from offset 0 %v",
			i+1, count, count.described, count.listed, count.opened, count.fromStart)
		if n := count.described[control]; n != 1 {
			t.Errorf("apply %d described control topic %s's configs %d times, want once", i+1, control, n)
		}
		// Describe, Recheck before DELETING and before the deletion.
		if n := count.described[topic]; n != 3 {
			t.Errorf("apply %d described data topic %s's configs %d times, want 3 (describe and two rechecks)", i+1, topic, n)
		}
		if n := count.opened[control]; n != 1 {
			t.Errorf("apply %d opened %d readers on control topic %s, want one", i+1, n, control)
		}
		if n := count.fromStart[control]; n != 1 {
			t.Errorf("apply %d fetched control topic %s from offset 0 %d times, want once", i+1, control, n)
		}
		if n := strings.Count(stderr, "[check] "); n != 1 {
			t.Errorf("apply %d ran Preflight %d times (its [check] step), want once:\n%s", i+1, n, stderr)
		}
	}
}
