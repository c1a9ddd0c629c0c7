package report

import (
	"time"

	"github.com/kcleanup/kcleanup/events"
)

// TopicStatus is one control topic as a worker serves it at /v1/status: the
// status document of `kcleanup status -o json` (with the blocked operations
// this replica knows of, if it owns the topic) and the replica's view of it.
type TopicStatus struct {
	Status
	// Owned is true on the replica that finishes this topic's operations.
	Owned bool `json:"owned"`
	// CaughtUp is true when the replica read to the end within the ready
	// window; CaughtUpAt is when it last did.
	CaughtUp   bool       `json:"caughtUp"`
	CaughtUpAt *time.Time `json:"caughtUpAt,omitempty"`
	LagRecords int64      `json:"lagRecords"`
	// ReadError is the last read's error, if it did not reach the end.
	ReadError string `json:"readError,omitempty"`
	// DataTopic is the governed data topic's log-start offsets and high
	// watermarks as this replica last listed them (absent until the control
	// topic is bound and listed once).
	DataTopic *DataTopicOffsets `json:"dataTopic,omitempty"`
	// Retention is the owner's last round of the control topic's retention
	// policy (owner only; absent without a policy).
	Retention *RetentionFollow `json:"retention,omitempty"`
}

// DataTopicOffsets is where the data topic's partitions stand: records
// below LogStart are gone, HighWatermark is the next offset to be written.
type DataTopicOffsets struct {
	LogStart      events.Offsets `json:"logStart"`
	HighWatermark events.Offsets `json:"highWatermark"`
	// ListedAt is when they were listed; Error, why the last listing
	// failed (the offsets are then those of the last success, if any).
	ListedAt time.Time `json:"listedAt"`
	Error    string    `json:"error,omitempty"`
}

// WorkerStatus is the body of /v1/status without ?controlTopic=.
type WorkerStatus struct {
	SchemaVersion int           `json:"schemaVersion"`
	Group         string        `json:"group"`
	Actor         string        `json:"actor"`
	ControlTopics []TopicStatus `json:"controlTopics"`
	// Fleet is the consumer group as this replica last described it
	// (absent until described once).
	Fleet *FleetStatus `json:"fleet,omitempty"`
}

// FleetStatus is the worker fleet as this replica last saw it: the members
// of its consumer group and the control topics each owns. It is what the
// group coordinator answered to DescribeGroups, not a promise: ownership
// can move at any moment, and safety never depends on it.
type FleetStatus struct {
	Members     []FleetMember `json:"members"`
	DescribedAt time.Time     `json:"describedAt"`
	// Error is why the last description failed (Members are then those of
	// the last success, if any).
	Error string `json:"error,omitempty"`
}

// FleetMember is one replica in the group.
type FleetMember struct {
	MemberID string `json:"memberId"`
	ClientID string `json:"clientId"`
	// Replica and StartedAt are a kcleanup worker's name (--replica-name,
	// default its hostname) and start time, read from its client ID; absent
	// for any other member.
	Replica   string     `json:"replica,omitempty"`
	StartedAt *time.Time `json:"startedAt,omitempty"`
	// Host is the member's address as the broker sees it.
	Host string `json:"host"`
	// ControlTopics are the control topics assigned to it: it finishes
	// their operations.
	ControlTopics []string `json:"controlTopics"`
	// Self marks the replica that served this document.
	Self bool `json:"self"`
}
