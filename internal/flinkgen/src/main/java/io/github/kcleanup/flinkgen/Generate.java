package io.github.kcleanup.flinkgen;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import org.apache.flink.agents.runtime.actionstate.KafkaActionStateRecoveryMarker;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackend;
import org.apache.flink.runtime.state.memory.ByteStreamStateHandle;
import org.apache.flink.runtime.util.EnvironmentInformation;
import org.apache.flink.state.api.OperatorIdentifier;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.util.TestStreamEnvironment;
import org.apache.flink.util.CloseableIterator;

/**
 * Runs the jobs of one Flink line on a MiniCluster, takes their snapshots, reads every marker
 * operator's union state back with the State Processor API and writes the line's cases.
 *
 * <pre>
 *   Generate line LINE OUTDIR     one line (e.g. flink-1.20): OUTDIR/LINE/..., OUTDIR/LINE/cases.json
 *   Generate merge OUTDIR LINE... OUTDIR/manifest.json from the lines' cases.json
 * </pre>
 */
public final class Generate {
    static final String STATE = "recoveryMarker";
    static final String MARKERS = "action-state-markers";
    static final int METADATA_MAGIC = 0x4960672d;

    private static final ObjectMapper JSON =
            new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private final MiniCluster cluster;
    private final String line;
    private final Path root; // OUTDIR: manifest paths are relative to it
    private final String flinkVersion = EnvironmentInformation.getVersion();
    private final List<Map<String, Object>> cases = new ArrayList<>();

    private Generate(MiniCluster cluster, String line, Path root) {
        this.cluster = cluster;
        this.line = line;
        this.root = root;
    }

    public static void main(String[] args) throws Exception {
        if (args.length >= 3 && args[0].equals("line")) {
            runLine(args[1], Path.of(args[2]).toAbsolutePath());
        } else if (args.length >= 3 && args[0].equals("merge")) {
            merge(Path.of(args[1]), List.of(args).subList(2, args.length));
        } else {
            System.err.println("usage: Generate line LINE OUTDIR | merge OUTDIR LINE...");
            System.exit(2);
        }
    }

