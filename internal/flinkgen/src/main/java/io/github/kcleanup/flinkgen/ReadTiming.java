package io.github.kcleanup.flinkgen;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.state.api.OperatorIdentifier;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;

/**
 * The peer row of benchmark B9: Flink's State Processor API reads the marker operator's union
 * state as Flink Agents' tool does (a local environment, the checkpoint's RocksDB backend).
 *
 * <pre>  ReadTiming PATH UID [RUNS]</pre>
 *
 * Prints one JSON line per run: the wall time from before SavepointReader.read to the last
 * element, and the number of elements (the first run includes the local cluster's start).
 */
public final class ReadTiming {
    public static void main(String[] args) throws Exception {
        String path = args[0];
        String uid = args[1];
        int runs = args.length > 2 ? Integer.parseInt(args[2]) : 1;
        for (int r = 0; r < runs; r++) {
            long t0 = System.nanoTime();
            StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
            SavepointReader reader =
                    SavepointReader.read(env, path, Generate.stateBackend("rocksdb"));
            long n = 0;
            try (CloseableIterator<Object> it =
                    reader.readUnionState(
                                    OperatorIdentifier.forUid(uid),
                                    Generate.STATE,
                                    TypeInformation.of(Object.class))
                            .executeAndCollect()) {
                while (it.hasNext()) {
                    it.next();
                    n++;
                }
            }
            System.out.printf("{\"run\":%d,\"wallMs\":%.1f,\"elements\":%d}%n",
                    r, (System.nanoTime() - t0) / 1e6, n);
        }
    }
}
