package io.github.kcleanup.flinkjob;

import java.io.Serializable;
import java.util.Properties;

/** Where the action-state writer writes: the broker, the data topic and its partitions. */
public class WriterSpec implements Serializable {
    private static final long serialVersionUID = 1L;

    final Properties client;
    final String topic;
    final String topicId;
    final int partitions;

    WriterSpec(Properties client, String topic, String topicId, int partitions) {
        this.client = client;
        this.topic = topic;
        this.topicId = topicId;
        this.partitions = partitions;
    }
}
