// Command kcbench measures kcleanup side by side with what an operator would
// use instead and with the floor Kafka itself sets, on a real broker, and
// prints one table (docs/benchmarks.md explains every row). `make bench`
// runs it in full (about eight minutes on two cores), `make bench-quick`
// with smaller inputs (one to two minutes); both write the same figures as
// JSON to bench-results/<time>.json.
//
//	B1 replay    kcleanup status and worker.Cluster.Project reading a control
//	             topic of a million records, vs a bare franz-go consumer
//	B2 apply     kcleanup apply (and Cluster.Apply) on 100, 1,000, 10,000
//	             partitions, vs kafka-delete-records and a bare franz-go
//	             DeleteRecords + ListOffsets program; a line fit per subject;
//	             Cluster.Apply with a Flink Agents mirror attached next to
//	             the one without, each with its clients, connections and
//	             requests (a kgo hook); -apply-sizes picks the sizes
//	B3 failover  three kcleanup worker processes, the owner SIGKILLed when
//	             COMMITTED appears; time to APPLIED vs the session timeout
//	B4 plan      events.BuildPlan, events.ParseMarkers and the markers file
//	             read into an events.PlanBuilder (AddMarkers, kcleanup plan's),
//	             1,000 × 10,000
//	B5 growth    fold rate (decoded on every core, folded as a worker's
//	             reader does) and retained heap at 10k, 100k and 1M records,
//	             with a heap profile of the largest
//	B6 fleet     three kcleanup worker --control-topic-regex processes
//	             serving 1,000 control topics: start to ready, heap per
//	             control topic, failover of a SIGKILLed replica's share
//	             (fleet.go)
//	B7 validate  the recovery gate with the physical check on: POST
//	             /v1/validate on an in-process worker (1 and 8 clients) and
//	             worker.Cluster.Validate, vs the control-topic read alone
//	             (validate.go; in process, not in a child)
//	B8 apply     two kcleanup worker processes, `kcleanup apply` SIGKILLed at
//	   killed    a random point (a failpoint drawn at random, inside each
//	             mirror transaction too, or a random moment), with a Flink
//	             Agents mirror attached and without; kill → APPLIED by a
//	             worker, p50 and max (mirrorkill.go)
//	B9 check-    the markers out of a retained checkpoint of 100 RocksDB
//	   point     incremental keyed operators at parallelism 128 (made by
//	             internal/flinkgen/generate.sh b9, cached): `kcleanup markers
//	             --checkpoint -o json` and store.Open + checkpoint.Read in a
//	             child, vs Flink's State Processor API readUnionState
//	             (generate.sh peer-read), run after run; no broker
//	             (checkpoint.go)
//	B10 follow   one round of a retention policy over a checkpoint base
//	             directory of 10,000 completed checkpoints: worker.Follower
//	             cold (every _metadata read) and warm (skipped by path, size
//	             and mtime), vs the floor of the same walk with os.ReadDir and
//	             os.Stat / os.ReadFile, and vs the smallest --every (1s), in a
//	             child; no broker (follow.go)
//
// How it measures, and why:
//
//   - Every subject runs in a process of its own (kcbench re-executes itself
//     as `kcbench child MODE`), so its peak memory is its own and it starts
//     cold like an operator's command. The child reports the time of its
//     measured section; the parent the whole process. Peak RSS comes from
//     GNU time: Go starts children with vfork, and Linux then counts the
//     parent's resident set into the child's getrusage peak.
//   - Ratios are paired: each run measures every subject back to back, in an
//     order that rotates from run to run, and a ratio is the median over runs
//     of the two times of that run. A noisy neighbour slows both sides.
//   - Inputs are written directly: B1's control records are valid envelopes
//     from a generator (gen.go) that the tests fold through the projector,
//     produced with a batching lz4 producer. B2's subjects take turns on one
//     topic, each deleting one more record from every partition, so every
//     request does the same work on the same topic.
//   - Nothing here asserts a time. The tests check the generator, the
//     statistics and the formatting, so the program cannot silently rot.
//
// It needs KCLEANUP_TEST_BOOTSTRAP (set by `cmd/kafkadev/kafka.sh test`, which
// starts a broker only if none is running and stops only one it started),
// bin/kcleanup, and for kafka-delete-records Java and the jars kafka.sh
// downloads. -cluster measures on the three-broker development cluster instead
// ($KCLEANUP_TEST_CLUSTER/bootstrap; `make bench-cluster` runs B2 and B3 there, quick sizes):
// its topics get replication factor 3 and min.insync.replicas=2 and its rows say
// "(3 brokers)". -only B4,B5,B9,B10 runs without a broker; -keep leaves the topics
// for profiling a child (`kcbench child project -topic T -cpuprofile F`).
package main
