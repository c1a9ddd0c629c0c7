package io.github.kcleanup.flinkgen;

import java.util.List;

/** One job run on the MiniCluster and the snapshots taken of it while it runs. */
final class JobSpec {
    final String dir; // under the line's output directory
    final String variant; // "" or a suffix of the case names, e.g. "-large-union"
    final String backend; // hashmap | rocksdb
    final boolean incremental;
    final int parallelism;
    final List<MarkerSpec> markers;
    boolean unaligned;
    boolean compression;
    boolean changelog;
    /** Also take a savepoint of this format and move its directory elsewhere; null for none. */
    String movedSavepoint;
    int checkpoints = 1; // retained checkpoints taken in turn; the last is the case
    boolean canonical = true;
    boolean nativeSavepoint;
    String notes = "";

    JobSpec(
            String dir,
            String variant,
            String backend,
            boolean incremental,
            int parallelism,
            List<MarkerSpec> markers) {
        this.dir = dir;
        this.variant = variant;
        this.backend = backend;
        this.incremental = incremental;
        this.parallelism = parallelism;
        this.markers = markers;
    }

    JobSpec unaligned() {
        unaligned = true;
        return this;
    }

    JobSpec compression() {
        compression = true;
        return this;
    }

    JobSpec movedSavepoint(String format) {
        movedSavepoint = format;
        return this;
    }

    JobSpec changelog() {
        changelog = true;
        return this;
    }

    JobSpec checkpoints(int n) {
        checkpoints = n;
        return this;
    }

    JobSpec canonical(boolean on) {
        canonical = on;
        return this;
    }

    JobSpec nativeSavepoint() {
        nativeSavepoint = true;
        return this;
    }

    JobSpec notes(String n) {
        notes = n;
        return this;
    }

    /** The backend named in the manifest for a retained checkpoint of this job. */
    String checkpointBackend() {
        return backend.equals("rocksdb") && incremental ? "rocksdb-incremental" : backend;
    }
}