    /** The jobs of every line: each case of the list is one snapshot of one of them. */
    static List<JobSpec> jobs() {
        List<JobSpec> jobs = new ArrayList<>();
        jobs.add(
                new JobSpec("hashmap-p1", "", "hashmap", false, 1,
                                List.of(MarkerSpec.of(MARKERS, "actions", topicId("actions"), 4)))
                        .nativeSavepoint()
                        .notes("keyed operators before and after the marker operator"));
        jobs.add(
                new JobSpec("hashmap-p2", "", "hashmap", false, 2,
                                List.of(MarkerSpec.of(MARKERS, "actions-🦀", topicId("crab"), 3)
                                        .withLegacyOn(0)))
                        .nativeSavepoint()
                        .notes("topic with a non-BMP character (emoji); subtask 0 also holds a"
                                + " legacy Map<Integer, Long> marker; keyed operators before and"
                                + " after"));
        jobs.add(
                new JobSpec("rocksdb-p3", "", "rocksdb", true, 3,
                                List.of(MarkerSpec.of(MARKERS, "aktionen-zustände",
                                        topicId("zustaende"), 5)))
                        .checkpoints(2)
                        .nativeSavepoint()
                        .movedSavepoint("savepoint-native")
                        .notes("non-ASCII BMP topic; RocksDB keyed state before and after; the"
                                + " checkpoint is the second incremental one (shares files with"
                                + " the first)"));
        jobs.add(
                new JobSpec("rocksdb-p4", "", "rocksdb", true, 4,
                                List.of(MarkerSpec.of(MARKERS, "事件-🦀-actions",
                                        topicId("cjk-crab"), 6).withLegacyOn(3)))
                        .checkpoints(2)
                        .nativeSavepoint()
                        .notes("topic with CJK and an emoji; subtask 3 also holds a legacy marker;"
                                + " second incremental checkpoint"));
        jobs.add(
                new JobSpec("unaligned-p2", "", "hashmap", false, 2,
                                List.of(MarkerSpec.of(MARKERS, "actions", topicId("unaligned"), 2)))
                        .unaligned()
                        .canonical(false)
                        .notes("unaligned checkpoint under backpressure (the keyed operator after"
                                + " the marker operator sleeps): channel state in the metadata"));
        jobs.add(
                new JobSpec("large-union-p2", "-large-union", "hashmap", false, 2,
                                List.of(MarkerSpec.of(MARKERS, "actions-large", topicId("large"),
                                        4000)))
                        .movedSavepoint("savepoint-canonical")
                        .notes("4000 partitions per marker: each subtask's operator state is above"
                                + " the inline threshold, so it is in a file of its own"));
        jobs.add(
                new JobSpec("compressed-p2", "-compressed", "rocksdb", true, 2,
                                List.of(MarkerSpec.of(MARKERS, "actions", topicId("snappy"), 3)))
                        .compression()
                        .notes("execution.checkpointing.snapshot-compression on (Snappy)"));
        jobs.add(
                new JobSpec("changelog-p2", "-changelog", "hashmap", false, 2,
                                List.of(MarkerSpec.of(MARKERS, "actions", topicId("changelog"), 3)))
                        .changelog()
                        .checkpoints(2)
                        .canonical(false)
                        .notes("changelog state backend over hashmap (state.changelog.enabled):"
                                + " keyed state as changelog handles, materialized part included"));
        jobs.add(
                new JobSpec("two-markers-p2", "-two-marker-operators", "hashmap", false, 2,
                                List.of(MarkerSpec.of(MARKERS, "actions", topicId("first"), 2),
                                        MarkerSpec.of(MARKERS + "-b", "actions-🦀",
                                                topicId("second"), 3).withBase(5000)))
                        .notes("two operators hold recoveryMarker (different uids, topics and"
                                + " offsets): expectedByUid"));
        jobs.add(
                new JobSpec("no-marker-state-p2", "-no-marker-state", "hashmap", false, 2,
                                List.of(MarkerSpec.of(MARKERS, "actions", topicId("other"), 2)
                                        .withStateName("otherState")))
                        .checkpoints(0)
                        .notes("the operator with the marker uid holds union state 'otherState',"
                                + " no 'recoveryMarker'"));
        jobs.add(
                new JobSpec("empty-marker-state-p2", "-empty-marker-state", "hashmap", false, 2,
                                List.of(MarkerSpec.of(MARKERS, "actions", topicId("empty"), 2)
                                        .emptyState()))
                        .checkpoints(0)
                        .notes("recoveryMarker is registered but every subtask left it empty"));
        return jobs;
    }

    /** A 22-character Kafka topic ID (URL-safe base64 of 16 bytes), fixed per name. */
    static String topicId(String name) {
        UUID u = UUID.nameUUIDFromBytes(("kcleanup-flinkgen/" + name).getBytes(StandardCharsets.UTF_8));
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(16);
        b.putLong(u.getMostSignificantBits()).putLong(u.getLeastSignificantBits());
        return Base64.getUrlEncoder().withoutPadding().encodeToString(b.array());
    }

    static void runLine(String line, Path root) throws Exception {
        Configuration conf = new Configuration();
        conf.setString("taskmanager.memory.managed.size", "128m");
        // Small network buffers fill quickly under backpressure: the unaligned checkpoint then
        // has channel state without a long wait.
        conf.setString("taskmanager.memory.segment-size", "4kb");
        conf.setString("rest.bind-port", "0");
        // The changelog's storage is the task manager's, not the job's: for the changelog job,
        // files as in production (without it, the changes are inline in the metadata).
        conf.setString("state.changelog.storage", "filesystem");
        conf.setString("state.changelog.dstl.dfs.base-path",
                root.resolve(line).resolve("changelog").toUri().toString());
        MiniCluster cluster =
                new MiniCluster(
                        new MiniClusterConfiguration.Builder()
                                .setConfiguration(conf)
                                .setNumTaskManagers(1)
                                .setNumSlotsPerTaskManager(4)
                                .build());
        cluster.start();
        TestStreamEnvironment.setAsContext(cluster, 1);
        try {
            Generate g = new Generate(cluster, line, root);
            for (JobSpec job : jobs()) {
                long t0 = System.nanoTime();
                g.run(job);
                System.err.printf(
                        "flinkgen: %s/%s in %.1f s%n", line, job.dir, (System.nanoTime() - t0) / 1e9);
            }
            Path out = root.resolve(line).resolve("cases.json");
            Files.createDirectories(out.getParent());
            JSON.writeValue(out.toFile(), g.cases);
        } finally {
            TestStreamEnvironment.unsetAsContext();
            cluster.close();
        }
    }

