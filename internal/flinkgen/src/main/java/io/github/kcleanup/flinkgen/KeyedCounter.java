package io.github.kcleanup.flinkgen;

import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;

/**
 * Keyed state beside the marker operator (a count per key), so that snapshots carry keyed state
 * handles before and after it. In the unaligned case the one after the marker operator sleeps per
 * record: the backpressure fills the network buffers whose contents become channel state.
 */
public class KeyedCounter extends RichMapFunction<Long, Long> implements CheckpointedFunction {
    private static final long serialVersionUID = 1L;

    private final long sleepMillis;
    private transient ValueState<Long> count;

    public KeyedCounter(long sleepMillis) {
        this.sleepMillis = sleepMillis;
    }

    @Override
    public Long map(Long value) throws Exception {
        Long c = count.value();
        count.update(c == null ? 1L : c + 1);
        if (sleepMillis > 0) {
            Thread.sleep(sleepMillis);
        }
        return value;
    }

    @Override
    public void initializeState(FunctionInitializationContext context) {
        count = context.getKeyedStateStore().getState(new ValueStateDescriptor<>("count", Types.LONG));
    }

    @Override
    public void snapshotState(FunctionSnapshotContext context) {}
}
