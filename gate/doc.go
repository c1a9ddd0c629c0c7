// Package gate is kcleanup's recovery gate as pure rules: the one vocabulary
// of refusal reasons (Reason, each with its Class), and the verdict. It
// imports no Kafka client and no clock; package worker gathers the facts and
// executes.
//
// # Classes
//
// Every reason has one class. Refused (exit 3, HTTP 409): restoring is proved
// unsafe; choose another recovery point. CannotTell (exit 4, HTTP 503): the
// gate could not prove safety; fix the cause and ask again. A verdict with
// both kinds of refusal is Refused: a proof of harm stands whatever else
// could not be read.
//
// # Control-topic settings
//
// The rules a control topic's settings must meet are package topicconfig's
// (ControlTopic), shared with init, doctor, the workers and the preflight; a
// blocking problem fails the gate closed (ControlTopicSettings,
// ControlTopicPartitions).
package gate
