package io.github.kcleanup.flinkgen;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamUtils;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.util.TestStreamEnvironment;

/**
 * The checkpoint of benchmark B9 (issue 31 item 7): a job of many operators at a high
 * parallelism with RocksDB incremental keyed state on every one, and the marker operator.
 *
 * <pre>  BigCheckpoint PARALLELISM KEYED_OPERATORS OUTDIR [SCALE_TO]</pre>
 *
 * To keep it affordable on two cores every operator is chained: the keyed stream is
 * reinterpreted (DataStreamUtils.reinterpretAsKeyedStream), each subtask emits only keys of its
 * own key groups, so there is no network shuffle and one task per subtask runs the whole chain;
 * each subtask writes one key into each operator's RocksDB, which makes one SST file per
 * operator and subtask at the checkpoint; the inline threshold is lowered to 1 KB so that those
 * small SST files are files, as a production job's are, not bytes inside the metadata. Prints the
 * retained checkpoint's path.
 *
 * <p>With SCALE_TO, the real checkpoint is then rescaled to SCALE_TO subtasks the way Flink
 * rescales keyed state (each handle cut to the new subtask's key groups with
 * KeyedStateHandle.getIntersection; operator state handles copied; operators already at SCALE_TO,
 * the marker operator's among them, kept as they are) and written with Flink's own
 * metadata serializer (Checkpoints.storeCheckpointMetadata) to OUTDIR/scaled-pN/chk-ID: a
 * metadata file of a job at SCALE_TO, whose handles name the real checkpoint's files, without
 * running thousands of RocksDB instances (a real run at parallelism 16 with 100 operators took
 * 151 s and 1.9 GB; 128 would take about eight times both). Prints that path instead.
 */
public final class BigCheckpoint {
    public static void main(String[] args) throws Exception {
        int parallelism = Integer.parseInt(args[0]);
        int operators = Integer.parseInt(args[1]);
        Path out = Path.of(args[2]).toAbsolutePath();
        int scaleTo = args.length > 3 ? Integer.parseInt(args[3]) : parallelism;

        Files.createDirectories(out);

        Configuration conf = new Configuration();
        conf.setString("taskmanager.memory.managed.size", "512m");
        conf.setString("rest.bind-port", "0");
        // The rebalance from PARALLELISM to SCALE_TO subtasks: many channels, small buffers.
        conf.setString("taskmanager.memory.segment-size", "4kb");
        conf.setString("taskmanager.memory.network.min", "128m");
        conf.setString("taskmanager.memory.network.max", "128m");
        MiniCluster cluster =
                new MiniCluster(
                        new MiniClusterConfiguration.Builder()
                                .setConfiguration(conf)
                                .setNumTaskManagers(1)
                                .setNumSlotsPerTaskManager(Math.max(parallelism, scaleTo))
                                .build());
        long t0 = System.nanoTime();
        cluster.start();
        TestStreamEnvironment.setAsContext(cluster, parallelism);
        try {
            Map<String, String> c = new HashMap<>();
            c.put("state.backend.type", "rocksdb");
            c.put("execution.checkpointing.incremental", "true");
            c.put("state.backend.incremental", "true");
            c.put("execution.checkpointing.dir", out.resolve("checkpoints").toUri().toString());
            c.put("state.checkpoints.dir", out.resolve("checkpoints").toUri().toString());
            c.put("execution.checkpointing.interval", "1 h");
            c.put("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION");
            c.put("restart-strategy.type", "none");
            c.put("execution.checkpointing.data-inline-threshold", "1kb");
            c.put("state.storage.fs.memory-threshold", "1kb");
            // Small RocksDB instances: thousands share one JVM.
            c.put("state.backend.rocksdb.memory.managed", "true");
            c.put("state.backend.rocksdb.thread.num", "1");
            StreamExecutionEnvironment env =
                    StreamExecutionEnvironment.getExecutionEnvironment(Configuration.fromMap(c));
            env.setParallelism(parallelism);
            env.setMaxParallelism(Math.max(128, scaleTo));
            DataStream<Long> s =
                    env.fromSequence(0, Long.MAX_VALUE)
                            .map(new OwnKey(env.getMaxParallelism()))
                            .uid("own-key")
                            .name("own-key");
            for (int i = 0; i < operators; i++) {
                s = DataStreamUtils.reinterpretAsKeyedStream(s, new SelfKey())
                        .map(new KeyedCounter(0))
                        .uid("keyed-" + i)
                        .name("keyed-" + i);
            }
            // The marker operator runs at SCALE_TO for real, so each of its subtasks writes its
            // own marker; it holds no keyed state, so its subtasks are cheap.
            s = s.rebalance()
                    .map(new MarkerFunction(MarkerSpec.of(Generate.MARKERS, "actions",
                            Generate.topicId("b9"), 8)))
                    .setParallelism(scaleTo)
                    .uid(Generate.MARKERS)
                    .name(Generate.MARKERS);
            s.sinkTo(new DiscardingSink<>()).setParallelism(scaleTo).uid("sink");
            JobClient client = env.executeAsync("b9");
            JobID id = client.getJobID();
            System.err.printf("b9: submitted after %.1f s%n", (System.nanoTime() - t0) / 1e9);
            long t1 = System.nanoTime();
            String chk = null;
            while (chk == null) {
                try {
                    chk = cluster.triggerCheckpoint(id).get();
                } catch (Exception e) {
                    if (System.nanoTime() - t1 > 600_000_000_000L) {
                        throw e;
                    }
                    Thread.sleep(500);
                }
            }
            System.err.printf("b9: first checkpoint after %.1f s%n", (System.nanoTime() - t1) / 1e9);
            // The first may come before every subtask wrote its keys; the second holds them.
            Thread.sleep(2000);
            long t2 = System.nanoTime();
            chk = cluster.triggerCheckpoint(id).get();
            System.err.printf("b9: second checkpoint in %.1f s%n", (System.nanoTime() - t2) / 1e9);
            client.cancel().get();
            cluster.requestJobResult(id).get();
            Path real = Path.of(new org.apache.flink.core.fs.Path(chk).toUri().getPath());
            Path result = scaleTo == parallelism ? real : Rescale.write(real, scaleTo, out);
            System.err.printf("b9: done in %.1f s, %d bytes of metadata%n",
                    (System.nanoTime() - t0) / 1e9, Files.size(result.resolve("_metadata")));
            System.out.println(result);
        } finally {
            TestStreamEnvironment.unsetAsContext();
            cluster.close();
        }
    }

    static final class SelfKey implements org.apache.flink.api.java.functions.KeySelector<Long, Long> {
        @Override
        public Long getKey(Long v) {
            return v;
        }
    }

    /** Replaces each record by a key that falls in this subtask's own key groups, once in a while. */
    static final class OwnKey extends RichMapFunction<Long, Long> {
        private final int maxParallelism;
        private transient long key;

        OwnKey(int maxParallelism) {
            this.maxParallelism = maxParallelism;
        }

        @Override
        public Long map(Long v) throws InterruptedException {
            if (key == 0) {
                int subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
                int parallelism = getRuntimeContext().getTaskInfo().getNumberOfParallelSubtasks();
                long k = 1;
                while (KeyGroupRangeAssignment.assignKeyToParallelOperator(
                                Long.valueOf(k), maxParallelism, parallelism)
                        != subtask) {
                    k++;
                }
                key = k;
            }
            Thread.sleep(50);
            return key;
        }
    }
}
