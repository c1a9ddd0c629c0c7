// Package report holds the documents kcleanup prints and serves, as pure
// builders: the CLI (`kcleanup status -o json`, doctor, history) and the
// worker's HTTP API (package daemon) render the same values, so a field
// means the same in both.
//
//   - Status (status.go, docs/schema/status.schema.json): one control topic
//     as its fold sees it, built by StatusOf (complete) or SummaryOf (the
//     default view, small however long the history) from a Source, which
//     worker.Projection.Source gives for a live read.
//   - WorkerStatus, TopicStatus, FleetStatus (worker.go,
//     docs/schema/worker-status.schema.json): the body of /v1/status; the
//     daemon fills in what only a replica knows (owned, caught up, blocked
//     operations, the fleet).
//   - FlinkStatus (flink.go): a control topic in Flink Agents' format as the
//     job folds it; Format (format.go) says which format a topic is in.
//   - Preview (preview.go): what applying a plan would do to each partition
//     (`kcleanup plan`'s live preview), from what worker.Cluster.Preview
//     read (PartitionsPreview).
//   - Unjudged (validate.go): the verdict document of a request the gate did
//     not judge (bad request, unknown control topic, shutting down).
//   - Clip and TextLimit (clip.go): how every view cuts writer-chosen text.
//   - The findings doctor and init print (findings.go): CheckBinding and
//     CheckProjection judge a status document, CheckControlTopic,
//     CheckControlTopicDurability and CheckFlinkControlTopic a control
//     topic as described (protocol.Topic), with the exact command that
//     fixes each problem. The time a check compares against is a parameter.
//
// Pure: no Kafka client, no clock, no os, no goroutine (imports_test.go
// fails the build's tests otherwise). It imports projector, events and the
// pure worker packages only; worker imports it, never the reverse.
// Versioning: a changed field is a new StatusSchemaVersion.
package report
