// Package workertest holds the fixtures the tests of worker and of the packages above it
// (worker/daemon, cmd, internal/clustertest) share, so that none keeps a copy: a
// worker.Cluster on kfake or the real broker, a data topic with records, a caught-up
// projection of its control topic, a plan, a control record, the three-broker cluster's scene
// (Replicated) and the harness of a running kcleanup process (StartWorker, StartProcess).
// Every helper registers its own cleanup with t.Cleanup and fails the test on error.
//
// Tests of package worker that use it are in package worker_test: it imports worker.
package workertest
