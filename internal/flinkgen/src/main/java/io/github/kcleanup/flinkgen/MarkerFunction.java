package io.github.kcleanup.flinkgen;

import java.util.HashMap;
import java.util.Map;
import org.apache.flink.agents.runtime.actionstate.KafkaActionStateRecoveryMarker;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;

/**
 * The marker operator: at every snapshot each subtask replaces its element(s) of the union list
 * state with its own marker, as Flink Agents' action-state operator does. Offsets differ per
 * subtask and per snapshot, and the subtask holding a partition's minimum rotates with the
 * partition, so a reader that takes one subtask or the wrong snapshot gets a different answer.
 */
public class MarkerFunction extends RichMapFunction<Long, Long> implements CheckpointedFunction {
    private static final long serialVersionUID = 1L;

    private final MarkerSpec spec;
    private transient ListState<Object> state;

    public MarkerFunction(MarkerSpec spec) {
        this.spec = spec;
    }

    @Override
    public Long map(Long value) {
        return value;
    }

    @Override
    public void initializeState(FunctionInitializationContext context) throws Exception {
        state =
                context.getOperatorStateStore()
                        .getUnionListState(
                                new ListStateDescriptor<>(
                                        spec.stateName, TypeInformation.of(Object.class)));
    }

    @Override
    public void snapshotState(FunctionSnapshotContext context) throws Exception {
        state.clear();
        if (spec.empty) {
            return;
        }
        int subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        int parallelism = getRuntimeContext().getTaskInfo().getNumberOfParallelSubtasks();
        long snapshot = context.getCheckpointId();
        Map<Integer, Long> offsets = new HashMap<>();
        for (int p = 0; p < spec.partitions; p++) {
            int rank = (subtask + p) % parallelism; // rank 0 holds the minimum of partition p
            offsets.put(p, spec.base + snapshot * 1000 + rank * 10L + p);
        }
        state.add(new KafkaActionStateRecoveryMarker(1, spec.topic, spec.topicId, offsets));
        if (spec.legacySubtask == subtask) {
            HashMap<Integer, Long> legacy = new HashMap<>();
            for (int p = 0; p < Math.min(spec.partitions, 3); p++) {
                legacy.put(p, spec.base + snapshot * 1000 + p);
            }
            state.add(legacy);
        }
    }
}
