package netfault

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// Fault is one network fault a link can suffer; Apply injects it on the proxies of nodes (all
// brokers when none are named).
type Fault struct {
	Name  string
	apply func(t testing.TB, l *Link, nodes []int32)
}

func (f Fault) String() string { return f.Name }

// Apply injects f on l's proxies to nodes (every broker when nodes is empty).
func (f Fault) Apply(t testing.TB, l *Link, nodes ...int32) {
	t.Helper()
	f.apply(t, l, nodes)
}

// Partition cuts the link at the IP level: connections are accepted, then no byte passes either
// way and none is reset (a black hole, as a dropped route or a firewall that drops).
var Partition = Fault{"partition", func(t testing.TB, l *Link, nodes []int32) {
	l.add(t, nodes, "timeout", "upstream", map[string]any{"timeout": 0})
	l.add(t, nodes, "timeout", "downstream", map[string]any{"timeout": 0})
}}

// Refuse cuts the link with resets: open connections are closed and new ones refused (a host
// whose port is closed, a firewall that rejects).
var Refuse = Fault{"refuse", func(t testing.TB, l *Link, nodes []int32) {
	for _, p := range l.on(nodes) {
		p.Stop()
	}
}}

// Latency delays every byte 500 ms ± 250 ms each way.
var Latency = Fault{"latency 500ms±250ms", func(t testing.TB, l *Link, nodes []int32) {
	l.add(t, nodes, "latency", "upstream", map[string]any{"latency": 500, "jitter": 250})
	l.add(t, nodes, "latency", "downstream", map[string]any{"latency": 500, "jitter": 250})
}}

// Bandwidth caps the link at 8 KB/s each way.
var Bandwidth = Fault{"bandwidth 8KB/s", func(t testing.TB, l *Link, nodes []int32) {
	l.add(t, nodes, "bandwidth", "upstream", map[string]any{"rate": 8})
	l.add(t, nodes, "bandwidth", "downstream", map[string]any{"rate": 8})
}}

// BlackHoleAfter lets n bytes of answers through each connection, then stops its bytes without
// a reset: a connection that hangs mid-stream (deterministic, unlike a timer: the hang starts
// inside whatever exchange crosses byte n). New connections do the same until Heal.
func BlackHoleAfter(n int) Fault {
	return Fault{fmt.Sprintf("black hole after %d bytes", n), func(t testing.TB, l *Link, nodes []int32) {
		l.add(t, nodes, hangAfter, "downstream", map[string]any{"bytes": n})
	}}
}

// ResetOn resets every connection of the link that carries a request with Kafka API key api
// (21 DeleteRecords, 0 Produce) after forwarding it: the broker gets the request, the client
// never gets the answer. It stays until Heal.
func ResetOn(api int16, name string) Fault {
	return Fault{"reset mid-" + name, func(t testing.TB, l *Link, nodes []int32) {
		l.add(t, nodes, resetOnRequest, "upstream", map[string]any{"api_key": api})
	}}
}

// Faults are the faults every scenario is run under, in this order.
func Faults() []Fault {
	return []Fault{Partition, Refuse, Latency, Bandwidth, BlackHoleAfter(1024),
		ResetOn(21, "DeleteRecords"), ResetOn(0, "Produce")}
}

// on returns l's proxies to nodes (all when nodes is empty).
func (l *Link) on(nodes []int32) map[int32]*toxiproxy.Proxy {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[int32]*toxiproxy.Proxy{}
	for id, p := range l.proxies {
		if len(nodes) == 0 || slices.Contains(nodes, id) {
			out[id] = p
		}
	}
	return out
}

func (l *Link) add(t testing.TB, nodes []int32, typ, stream string, attrs map[string]any) {
	for id, p := range l.on(nodes) {
		l.mu.Lock()
		l.toxics++
		name := fmt.Sprintf("%s-%s-%d", typ, stream, l.toxics)
		l.mu.Unlock()
		b, _ := json.Marshal(map[string]any{"name": name, "type": typ, "stream": stream, "attributes": attrs})
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(string(b))); err != nil {
			t.Errorf("link %s node %d: adding toxic %s: %v", l.Name, id, b, err)
		}
	}
}

