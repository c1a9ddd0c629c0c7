package io.github.kcleanup.flinkjob;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.flink.agents.runtime.actionstate.KafkaActionStateRecoveryMarker;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Flink Agents' action-state operator in small: every input becomes one action-state record
 * "S:P:N" on partition P of the data topic (S is the subtask, N counts S's records on P), written
 * at least once with the plain Kafka producer; every subtask writes every partition. At every
 * snapshot it flushes and keeps, in the union list state recoveryMarker, the offset where its
 * next record on each partition goes: a job restored from that snapshot writes records N again
 * from there, so everything from the markers' minimum on is what recovery reads. Restored, each
 * subtask first reads every partition from that minimum and prints one "restore-check" line per
 * partition saying whether every record of its own from the snapshot on is still in the log.
 */
public class ActionStateWriter extends RichMapFunction<Long, Long> implements CheckpointedFunction {
    private static final long serialVersionUID = 1L;

    private final WriterSpec spec;
    private transient ListState<Object> markers;
    private transient ListState<Object> counters;
    private transient int self;
    private transient List<Integer> owned;
    /** Per owned partition: the next record's N, and the offset the next record will take. */
    private transient Map<Integer, Long> next;
    private transient Map<Integer, Long> end;
    private transient KafkaProducer<String, String> producer;
    private transient AtomicReference<Exception> failed;

    public ActionStateWriter(WriterSpec spec) {
        this.spec = spec;
    }

    @Override
    public void initializeState(FunctionInitializationContext context) throws Exception {
        int subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        self = subtask;
        owned = new ArrayList<>();
        for (int p = 0; p < spec.partitions; p++) {
            owned.add(p);
        }
        var store = context.getOperatorStateStore();
        markers = store.getUnionListState(
                new ListStateDescriptor<>("recoveryMarker", TypeInformation.of(Object.class)));
        counters = store.getUnionListState(
                new ListStateDescriptor<>("counters", TypeInformation.of(Object.class)));
        next = new HashMap<>();
        end = new HashMap<>();
        for (int p : owned) {
            next.put(p, 0L);
        }
        Map<Integer, Long> restoredAt = new HashMap<>();
        if (context.isRestored()) {
            // Union state: every subtask sees every marker; a partition's is the minimum.
            for (Object o : markers.get()) {
                var m = (KafkaActionStateRecoveryMarker) o;
                m.getOffsets().forEach((p, off) -> restoredAt.merge(p, off, Math::min));
            }
            for (Object o : counters.get()) {
                @SuppressWarnings("unchecked")
                var c = (Map<String, Long>) o;
                for (int p : owned) {
                    Long n = c.get(self + ":" + p);
                    if (n != null) next.put(p, n);
                }
            }
        }
        try (var consumer = consumer()) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p : owned) tps.add(new TopicPartition(spec.topic, p));
            Map<TopicPartition, Long> ends = consumer.endOffsets(tps, Duration.ofSeconds(30));
            Map<TopicPartition, Long> starts = consumer.beginningOffsets(tps, Duration.ofSeconds(30));
            for (TopicPartition tp : tps) {
                int p = tp.partition();
                if (restoredAt.containsKey(p)) {
                    check(consumer, tp, restoredAt.get(p), starts.get(tp), ends.get(tp), next.get(p));
                }
                // This run's records go after everything already in the log.
                end.put(p, ends.get(tp));
            }
        }
        Properties pc = new Properties();
        pc.putAll(spec.client);
        pc.put("key.serializer", StringSerializer.class.getName());
        pc.put("value.serializer", StringSerializer.class.getName());
        pc.put("acks", "all");
        pc.put("linger.ms", "5");
        producer = new KafkaProducer<>(pc);
        failed = new AtomicReference<>();
    }

    /**
     * Reads TP from the restored markers' minimum FROM to END: this subtask's records there from
     * N = WANT on must be WANT, WANT+1, ... with none missing, and FROM must not be below the log
     * start. Other subtasks' records, and this one's from before the snapshot, are passed over.
     */
    private void check(KafkaConsumer<String, String> consumer, TopicPartition tp, long from,
            long logStart, long end, long want) {
        String where = String.format("subtask=%d partition=%d from=%d logStart=%d end=%d",
                self, tp.partition(), from, logStart, end);
        if (logStart > from) {
            System.out.printf("restore-check missing %s: the log starts above the marker%n", where);
            return;
        }
        consumer.assign(List.of(tp));
        consumer.seek(tp, from);
        long expectOffset = from, n = want, count = 0;
        long deadline = System.currentTimeMillis() + 30_000;
        while (expectOffset < end && System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                if (r.offset() >= end) break;
                expectOffset = r.offset() + 1;
                String[] f = r.value().split(":");
                long got = Long.parseLong(f[2]);
                if (Integer.parseInt(f[0]) != self || (count == 0 && got < want)) {
                    continue;
                }
                if (got != n) {
                    System.out.printf("restore-check missing %s: offset %d holds %s, wanted N=%d%n",
                            where, r.offset(), r.value(), n);
                    return;
                }
                n++;
                count++;
            }
        }
        if (expectOffset < end) {
            System.out.printf("restore-check missing %s: read only to offset %d%n", where, expectOffset);
            return;
        }
        if (count == 0) {
            System.out.printf("restore-check missing %s: no record of this subtask from N=%d%n", where, want);
            return;
        }
        System.out.printf("restore-check ok %s records=%d%n", where, count);
    }

    private KafkaConsumer<String, String> consumer() {
        Properties cc = new Properties();
        cc.putAll(spec.client);
        cc.put("key.deserializer", StringDeserializer.class.getName());
        cc.put("value.deserializer", StringDeserializer.class.getName());
        cc.put("enable.auto.commit", "false");
        cc.put("isolation.level", "read_uncommitted");
        return new KafkaConsumer<>(cc);
    }

    @Override
    public Long map(Long value) throws Exception {
        Exception e = failed.get();
        if (e != null) throw e;
        int p = owned.get((int) (value % owned.size()));
        long n = next.get(p);
        next.put(p, n + 1);
        String key = self + ":" + p + ":" + n; // keyed and unique: the data topic may be compacted
        producer.send(new ProducerRecord<>(spec.topic, p, key, key), (md, err) -> {
            if (err != null) {
                failed.compareAndSet(null, err);
            } else {
                synchronized (this) {
                    end.merge(p, md.offset() + 1, Math::max);
                }
            }
        });
        return value;
    }

    @Override
    public void snapshotState(FunctionSnapshotContext context) throws Exception {
        producer.flush(); // every record sent before the barrier has its offset now
        Exception e = failed.get();
        if (e != null) throw e;
        Map<Integer, Long> offsets;
        synchronized (this) {
            offsets = new HashMap<>(end);
        }
        markers.clear();
        markers.add(new KafkaActionStateRecoveryMarker(1, spec.topic, spec.topicId, offsets));
        counters.clear();
        HashMap<String, Long> mine = new HashMap<>();
        next.forEach((p, n) -> mine.put(self + ":" + p, n));
        counters.add(mine);
    }

    @Override
    public void close() {
        if (producer != null) producer.close(Duration.ofSeconds(5));
    }
}
