package netfault

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/kcleanup/kcleanup/internal/kafkatest"
)

// noLinksHint is the advice when the cluster was started without proxied listeners.
const noLinksHint = "the network-fault tests need the cluster's proxied client listeners:\n" +
	"  make kafka-down BROKERS=3 && make kafka-up BROKERS=3   (the Makefile sets KAFKA_CLUSTER_LINKS=3)\n" +
	"  or: KAFKA_CLUSTER_LINKS=3 cmd/kafkadev/kafka.sh up --brokers 3"

// Net is the proxies of every link of a test's cluster.
type Net struct {
	links map[string]*Link
}

// Link is one kcleanup process's path to the cluster: a proxy in front of each broker.
type Link struct {
	Name    string
	mu      sync.Mutex
	proxies map[int32]*toxiproxy.Proxy
	// Bootstrap lists the link's proxied addresses (give it to one process only).
	Bootstrap string
	toxics    int // names toxics uniquely
}

// Start starts a proxy for every proxied listener of k (KAFKA_CLUSTER_LINKS) and stops them
// when the test ends. It fails the test, saying how, when the cluster has fewer than want links.
func Start(t testing.TB, k *kafkatest.Cluster, want int) *Net {
	t.Helper()
	f, err := os.Open(filepath.Join(k.Dir(), "links"))
	if err != nil {
		t.Fatalf("%v\n%s", err, noLinksHint)
	}
	defer f.Close()
	zerolog.SetGlobalLevel(zerolog.WarnLevel) // the toxics trace every interruption to the global logger
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	n := &Net{links: map[string]*Link{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// LINKx NODE LISTEN_ADDR ADVERTISED_ADDR (kafka.sh)
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 {
			t.Fatalf("%s: bad line %q (want: LINK NODE LISTEN ADVERTISED)", f.Name(), sc.Text())
		}
		node, err := strconv.Atoi(fs[1])
		if err != nil {
			t.Fatalf("%s: bad node in %q", f.Name(), sc.Text())
		}
		l := n.links[fs[0]]
		if l == nil {
			l = &Link{Name: fs[0], proxies: map[int32]*toxiproxy.Proxy{}}
			n.links[fs[0]] = l
		}
		// The proxy listens on the advertised address and forwards to the broker's listener.
		p := toxiproxy.NewProxy(server, fmt.Sprintf("%s-%d", fs[0], node), fs[3], fs[2])
		if err := p.Start(); err != nil {
			t.Fatalf("proxy %s -> %s: %v (is another test run using this cluster's links?)", fs[3], fs[2], err)
		}
		t.Cleanup(p.Stop)
		l.proxies[int32(node)] = p
		if l.Bootstrap != "" {
			l.Bootstrap += ","
		}
		l.Bootstrap += fs[3]
	}
	if len(n.links) < want {
		t.Fatalf("the cluster has %d proxied links, this test needs %d\n%s", len(n.links), want, noLinksHint)
	}
	return n
}

// Links returns the cluster's links in name order (LINKA, LINKB, ...).
func (n *Net) Links() []*Link {
	var names []string
	for name := range n.links {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]*Link, len(names))
	for i, name := range names {
		out[i] = n.links[name]
	}
	return out
}

// HealAll removes every fault of every link.
func (n *Net) HealAll(t testing.TB) {
	t.Helper()
	for _, l := range n.links {
		l.Heal(t)
	}
}
