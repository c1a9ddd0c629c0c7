package io.github.kcleanup.flinkjob;

import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;

/**
 * The job in the loop (issue 32 item 4), on a MiniCluster in this JVM:
 *
 * <pre>
 *   Job --bootstrap HOST:PORT --topic T --checkpoints DIR [--parallelism 2] [--rate 200]
 *       [--client-props FILE] [--restore PATH] [--create PARTITIONS] [--s3-endpoint URL]
 * </pre>
 *
 * A throttled sequence feeds {@link ActionStateWriter}, which writes to T (it must exist, or --create
 * makes it; every partition is written). Checkpoints every second into DIR/JOBID/chk-N, three retained, kept on
 * cancel. DIR is a local directory or an s3://bucket/prefix URI, written by Flink's S3 filesystem
 * (flink-s3-fs-hadoop, found on the classpath): --s3-endpoint names an S3-compatible server (then
 * addressed path-style), and AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, when set, are its
 * credentials. Driven on stdin, one command a line, each answered with one line on stdout:
 *
 * <pre>
 *   savepoint DIR   "savepoint PATH"  a canonical savepoint under DIR
 *   stop            "stopped"         cancels the job (its retained checkpoints stay) and exits
 * </pre>
 *
 * End of stdin stops it too. Once running it prints "running JOBID DIR/JOBID". Restored from
 * PATH, the writer's subtasks print "restore-check ok|missing ..." lines first.
 */
public class Job {
    public static void main(String[] argv) {
        try {
            run(argv);
        } catch (Throwable t) { // the MiniCluster's threads would keep the JVM up
            t.printStackTrace();
            fail(t.toString());
        }
    }

