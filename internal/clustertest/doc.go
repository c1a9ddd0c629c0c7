// Package clustertest holds the tests that need the three-broker development cluster
// (kafkatest.NewCluster: `make test` starts it with cmd/kafkadev/kafka.sh test --brokers 3 and
// stops it after): kcleanup's control topics on three brokers, a data or control partition's
// leader SIGKILLed in the middle of an apply, two brokers lost, a wiped broker, and a rolling
// restart of all three while three workers finish a plan committed every second. Each ends with
// the invariant checker (workertest.RequireInvariants). docs/testing.md ("The three-broker
// cluster") lists them with the mutation each was checked against: the test failed with it.
package clustertest
