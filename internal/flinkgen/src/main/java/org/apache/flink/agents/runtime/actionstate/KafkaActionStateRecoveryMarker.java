package org.apache.flink.agents.runtime.actionstate;

import java.io.Serializable;
import java.util.HashMap;
import java.util.Map;

/**
 * A stand-in for Flink Agents' recovery marker with the same class name and the same fields in
 * the same order: Flink's Kryo serializer writes the class name and the fields, so the bytes in
 * the state are those Flink Agents' operator writes.
 */
public class KafkaActionStateRecoveryMarker implements Serializable {
    private static final long serialVersionUID = 1L;

    private final int schemaVersion;
    private final String topic;
    private final String topicId;
    private final Map<Integer, Long> offsets;

    public KafkaActionStateRecoveryMarker(
            int schemaVersion, String topic, String topicId, Map<Integer, Long> offsets) {
        this.schemaVersion = schemaVersion;
        this.topic = topic;
        this.topicId = topicId;
        this.offsets = new HashMap<>(offsets);
    }

    public int getSchemaVersion() {
        return schemaVersion;
    }

    public String getTopic() {
        return topic;
    }

    public String getTopicId() {
        return topicId;
    }

    public Map<Integer, Long> getOffsets() {
        return offsets;
    }
}
