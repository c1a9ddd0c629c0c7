package io.github.kcleanup.flinkgen;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.StateObjectCollection;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.KeyedStateHandle;

/** Rescales a checkpoint's metadata to more subtasks (see BigCheckpoint). */
final class Rescale {
    private Rescale() {}

    /** A copy of op's identity at another parallelism; from Flink 2.0 on it carries name and uid. */
    private static OperatorState newOperatorState(OperatorState op, int parallelism, int maxParallelism) {
        try {
            Object name = ((java.util.Optional<?>) OperatorState.class.getMethod("getOperatorName").invoke(op)).orElse(null);
            Object uid = ((java.util.Optional<?>) OperatorState.class.getMethod("getOperatorUid").invoke(op)).orElse(null);
            return OperatorState.class
                    .getConstructor(String.class, String.class, org.apache.flink.runtime.jobgraph.OperatorID.class, int.class, int.class)
                    .newInstance(name, uid, op.getOperatorID(), parallelism, maxParallelism);
        } catch (NoSuchMethodException e) {
            try {
                return OperatorState.class
                        .getConstructor(org.apache.flink.runtime.jobgraph.OperatorID.class, int.class, int.class)
                        .newInstance(op.getOperatorID(), parallelism, maxParallelism);
            } catch (ReflectiveOperationException e2) {
                throw new IllegalStateException(e2);
            }
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    static Path write(Path checkpoint, int parallelism, Path out) throws IOException {
        CheckpointMetadata md;
        try (InputStream raw = Files.newInputStream(checkpoint.resolve("_metadata"));
                DataInputStream in = new DataInputStream(raw)) {
            md = Checkpoints.loadCheckpointMetadata(in, Rescale.class.getClassLoader(), checkpoint.toString());
        }
        List<OperatorState> ops = new ArrayList<>();
        for (OperatorState op : md.getOperatorStates()) {
            int maxParallelism = op.getMaxParallelism();
            if (maxParallelism < parallelism) {
                throw new IllegalArgumentException(
                        "max parallelism " + maxParallelism + " is below " + parallelism);
            }
            if (op.getParallelism() == parallelism) {
                ops.add(op); // ran at that parallelism for real
                continue;
            }
            OperatorState scaled = newOperatorState(op, parallelism, maxParallelism);
            scaled.setCoordinatorState(op.getCoordinatorState());
            for (int i = 0; i < parallelism; i++) {
                KeyGroupRange range =
                        KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(
                                maxParallelism, parallelism, i);
                OperatorSubtaskState from = op.getState(sourceSubtask(op, maxParallelism, range));
                if (from == null) {
                    continue;
                }
                List<KeyedStateHandle> keyed = new ArrayList<>();
                for (KeyedStateHandle h : from.getManagedKeyedState()) {
                    KeyedStateHandle cut = h.getIntersection(range);
                    if (cut != null) {
                        keyed.add(cut);
                    }
                }
                scaled.putState(
                        i,
                        OperatorSubtaskState.builder()
                                .setManagedKeyedState(new StateObjectCollection<>(keyed))
                                .setManagedOperatorState(from.getManagedOperatorState())
                                .build());
            }
            ops.add(scaled);
        }
        Path dir = out.resolve("scaled-p" + parallelism).resolve("chk-" + md.getCheckpointId());
        Files.createDirectories(dir);
        try (OutputStream raw = Files.newOutputStream(dir.resolve("_metadata"));
                DataOutputStream o = new DataOutputStream(new java.io.BufferedOutputStream(raw))) {
            Checkpoints.storeCheckpointMetadata(
                    new CheckpointMetadata(
                            md.getCheckpointId(), ops, md.getMasterStates(), md.getCheckpointProperties()),
                    o);
        }
        return dir;
    }

    /** The original subtask whose key groups hold the first key group of range. */
    private static int sourceSubtask(OperatorState op, int maxParallelism, KeyGroupRange range) {
        return KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup(
                maxParallelism, op.getParallelism(), range.getStartKeyGroup());
    }
}