// Heal removes every fault from the link: toxics gone, stopped proxies started again.
func (l *Link) Heal(t testing.TB) {
	t.Helper()
	for id, p := range l.on(nil) {
		p.Toxics.ResetToxics(context.Background())
		if err := p.Start(); err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
			t.Errorf("link %s node %d: restarting the proxy: %v", l.Name, id, err)
		}
	}
}

// resetOnRequest is the toxic of ResetOn.
const resetOnRequest = "kafka_reset_on_request"

// resetOnRequestToxic forwards bytes until a chunk starts a Kafka request of ApiKey, forwards
// that chunk too, then closes the connection with a reset. A Kafka request is a 4-byte size and
// a 2-byte API key; the client writes each request in one write, which the proxy reads whole in
// practice (requests here are small), so the chunk boundary is the request boundary.
type resetOnRequestToxic struct {
	ApiKey int16 `json:"api_key"`
}

func (r *resetOnRequestToxic) Pipe(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			stub.Output <- c
			if len(c.Data) >= 6 && int16(binary.BigEndian.Uint16(c.Data[4:6])) == r.ApiKey {
				time.Sleep(50 * time.Millisecond) // the request reaches the broker first
				stub.Close()
				return
			}
		}
	}
}

func init() { toxics.Register(resetOnRequest, new(resetOnRequestToxic)) }

// hangAfter is the toxic of BlackHoleAfter.
const hangAfter = "hang_after_bytes"

// hangAfterToxic forwards Bytes bytes, then swallows everything and never closes.
type hangAfterToxic struct {
	Bytes int `json:"bytes"`
}

func (h *hangAfterToxic) Pipe(stub *toxics.ToxicStub) {
	sent := 0
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			if sent >= h.Bytes {
				continue // swallowed: the peer waits forever
			}
			if rest := h.Bytes - sent; len(c.Data) > rest {
				c.Data = c.Data[:rest]
			}
			sent += len(c.Data)
			stub.Output <- c
		}
	}
}

func init() { toxics.Register(hangAfter, new(hangAfterToxic)) }

// PartitionOn partitions the whole link (as Partition) the moment a request with Kafka API key
// api reaches one of its proxies; that request is swallowed, never reaching the broker. With
// DeleteRecords (21) it cuts a process off between what it wrote before (a COMMITTED) and the
// deletion.
func PartitionOn(api int16, name string) Fault {
	return Fault{"partition at the first " + name, func(t testing.TB, l *Link, nodes []int32) {
		triggers.Lock()
		triggers.n++
		key := fmt.Sprintf("%s-%d", l.Name, triggers.n)
		triggers.m[key] = func() { go Partition.apply(t, l, nil) }
		triggers.Unlock()
		l.add(t, nodes, partitionOnRequest, "upstream", map[string]any{"api_key": api, "trigger": key})
	}}
}

// triggers holds the link-wide actions of PartitionOn's toxics (a toxic is built from JSON
// attributes, so it names its action instead of holding it).
var triggers = struct {
	sync.Mutex
	n int
	m map[string]func()
}{m: map[string]func(){}}

const partitionOnRequest = "kafka_partition_on_request"

// partitionOnRequestToxic forwards bytes until a chunk starts a request of ApiKey (see
// resetOnRequestToxic), then fires its trigger once and swallows everything after, never closing.
type partitionOnRequestToxic struct {
	ApiKey  int16  `json:"api_key"`
	Trigger string `json:"trigger"`
}

func (p *partitionOnRequestToxic) Pipe(stub *toxics.ToxicStub) {
	cut := false
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			if !cut && len(c.Data) >= 6 && int16(binary.BigEndian.Uint16(c.Data[4:6])) == p.ApiKey {
				cut = true
				triggers.Lock()
				fire := triggers.m[p.Trigger]
				delete(triggers.m, p.Trigger)
				triggers.Unlock()
				if fire != nil {
					fire()
				}
			}
			if !cut {
				stub.Output <- c
			}
		}
	}
}

func init() { toxics.Register(partitionOnRequest, new(partitionOnRequestToxic)) }
