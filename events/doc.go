// Package events defines kcleanup's data contracts: the cleanup plan (compatible
// with Flink Agents' KafkaActionStateCleanupTool), the recovery markers a plan is
// built from, and the envelope of every record on the control topic.
//
// Everything here is pure: no Kafka client, no clock, no files. Parsing is strict
// (unknown or duplicate fields, trailing content, non-canonical partition keys are
// errors) because a plan decides which records are deleted forever, and every
// error names the field or partition at fault and what was expected.
//
// Decoding is go-json-experiment/json (the upstream of encoding/json/v2) into
// structs whose field types check their own values (json.go says which of its
// options are changed and why). testdata/parity.golden pins what every input of
// the fuzz corpora decodes to, as the hand-written parser before it decoded
// them; TestParity fails on any change of outcome.
//
// # Plan
//
// A plan file (docs/design.md §3, JSON Schema in docs/schema/plan.schema.json):
//
//	{"schemaVersion":1,"planId":"<64 lowercase hex>","sourceRecoveryPoint":"chk-7",
//	 "topic":"action-state","topicId":"<22-char Kafka topic ID>","offsets":{"0":100,"1":150}}
//
// The plan ID is the lowercase hex SHA-256 of
// "1\n" + sourceRecoveryPoint + "\n" + topic + "\n" + topicId + "\n" followed by
// partition + "=" + offset + "\n" per partition in ascending numeric order
// (ComputePlanID). It covers content, not bytes: whitespace and field order may
// differ between writers. ParsePlan recomputes it on every load, so an edited plan
// fails with an error matching ErrPlanEdited; Plan.Validate checks a plan built in
// code the same way. Plan.Encode writes the canonical file: fixed field order,
// partitions ascending, two-space indentation, trailing newline.
//
// Strict means: one JSON object, valid UTF-8, nothing after it; exactly the six
// fields, none null, none twice; schemaVersion 1; partition keys in canonical
// decimal (^(0|[1-9][0-9]{0,9})$, at most 2147483647, so not "00", "+0", " 1");
// offsets plain integers from 0 to 2^63-1 (not 1.0, 1e2, -1); at least one
// partition; a legal Kafka topic name; a non-blank recovery point without
// control characters; a topic ID that is 22 characters of URL-safe base64 with no
// padding decoding to 16 bytes, and not the zero ID (ValidTopicID).
//
// # Markers
//
// A marker is what one subtask recorded in a recovery point:
// {"schemaVersion":1,"topic":T,"topicId":ID,"offsets":{...}}. ParseMarkers reads
// one, or a non-empty array of them, as strictly as a plan. ReadMarkers reads the
// same from a reader one marker at a time, so a large file is never held whole;
// both skip a UTF-8 byte order mark at the start. BuildPlan requires all
// markers to name the same topic, topic ID and partition set (errors name the
// marker index and the partitions that differ) and takes the minimum offset per
// partition: the oldest record any subtask still needs. PlanBuilder is
// BuildPlan one marker at a time. Its AddMarkers, what kcleanup plan uses,
// reads a markers document into it holding the first marker and the running
// minimum: markers in the form Encode writes are read once, their offsets
// straight into the minimum (no map per marker); anything else goes from its
// first unusual marker on to ReadMarkersReusing (which decodes each marker
// into the map of the one before when the caller keeps it no longer) and
// Add, which decide and word every error. FuzzAddMarkers holds the two paths
// to the same plan or the same error.
//
// A marker may also say where in a Flink checkpoint it was read (Source:
// checkpointId, operator, parallelism, subtask; all four or none, after
// offsets). BuildPlan, PlanBuilder and CheckSubtasks then require every
// subtask 0..parallelism-1 of one checkpoint and one operator exactly once;
// markers that do not say are taken, and SubtasksChecked (or CheckSubtasks'
// checked) tells the caller to warn. The source never enters the plan.
//
// # Control records
//
// Every transition of an operation is one record on the control topic. Its key is
// Key(planID, event) = "<planId>/<EVENT>"; its value is an Envelope, a full
// snapshot of the operation (docs/schema/envelope.schema.json):
//
//	{"schemaVersion":1,"event":"COMMITTED","planId":…,"plan":{…the full plan…},
//	 "at":"2025-03-04T05:06:07.89Z","actor":"host/pid","boundary":{"0":150}}
//
// boundary is required on COMMITTED and forbidden elsewhere; logStart likewise on
// APPLIED. Envelope.Encode writes fixed field order, compact JSON and "at" in UTC,
// so equal envelopes give equal bytes on every host; it does not check anything,
// so call Envelope.Validate before producing a record.
//
// Decode checks a record strictly: the key parses, the key's plan ID and event
// equal the body's, the body's planId equals plan.planId and the plan verifies.
// Decode returns the UTC time, so every replica decodes a record to the same
// value. Its errors are *DecodeError (Field is a path such as
// `plan.offsets["01"]`) and match exactly one class with errors.Is:
//
//   - ErrTombstone: the value is nil.
//   - ErrNewerSchema: the value is a JSON object whose schemaVersion (or whose
//     plan's schemaVersion) is above SchemaVersion. Nothing else is checked: a
//     newer schema may add fields.
//   - ErrUnknownEvent: schema 1, a well-formed key "<planId>/<NEW_EVENT>" whose
//     plan ID and event the body repeats, but an event this build does not know.
//   - ErrMalformed: everything else. ErrKeyMismatch and ErrPlanEdited further
//     mark a key that disagrees with the body and an edited plan.
//
// A Decoder decodes like Decode and remembers the plans it verified: every
// record of an operation carries the same plan, and a plan whose bytes equal a
// verified plan's under the same plan ID is not decoded or hashed again.
//
// Decode first tries a fast path (canonical.go) that accepts a plan event
// only in exactly the bytes Encode writes: fixed field order, no whitespace,
// no escapes, a time in UTC. A repeat of a verified plan is compared by bytes
// at its place; a new plan is read in one pass and checked by the rules of
// ParsePlan. Anything else, valid or not, takes the strict decoder, so every
// rejection and every error message is the strict decoder's; FuzzCanonical
// holds the two to the same envelope or the same error.
//
// ErrNewerSchema and ErrUnknownEvent come from a newer kcleanup. A reader must
// not skip such a record, since it may carry a commit the reader cannot see:
// the projection fails closed (docs/design.md §5) until the reader is upgraded.
//
// # Reasons
//
// A PLANNED or COMMITTED may carry the operator's reason (apply --reason,
// submit --reason): schema version 5 (ReasonSchemaVersion), with "reason"
// after "actor", printable, not blank, at most MaxReasonBytes. Without one a
// record is version 1, as every earlier writer wrote it; a version-1 record
// with a reason, a version 5 without one, and a DELETING or APPLIED of
// version 5 are ErrMalformed. A build before reasons reads version 5 as
// ErrNewerSchema and fails closed, where a reason in schema 1 (closed) would
// have had it reject the COMMITTED and fold a lower boundary.
//
// # Mirror events
//
// MIRROR_ATTACHED and MIRROR_DETACHED attach and detach a Flink Agents
// mirror (a topic in Flink Agents' control format that workers keep in
// step with the boundary). Key: MirrorKey(topic, event) =
// "mirror/<topic>/<EVENT>". Value (docs/schema/mirror-event.schema.json):
//
//	{"schemaVersion":2,"event":"MIRROR_ATTACHED","mirrorTopic":"action-state.flink",
//	 "mirrorTopicId":"<22-char topic ID>","at":…,"actor":…,"reason":"…"}
//
// A MIRROR_ATTACHED that carries the mirror's restore grace is schema
// version 4 (MirrorGraceSchemaVersion), with "restoreGraceSeconds" after
// "mirrorTopicId" (docs/schema/mirror-grace-event.schema.json): a build
// that knows version 2 only degrades on it rather than attaching the
// mirror without its grace.
//
// They are schema version 2 (MirrorSchemaVersion) on purpose: a kcleanup
// that predates them reads every value whose schemaVersion is above 1 as
// ErrNewerSchema, whatever its key, so its projection degrades and it
// commits and deletes nothing, rather than deleting without the mirror.
// Decode returns them as an Envelope with Mirror set and no plan. Their
// decoding is as strict as the envelope's, in this order: schemaVersion 2
// (above: ErrNewerSchema; 1 or anything else: ErrMalformed), the key, the
// body's event and mirrorTopic against the key, an unknown mirror event
// under a well-formed key (ErrUnknownEvent), then every field: exactly the
// seven, a legal topic name, a valid topic ID, at as for envelopes, actor
// and reason printable and not blank.
//
// Out of scope here, and the projector's job: whether a transition is allowed,
// whether a COMMITTED boundary is the maximum of the previous boundary and the
// plan, and whether APPLIED's logStart reaches the plan's offsets.
package events
