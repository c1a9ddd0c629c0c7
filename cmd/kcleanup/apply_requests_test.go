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
// and, reading the requests off the wire (a dialer), the DescribeConfigs that name each topic.
type requestCounter struct {
	mu        sync.Mutex
	byKey     map[int16]int
	described map[string]int
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

// request notes the topics a DescribeConfigs request names.
func (r *requestCounter) request(frame []byte) {
	if len(frame) < 10 {
		return
	}
	key, version := int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:]))
	if kmsg.Key(key) != kmsg.DescribeConfigs {
		return
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
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
	if r.described == nil {
		r.described = map[string]int{}
	}
	for _, res := range req.Resources {
		if res.ResourceType == kmsg.ConfigResourceTypeTopic {
			r.described[res.ResourceName]++
		}
	}
}

// TestApplyDescribesTheControlTopicOnce reads the requests of one `kcleanup apply` of a first
// plan on the real broker off the wire (issue 34 item 3): its configs are described once
// (worker.PrepareControlTopic, whose description also serves the shape check). Before, the
// session's read described it again (CheckControlShape): 2. The per-API totals are logged; they
// vary with the shared broker's other topics (the search for another governor reads them).
func TestApplyDescribesTheControlTopicOnce(t *testing.T) {
	e := opTestEnv(t)
	topic, id := e.governedTopic(t, 2, 50, opGoodDataConfigs())
	control := protocol.ControlTopicFor(topic)
	_, path := opTestPlan(t, t.TempDir(), "chk-req", topic, id, events.Offsets{0: 30, 1: 20})

	count := &requestCounter{}
	testOpts = []kgo.Opt{kgo.WithHooks(count), kgo.Dialer(count.dial)}
	t.Cleanup(func() { testOpts = nil })
	code, _, stderr := e.run(t, "apply", path)
	testOpts = nil
	if code != exitOK {
		t.Fatalf("apply: exit %d\n%s", code, stderr)
	}
	t.Logf("requests of one apply: %s; DescribeConfigs by topic: %v", count, count.described)
	if n := count.described[control]; n != 1 {
		t.Errorf("apply described control topic %s's configs %d times, want once", control, n)
	}
	// Describe, Recheck before DELETING and before the deletion.
	if n := count.described[topic]; n != 3 {
		t.Errorf("apply described data topic %s's configs %d times, want 3 (describe and two rechecks)", topic, n)
	}
}