    private static void run(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>(Map.of("parallelism", "2", "rate", "200"));
        for (int i = 0; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--")) usage("unexpected argument " + argv[i]);
            if (i + 1 == argv.length) usage(argv[i] + " needs a value");
            a.put(argv[i].substring(2), argv[i + 1]);
        }
        for (String k : a.keySet()) {
            if (!List.of("bootstrap", "topic", "checkpoints", "parallelism", "rate", "client-props",
                    "restore", "create", "s3-endpoint").contains(k)) usage("unknown flag --" + k);
        }
        int parallelism = positive(a, "parallelism");
        double rate = positive(a, "rate");
        for (String k : List.of("bootstrap", "topic", "checkpoints")) {
            if (!a.containsKey(k)) usage("--" + k + " is required");
        }
        Properties client = new Properties();
        if (a.containsKey("client-props")) {
            try (var in = new FileInputStream(a.get("client-props"))) {
                client.load(in);
            }
        }
        client.put("bootstrap.servers", a.get("bootstrap"));
        String topic = a.get("topic");
        String topicId;
        int partitions;
        try (Admin admin = Admin.create(client)) {
            if (a.containsKey("create")) {
                admin.createTopics(List.of(new NewTopic(topic, Integer.parseInt(a.get("create")), (short) 1)))
                        .all().get();
            }
            var d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            topicId = d.topicId().toString();
            partitions = d.partitions().size();
        } catch (Exception e) {
            usage("cannot describe topic " + topic + " (create it first): " + e.getMessage());
            return;
        }

        Configuration conf = new Configuration();
        String checkpoints = a.get("checkpoints");
        if (checkpoints.contains("://")) {
            s3(conf, a.get("s3-endpoint"));
        } else {
            Path local = Path.of(checkpoints).toAbsolutePath();
            Files.createDirectories(local);
            checkpoints = local.toUri().toString();
        }
        // A MiniCluster does not set up the file systems itself: the S3 settings reach Flink's
        // S3 filesystem only through this (its factory is found on the classpath, no plugins dir).
        FileSystem.initialize(conf, null);
        conf.setString("state.backend.type", "hashmap");
        conf.setString("execution.checkpointing.dir", checkpoints);
        conf.setString("execution.checkpointing.interval", "1 s");
        conf.setString("execution.checkpointing.num-retained", "3");
        conf.setString("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION");
        conf.setString("restart-strategy.type", "none"); // a failure ends the job: the test sees it
        conf.setString("rest.bind-port", "0");
        conf.setString("taskmanager.memory.managed.size", "64m");
        if (a.containsKey("restore")) {
            conf.setString("execution.state-recovery.path", a.get("restore"));
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(parallelism);
        var source = new DataGeneratorSource<>(
                n -> n, Long.MAX_VALUE,
                RateLimiterStrategy.perSecond(rate), Types.LONG);
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "sequence").uid("sequence")
                .map(new ActionStateWriter(new WriterSpec(client, topic, topicId, partitions)))
                .uid("action-state").name("action-state")
                .sinkTo(new DiscardingSink<>()).uid("sink");
        JobClient job = env.executeAsync("flinkjob " + topic);
        while (job.getJobStatus().get() != JobStatus.RUNNING) {
            if (job.getJobStatus().get().isGloballyTerminalState()) {
                fail("the job ended before running: " + job.getJobExecutionResult().get());
            }
            Thread.sleep(100);
        }
        // Running once the first checkpoint is complete: every task is up then.
        var jobDir = new org.apache.flink.core.fs.Path(checkpoints, job.getJobID().toString());
        while (!firstCheckpoint(jobDir)) {
            if (job.getJobStatus().get().isGloballyTerminalState()) {
                fail("the job ended: " + job.getJobExecutionResult().get());
            }
            Thread.sleep(100);
        }
        System.out.println("running " + job.getJobID() + " " + jobDir);

        var in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] cmd = line.trim().split("\\s+", 2);
            switch (cmd[0]) {
                case "savepoint" -> {
                    if (cmd.length < 2) {
                        System.out.println("error: savepoint DIR");
                        continue;
                    }
                    String dir = cmd[1].contains("://") ? cmd[1] : Path.of(cmd[1]).toAbsolutePath().toUri().toString();
                    System.out.println("savepoint " + savepoint(job, dir));
                }
                case "stop" -> {
                    stop(job);
                    System.out.println("stopped");
                    System.exit(0);
                }
                case "" -> { }
                default -> System.out.println("error: unknown command '" + cmd[0] + "' (savepoint DIR | stop)");
            }
        }
        stop(job);
        System.exit(0);
    }

    /** Whether JOBDIR holds a complete checkpoint, through Flink's own file system (local or S3). */
    private static boolean firstCheckpoint(org.apache.flink.core.fs.Path jobDir) throws Exception {
        FileSystem fs = jobDir.getFileSystem();
        if (!fs.exists(jobDir)) return false;
        FileStatus[] entries = fs.listStatus(jobDir);
        if (entries == null) return false;
        for (FileStatus d : entries) {
            if (d.getPath().getName().startsWith("chk-")
                    && fs.exists(new org.apache.flink.core.fs.Path(d.getPath(), "_metadata"))) {
                return true;
            }
        }
        return false;
    }

    /** The settings of Flink's S3 filesystem: a server of one's own, path-style, its credentials. */
    private static void s3(Configuration conf, String endpoint) {
        if (endpoint != null) {
            conf.setString("s3.endpoint", endpoint);
            conf.setString("s3.path.style.access", "true");
            conf.setString("s3.endpoint.region", "us-east-1"); // any region: an S3-compatible server ignores it
        }
        // Keep directory markers: deleting them after every write costs a multi-object delete
        // that S3Proxy (filesystem backend) answered 20-30 s late, stalling every checkpoint.
        conf.setString("s3.directory.marker.retention", "keep");
        String key = System.getenv("AWS_ACCESS_KEY_ID"), secret = System.getenv("AWS_SECRET_ACCESS_KEY");
        if (key != null && !key.isEmpty() && secret != null && !secret.isEmpty()) {
            conf.setString("s3.access-key", key);
            conf.setString("s3.secret-key", secret);
        }
    }

    /** A savepoint, retried while a checkpoint in flight or a restarting task declines it. */
    private static String savepoint(JobClient job, String dir) throws Exception {
        for (int i = 0; ; i++) {
            try {
                return job.triggerSavepoint(dir, SavepointFormatType.CANONICAL).get();
            } catch (Exception e) {
                if (i >= 20) throw e;
                Thread.sleep(250);
            }
        }
    }

    private static void stop(JobClient job) throws Exception {
        if (!job.getJobStatus().get().isGloballyTerminalState()) {
            job.cancel().get();
        }
    }

    private static int positive(Map<String, String> a, String k) {
        try {
            int n = Integer.parseInt(a.get(k));
            if (n > 0) return n;
        } catch (NumberFormatException e) {
            // said below
        }
        usage("--" + k + " must be a positive whole number, not '" + a.get(k) + "'");
        return 0;
    }

    private static void usage(String why) {
        fail(why + "\nusage: Job --bootstrap HOST:PORT --topic T --checkpoints DIR [--parallelism N]"
                + " [--rate PER_SECOND] [--client-props FILE] [--restore PATH] [--create PARTITIONS]"
                + " [--s3-endpoint URL]");
    }

    private static void fail(String why) {
        System.err.println("flinkjob: " + why);
        System.exit(2);
    }
}
