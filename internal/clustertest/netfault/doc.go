// Package netfault puts a TCP proxy (Shopify's toxiproxy, in the test process) between each
// kcleanup process of a test and every broker of the three-broker cluster, and injects network
// faults per link: partitions (from all brokers or from one), latency with jitter, a bandwidth
// cap, resets in the middle of a request, and black holes. Its tests prove that kcleanup ends a
// network fault the way it ends a kill: nothing deleted the log does not allow, no ALLOWED that
// does not hold, and every committed plan applied once the network heals (docs/testing.md,
// "Network faults").
//
// A link is one of the brokers' proxied client listeners (KAFKA_CLUSTER_LINKS=3 kafka.sh up
// --brokers 3: LINKA, LINKB, LINKC). A client bootstrapped through a link's proxies learns only
// that link's advertised (proxied) addresses, so every byte it sends crosses them, while
// inter-broker and controller traffic stays direct.
package netfault
