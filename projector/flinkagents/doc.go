// Package flinkagents reads a cleanup control topic in Apache Flink Agents'
// own format exactly as a Flink Agents job reads it at recovery (its
// KafkaActionStateCleanupCoordinator), so kcleanup can audit, gate and
// adopt a topic that Flink Agents' tool manages. It is pure: records in,
// verdicts out; the worker does the reading.
//
// # Format
//
// One partition, cleanup.policy=compact. Key: the plan ID (UTF-8). Value:
//
//	{"schemaVersion":1,"status":"COMMITTED"|"APPLIED","plan":{…a plan file's six fields…}}
//
// parsed as Jackson parses it with STRICT_DUPLICATE_DETECTION and
// FAIL_ON_TRAILING_TOKENS: exactly those three fields, schemaVersion the
// integer 1 (not 1.0), status one of the two enum names, and the plan as
// KafkaActionStateCleanupPlan.fromJson checks it (ParseValue).
//
// # Fold (Fold.Step), in offset order, read_committed to the end offset captured first
//
//  1. A record without a key, a tombstone, or a value that does not parse
//     fails the fold (ReasonNoKey, ReasonTombstone, ReasonMalformed).
//  2. The key must equal plan.planId (ReasonKeyMismatch).
//  3. The plan under a key is immutable (ReasonChangedPlan); COMMITTED →
//     APPLIED is allowed, APPLIED → COMMITTED fails (ReasonRegressed).
//  4. The fold stops at the first failure, as the job's does: later records
//     are Unread, and every question to the fold returns that failure.
//
// Fold.Boundary is the job's getCommittedBoundary: no plan at all fails
// (ReasonEmpty: the job refuses to recover from an empty control topic);
// every plan must name the topic, topic ID and partition set the job runs
// on (ReasonOtherTopic, ReasonPartitionSet); every two plans must be
// comparable (ReasonIncomparable); the effective boundary is then the
// per-partition maximum over all plans, COMMITTED or APPLIED alike.
// Fold.Validate is the job's recovery check for a recovery point's markers
// (merged as the job merges them: one topic, one partition set, minimum
// per partition); a refusal has the job's own words, "Cannot restore Kafka
// action state for <topic>-<p> from offset <o> because the committed
// cleanup boundary is <b>".
//
// # What the job accepts and kcleanup's plan files do not
//
// Flink Agents' plan parser is looser than events.ParsePlan. Each case is
// read exactly, never dropped:
//
//   - a topic ID of any non-blank text except the zero ID: kept as text; it
//     then fails Boundary for every real topic, as it fails the job;
//   - control characters and newlines in the recovery point: kept, hashed
//     as they are;
//   - an offset written -0: Jackson reads the integer 0, so does ParseValue;
//   - a lone UTF-16 surrogate (\ud800): strings are kept as WTF-8, so two
//     strings are equal exactly when Java's String.equals says so, and the
//     plan ID is hashed over the bytes Java's String.getBytes(UTF_8) gives,
//     where each lone surrogate becomes '?' (ComputePlanID; test vectors
//     computed by Java 17). Two plans differing only there share an ID and
//     fail the fold as a changed plan, as in the job;
//   - "blank" means Java's trim(): only characters up to U+0020 count as
//     blank (U+00A0 does not, unlike Go's strings.TrimSpace).
//
// CheckTopic is the job's check of the topic itself (exactly one partition,
// cleanup.policy exactly "compact"). IsPlanIDKey recognises the format: a
// bare plan ID is the key of every record Flink Agents writes and of none
// kcleanup writes.
//
// Plan.Kcleanup converts a plan to a kcleanup plan with the same ID, or
// says precisely which of kcleanup's rules it breaks (for adoption).
//
// One thing is refused rather than guessed (ReasonUnsupported, class
// ErrCannotTell): a value that is not valid UTF-8, which the job's
// StringDeserializer would silently turn into U+FFFD before parsing.
//
// # Error classes (errors.Is)
//
// ErrJobFails: the job cannot recover from this control topic at all.
// ErrCannotTell: kcleanup cannot reproduce what the job does with it.
// ErrRefused: the job refuses this recovery point. None of them may ever
// be read as "no boundary" or as an allow.
//
// The JSON reader is hand-written (json.go) because no Go JSON library
// keeps a lone surrogate as one (encoding/json and jsontext both replace it
// with U+FFFD, which would change plan equality). Its grammar is RFC
// 8259's, which is what Jackson accepts with its defaults; a test checks
// Go's json.Valid agrees wherever surrogates are not involved, and
// FuzzParseValue checks every accepted value.
package flinkagents