    static void merge(Path root, List<String> lines) throws IOException {
        List<Object> all = new ArrayList<>();
        for (String l : lines) {
            all.addAll(JSON.readValue(root.resolve(l).resolve("cases.json").toFile(), List.class));
        }
        Path tmp = root.resolve("manifest.json.tmp");
        JSON.writeValue(tmp.toFile(), Map.of("cases", all));
        Files.move(tmp, root.resolve("manifest.json"), StandardCopyOption.ATOMIC_MOVE);
    }

    private void run(JobSpec job) throws Exception {
        Path dir = root.resolve(line).resolve(job.dir);
        Path checkpoints = dir.resolve("checkpoints");
        Path savepoints = dir.resolve("savepoints");
        Map<String, String> c = new HashMap<>();
        c.put("state.backend.type", job.backend);
        both(c, "execution.checkpointing.incremental", "state.backend.incremental",
                Boolean.toString(job.incremental));
        both(c, "execution.checkpointing.dir", "state.checkpoints.dir", checkpoints.toUri().toString());
        both(c, "execution.checkpointing.savepoint-dir", "state.savepoints.dir",
                savepoints.toUri().toString());
        both(c, "execution.checkpointing.num-retained", "state.checkpoints.num-retained", "1");
        c.put("execution.checkpointing.interval", "1 h"); // only the snapshots triggered below
        c.put("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION");
        both(c, "execution.checkpointing.unaligned.enabled", "execution.checkpointing.unaligned",
                Boolean.toString(job.unaligned));
        c.put("execution.checkpointing.snapshot-compression", Boolean.toString(job.compression));
        c.put("state.backend.rocksdb.memory.managed", "true");
        c.put("restart-strategy.type", "none"); // a failure ends the job and the generation
        c.put("state.changelog.enabled", Boolean.toString(job.changelog));
        if (job.changelog) {
            c.put("state.changelog.periodic-materialize.interval", "300 ms");
        }

        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.getExecutionEnvironment(Configuration.fromMap(c));
        env.setParallelism(job.parallelism);
        DataStream<Long> s = env.fromSequence(0, Long.MAX_VALUE).uid("source").name("source");
        // Throttled where it is chained to the source, so no backlog builds up in the network
        // buffers for an aligned barrier to wait behind; unthrottled for the unaligned case.
        s = s.map(new Throttle(job.unaligned ? 0 : 1)).uid("throttle").name("throttle");
        s = s.keyBy(new Mod()).map(new KeyedCounter(0)).uid("keyed-before").name("keyed-before");
        for (MarkerSpec m : job.markers) {
            s = s.map(new MarkerFunction(m)).uid(m.uid).name(m.uid);
        }
        s = s.keyBy(new Mod()).map(new KeyedCounter(job.unaligned ? 2 : 0)).uid("keyed-after")
                .name("keyed-after");
        s.map(new Identity()).uid("last").name("last").sinkTo(new DiscardingSink<>()).uid("sink");

        JobClient client = env.executeAsync(line + "/" + job.dir);
        JobID id = client.getJobID();
        try {
            String base = line + "/" + job.checkpointBackend();
            String suffix = "/p" + job.parallelism + job.variant;
            String kind = job.unaligned ? "checkpoint-unaligned" : "checkpoint";
            if (job.unaligned) {
                Thread.sleep(1000); // let backpressure fill the buffers
            }
            String last = null;
            for (int i = 0; i < job.checkpoints; i++) {
                if (i > 0 && job.changelog) {
                    Thread.sleep(1000); // a materialization between the checkpoints
                }
                last = retry(() -> cluster.triggerCheckpoint(id).get());
            }
            // An unaligned checkpoint taken before the buffers filled has no channel state: take
            // another (the retained one is the last).
            for (int i = 0; job.unaligned && i < 10 && channelState(last) == 0; i++) {
                Thread.sleep(500);
                last = retry(() -> cluster.triggerCheckpoint(id).get());
            }
            if (job.checkpoints == 0) {
                // No checkpoint has shown that every task runs: wait for them before a savepoint.
                waitRunning(id);
            }
            String canonical = job.canonical
                    ? retry(() -> cluster.triggerSavepoint(id, savepoints.toUri().toString(), false,
                            SavepointFormatType.CANONICAL).get())
                    : null;
            String nativeSp = job.nativeSavepoint
                    ? retry(() -> cluster.triggerSavepoint(id, savepoints.toUri().toString(), false,
                            SavepointFormatType.NATIVE).get())
                    : null;
            String moved = job.movedSavepoint == null
                    ? null
                    : retry(() -> cluster.triggerSavepoint(id, savepoints.toUri().toString(), false,
                            job.movedSavepoint.equals("savepoint-native")
                                    ? SavepointFormatType.NATIVE
                                    : SavepointFormatType.CANONICAL).get());
            client.cancel().get();
            cluster.requestJobResult(id).get();
            String spBackend = line + "/" + job.backend;
            if (last != null) {
                addCase(job, base + "/" + kind + suffix, job.checkpointBackend(), kind, last);
            }
            if (canonical != null) {
                addCase(job, spBackend + "/savepoint-canonical" + suffix, job.backend,
                        "savepoint-canonical", canonical);
            }
            if (nativeSp != null) {
                addCase(job, spBackend + "/savepoint-native" + suffix, job.backend,
                        "savepoint-native", nativeSp);
            }
            if (moved != null) {
                // Savepoints are self-contained and may be moved: the files they name are found
                // relative to the directory, and the original place no longer exists.
                Path from = Path.of(new org.apache.flink.core.fs.Path(moved).toUri().getPath());
                Path to = dir.resolve("moved").resolve(from.getFileName());
                Files.createDirectories(to.getParent());
                Files.move(from, to);
                String saved = job.notes;
                job.notes = saved + "; this savepoint was moved from " + root.relativize(from)
                        + " after it was written (the original directory is gone)";
                addCase(job, spBackend + "/" + job.movedSavepoint + suffix + "-moved", job.backend,
                        job.movedSavepoint, to.toUri().toString());
                job.notes = saved;
            }
        } catch (Exception e) {
            client.cancel();
            throw e;
        }
    }

