// Package clustertest holds the tests that need the three-broker development cluster
// (kafkatest.NewCluster: `make test` starts it with cmd/kafkadev/kafka.sh test --brokers 3 and
// stops it after): kcleanup's control topics on three brokers, a data partition's leader
// SIGKILLed in the middle of an apply, two brokers lost. Each ends with the invariant checker
// (workertest.RequireInvariants). docs/testing.md lists them.
package clustertest
