// Package events defines kcleanup's data contracts: the cleanup plan (compatible
// with Flink Agents' KafkaActionStateCleanupTool), the recovery markers a plan is
// built from, and the envelope of every record on the control topic.
//
// Everything here is pure: no Kafka client, no clock, no files. Parsing is strict
// (unknown or duplicate fields, trailing content, non-canonical partition keys are
// errors) because a plan decides which records are deleted forever, and every
// error names the field or partition at fault and what was expected.
package events