    private static long channelState(String pointer) throws IOException {
        return Metadata.read(Path.of(new org.apache.flink.core.fs.Path(pointer).toUri().getPath()))
                .channelStateHandles;
    }

    private void waitRunning(JobID id) throws Exception {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (true) {
            var graph = cluster.getExecutionGraph(id).get();
            boolean running = true;
            for (var v : graph.getAllExecutionVertices()) {
                running &= v.getExecutionState() == org.apache.flink.runtime.execution.ExecutionState.RUNNING;
            }
            if (running) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("job " + id + " did not start within 60 s");
            }
            Thread.sleep(100);
        }
    }

    private static void both(Map<String, String> c, String key, String olderKey, String value) {
        c.put(key, value);
        c.put(olderKey, value);
    }

    interface Call<T> {
        T call() throws Exception;
    }

    /** Retries while the job's tasks are still starting (a snapshot needs every task running). */
    private static <T> T retry(Call<T> call) throws Exception {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (true) {
            try {
                return call.call();
            } catch (ExecutionException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
    }

    private void addCase(JobSpec job, String name, String backend, String kind, String pointer)
            throws Exception {
        Path path = Path.of(new org.apache.flink.core.fs.Path(pointer).toUri().getPath());
        Map<String, Object> k = new LinkedHashMap<>();
        k.put("name", name);
        k.put("flinkVersion", flinkVersion);
        k.put("backend", backend);
        k.put("kind", kind);
        k.put("path", root.relativize(path).toString());
        k.put("parallelism", job.parallelism);

        Metadata md = Metadata.read(path);
        k.put("metadataVersion", md.version);
        k.put("checkpointId", md.checkpointId);
        List<Map<String, Object>> ops = new ArrayList<>();
        Map<String, Object> byUid = new LinkedHashMap<>();
        for (MarkerSpec m : job.markers) {
            String hash = OperatorIdentifier.forUid(m.uid).getOperatorId().toHexString();
            OperatorState op = md.operators.get(hash);
            if (op == null) {
                throw new IllegalStateException(
                        name + ": the metadata has no operator " + hash + " (uid " + m.uid
                                + "); it has " + md.operators.keySet());
            }
            String uidInMetadata = uidOf(op);
            if (uidInMetadata != null && !uidInMetadata.equals(m.uid)) {
                throw new IllegalStateException(
                        name + ": operator " + hash + " has uid " + uidInMetadata + ", not " + m.uid);
            }
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("uid", m.uid);
            o.put("uidHash", hash);
            o.put("stateNames", stateNames(op));
            o.put("stateInline", inline(op));
            ops.add(o);
            byUid.put(m.uid, expected(path, backend, m.uid));
        }
        k.put("markerOperators", ops);
        k.put("keyedHandleKinds", new ArrayList<>(md.keyedHandleKinds));
        if (job.markers.size() == 1) {
            k.put("expected", byUid.values().iterator().next());
        } else {
            k.put("expectedByUid", byUid);
        }
        String notes = job.notes;
        if (job.unaligned) {
            notes += "; channel state handles: " + md.channelStateHandles;
            if (md.channelStateHandles == 0) {
                throw new IllegalStateException(name + ": the unaligned checkpoint has no channel state");
            }
        }
        k.put("notes", notes);
        check(job, kind, k, md);
        cases.add(k);
    }

    /**
     * Fails the generation when a case does not hold what its job was set up to make: a setting
     * that a Flink version renamed or ignores would otherwise yield a case that tests nothing.
     */
    @SuppressWarnings("unchecked")
    private static void check(JobSpec job, String kind, Map<String, Object> k, Metadata md) {
        String name = (String) k.get("name");
        List<String> problems = new ArrayList<>();
        if (kind.startsWith("checkpoint") && job.backend.equals("rocksdb") && job.incremental
                && !md.keyedHandleKinds.contains("IncrementalRemoteKeyedStateHandle")) {
            problems.add("no incremental RocksDB handle: " + md.keyedHandleKinds);
        }
        if (job.changelog
                && (md.keyedHandleKinds.stream().noneMatch(h -> h.startsWith("materialized:"))
                        || !md.keyedHandleKinds.contains("changelog:ChangelogStateHandleStreamImpl"))) {
            problems.add("a changelog handle with materialized and file-backed changelog parts expected: "
                    + md.keyedHandleKinds);
        }
        if (kind.startsWith("checkpoint") && job.backend.equals("hashmap") && !job.changelog
                && !md.keyedHandleKinds.equals(new TreeSet<>(List.of("KeyGroupsStateHandle")))) {
            problems.add("keyed handles of the hashmap backend expected: " + md.keyedHandleKinds);
        }
        if (kind.equals("savepoint-canonical")
                && !md.keyedHandleKinds.equals(new TreeSet<>(List.of("KeyGroupsSavepointStateHandle")))) {
            problems.add("canonical savepoint handles expected: " + md.keyedHandleKinds);
        }
        List<Map<String, Object>> ops = (List<Map<String, Object>>) k.get("markerOperators");
        for (int i = 0; i < job.markers.size(); i++) {
            MarkerSpec m = job.markers.get(i);
            Map<String, Object> o = ops.get(i);
            List<String> names = (List<String>) o.get("stateNames");
            if (!names.equals(List.of(m.stateName))) {
                problems.add(m.uid + ": state names " + names + ", expected [" + m.stateName + "]");
            }
            boolean large = m.partitions >= 1000;
            if ((Boolean) o.get("stateInline") == large) {
                problems.add(m.uid + ": operator state inline=" + o.get("stateInline"));
            }
            Map<String, Object> expected =
                    job.markers.size() == 1
                            ? (Map<String, Object>) k.get("expected")
                            : (Map<String, Object>) ((Map<String, Object>) k.get("expectedByUid")).get(m.uid);
            boolean holds = !m.empty && m.stateName.equals(STATE);
            int markers = ((List<Object>) expected.get("markers")).size();
            int legacy = ((List<Object>) expected.get("legacy")).size();
            if (markers != (holds ? job.parallelism : 0)) {
                problems.add(m.uid + ": " + markers + " markers read for parallelism " + job.parallelism);
            }
            if (legacy != (holds && m.legacySubtask >= 0 ? 1 : 0)) {
                problems.add(m.uid + ": " + legacy + " legacy markers read");
            }
        }
        if (!problems.isEmpty()) {
            throw new IllegalStateException(name + ": " + String.join("; ", problems));
        }
    }

    /** The uid the metadata names (version 5 on, Flink 2.x), or null where it has none. */
    private static String uidOf(OperatorState op) throws Exception {
        java.lang.reflect.Method get;
        try {
            get = OperatorState.class.getMethod("getOperatorUid");
        } catch (NoSuchMethodException e) {
            return null; // Flink 1.x: the metadata has only the operator ID
        }
        return ((java.util.Optional<?>) get.invoke(op)).map(Object::toString).orElse(null);
    }

    private static List<String> stateNames(OperatorState op) {
        TreeSet<String> names = new TreeSet<>();
        for (OperatorSubtaskState s : op.getStates()) {
            for (OperatorStateHandle h : s.getManagedOperatorState()) {
                names.addAll(h.getStateNameToPartitionOffsets().keySet());
            }
        }
        return new ArrayList<>(names);
    }

    /** Whether every subtask's operator state is inline in the metadata (not in a file). */
    private static boolean inline(OperatorState op) {
        boolean inline = true;
        for (OperatorSubtaskState s : op.getStates()) {
            for (OperatorStateHandle h : s.getManagedOperatorState()) {
                inline &= h.getDelegateStateHandle() instanceof ByteStreamStateHandle;
            }
        }
        return inline;
    }

    /** What Flink's State Processor API reads from the union state of the operator uid. */
    private Map<String, Object> expected(Path path, String backend, String uid) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        SavepointReader reader = SavepointReader.read(env, path.toUri().toString(), stateBackend(backend));
        DataStream<Object> state =
                reader.readUnionState(
                        OperatorIdentifier.forUid(uid), STATE, TypeInformation.of(Object.class));
        List<Object> markers = new ArrayList<>();
        List<Object> legacy = new ArrayList<>();
        try (CloseableIterator<Object> it = state.executeAndCollect()) {
            while (it.hasNext()) {
                Object e = it.next();
                if (e instanceof KafkaActionStateRecoveryMarker) {
                    KafkaActionStateRecoveryMarker m = (KafkaActionStateRecoveryMarker) e;
                    Map<String, Object> j = new LinkedHashMap<>();
                    j.put("schemaVersion", m.getSchemaVersion());
                    j.put("topic", m.getTopic());
                    j.put("topicId", m.getTopicId());
                    j.put("offsets", offsets(m.getOffsets()));
                    markers.add(j);
                } else if (e instanceof Map) {
                    legacy.add(offsets((Map<?, ?>) e));
                } else {
                    throw new IllegalStateException("unexpected element " + e.getClass() + " in " + path);
                }
            }
        }
        Map<String, Object> x = new LinkedHashMap<>();
        x.put("markers", markers);
        x.put("legacy", legacy);
        return x;
    }

    private static Map<String, Long> offsets(Map<?, ?> m) {
        TreeMap<Integer, Long> sorted = new TreeMap<>();
        m.forEach((p, o) -> sorted.put((Integer) p, (Long) o));
        Map<String, Long> out = new LinkedHashMap<>();
        sorted.forEach((p, o) -> out.put(Integer.toString(p), o));
        return out;
    }

    /** The backend the reader is given; its class moved between Flink 1.x and 2.x. */
    static StateBackend stateBackend(String backend) throws Exception {
        if (backend.equals("hashmap")) {
            return new HashMapStateBackend();
        }
        for (String cls :
                List.of(
                        "org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackend",
                        "org.apache.flink.contrib.streaming.state.EmbeddedRocksDBStateBackend")) {
            try {
                return (StateBackend) Class.forName(cls).getDeclaredConstructor().newInstance();
            } catch (ClassNotFoundException e) {
                // the other line's name
            }
        }
        throw new IllegalStateException("no EmbeddedRocksDBStateBackend on the classpath");
    }

    /** What Flink itself reads from a snapshot's _metadata. */
    static final class Metadata {
        int version;
        long checkpointId;
        long channelStateHandles;
        final TreeSet<String> keyedHandleKinds = new TreeSet<>();
        final Map<String, OperatorState> operators = new TreeMap<>();

        /** A handle's class name; a changelog handle's parts too, as materialized:X, changelog:Y. */
        void addKeyedKind(org.apache.flink.runtime.state.KeyedStateHandle h) {
            keyedHandleKinds.add(h.getClass().getSimpleName());
            if (h instanceof org.apache.flink.runtime.state.changelog.ChangelogStateBackendHandle) {
                var c = (org.apache.flink.runtime.state.changelog.ChangelogStateBackendHandle) h;
                c.getMaterializedStateHandles()
                        .forEach(m -> keyedHandleKinds.add("materialized:" + m.getClass().getSimpleName()));
                c.getNonMaterializedStateHandles()
                        .forEach(m -> keyedHandleKinds.add("changelog:" + m.getClass().getSimpleName()));
            }
        }

        static Metadata read(Path dir) throws IOException {
            Path file = dir.resolve("_metadata");
            Metadata md = new Metadata();
            try (InputStream raw = Files.newInputStream(file);
                    DataInputStream in = new DataInputStream(raw)) {
                int magic = in.readInt();
                if (magic != METADATA_MAGIC) {
                    throw new IOException(file + ": not a Flink _metadata file");
                }
                md.version = in.readInt();
            }
            CheckpointMetadata m;
            try (InputStream raw = Files.newInputStream(file);
                    DataInputStream in = new DataInputStream(raw)) {
                m = Checkpoints.loadCheckpointMetadata(
                        in, Generate.class.getClassLoader(), dir.toString());
            }
            md.checkpointId = m.getCheckpointId();
            for (OperatorState op : m.getOperatorStates()) {
                md.operators.put(op.getOperatorID().toHexString(), op);
                for (OperatorSubtaskState s : op.getStates()) {
                    s.getManagedKeyedState().forEach(md::addKeyedKind);
                    md.channelStateHandles +=
                            s.getInputChannelState().size() + s.getResultSubpartitionState().size();
                }
            }
            return md;
        }
    }

    static final class Mod implements KeySelector<Long, Integer> {
        @Override
        public Integer getKey(Long v) {
            return (int) (v % 64);
        }
    }

    static final class Throttle implements MapFunction<Long, Long> {
        private final long sleepMillis;

        Throttle(long sleepMillis) {
            this.sleepMillis = sleepMillis;
        }

        @Override
        public Long map(Long v) throws InterruptedException {
            if (sleepMillis > 0) {
                Thread.sleep(sleepMillis);
            }
            return v;
        }
    }

    static final class Identity implements MapFunction<Long, Long> {
        @Override
        public Long map(Long v) {
            return v;
        }
    }
}
