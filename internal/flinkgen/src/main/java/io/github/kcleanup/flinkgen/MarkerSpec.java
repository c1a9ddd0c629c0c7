package io.github.kcleanup.flinkgen;

import java.io.Serializable;

/** What one marker operator writes: its uid, its state's name, the topic and partitions. */
public class MarkerSpec implements Serializable {
    private static final long serialVersionUID = 1L;

    final String uid;
    final String stateName;
    final String topic;
    final String topicId;
    final int partitions;
    final long base;
    /** The subtask that also adds a legacy Map<Integer, Long> marker; -1 for none. */
    final int legacySubtask;
    /** The state is registered but holds nothing. */
    final boolean empty;

    MarkerSpec(
            String uid,
            String stateName,
            String topic,
            String topicId,
            int partitions,
            long base,
            int legacySubtask,
            boolean empty) {
        this.uid = uid;
        this.stateName = stateName;
        this.topic = topic;
        this.topicId = topicId;
        this.partitions = partitions;
        this.base = base;
        this.legacySubtask = legacySubtask;
        this.empty = empty;
    }

    static MarkerSpec of(String uid, String topic, String topicId, int partitions) {
        return new MarkerSpec(uid, "recoveryMarker", topic, topicId, partitions, 100, -1, false);
    }

    MarkerSpec withLegacyOn(int subtask) {
        return new MarkerSpec(uid, stateName, topic, topicId, partitions, base, subtask, empty);
    }

    MarkerSpec withStateName(String name) {
        return new MarkerSpec(uid, name, topic, topicId, partitions, base, legacySubtask, empty);
    }

    MarkerSpec withBase(long b) {
        return new MarkerSpec(uid, stateName, topic, topicId, partitions, b, legacySubtask, empty);
    }

    MarkerSpec emptyState() {
        return new MarkerSpec(uid, stateName, topic, topicId, partitions, base, legacySubtask, true);
    }
}
