// Package limits holds the resource-limit tests of issue 33 item 2: a real `kcleanup worker`
// process serving 1,000 control topics on the three-broker development cluster
// (kafkatest.NewCluster) with its open-file limit lowered and raised in flight, with a small
// GOMEMLIMIT, and with the brokers' max.connections on its listener (a proxied link of
// internal/clustertest/netfault, so that only the worker is limited). Each must stay up, say
// why it is degraded (/readyz), delete nothing the log does not allow (the invariant checker)
// and recover once the limit is lifted. docs/testing.md ("Resource limits") lists them.
package limits
