package protocol

import "fmt"

// A replica's resources: decisions its daemon executes (worker/daemon), kept
// here so that they are tested without a process, a limit or a broker.

// Assignment is what a replica does with a control topic its consumer group
// assigned it before it served the topic.
type Assignment int

const (
	// OwnAssigned: serve it and own it.
	OwnAssigned Assignment = iota
	// RefuseAssigned: not a control topic this replica may act on (its
	// expression does not match, or the settings say it is not a control
	// topic): never owned, said once.
	RefuseAssigned
	// RetryAssigned: whether it is a control topic is not known (its settings
	// could not be read: a broker that did not answer, a process out of file
	// descriptors). Unread is not "not a control topic": the replica asks
	// again after a backoff while the group leaves it the topic, and says why
	// meanwhile, for nobody else finishes its operations.
	RetryAssigned
)

// AssignedTopic decides an assigned control topic the replica does not serve
// yet: matches is its expression's (or list's) answer, shaped the settings'
// (gate.Shape), read false when the settings could not be read.
func AssignedTopic(matches, read, shaped bool) Assignment {
	switch {
	case !matches:
		return RefuseAssigned
	case !read:
		return RetryAssigned
	case !shaped:
		return RefuseAssigned
	}
	return OwnAssigned
}

// DescriptorsPerControlTopic and DescriptorsBase estimate the file
// descriptors a replica needs: each served control topic has a reader of its
// own, which holds a connection to the seed broker and one to the
// partition's leader; the base covers the HTTP listener and its callers, the
// group member's and the admin client's connections to every broker, and the
// runtime's own. Measured: 2,095 open descriptors for 1,000 control topics on
// three brokers (internal/clustertest/limits).
const (
	DescriptorsPerControlTopic = 2
	DescriptorsBase            = 64
)

// DescriptorShortfall says, when a replica's open-file limit is below what
// serving controlTopics needs, what happens and the fix; "" when it is not.
// Below the need the replica keeps running: its dials fail with "too many
// open files" and are retried, so reads, discovery and ownership come late
// (RetryAssigned) and HTTP callers may wait.
func DescriptorShortfall(limit uint64, controlTopics int) string {
	need := uint64(DescriptorsBase + DescriptorsPerControlTopic*max(controlTopics, 0))
	if limit >= need {
		return ""
	}
	return fmt.Sprintf("the open-file limit is %d, below the %d file descriptors %d control topics need (%d each and %d): "+
		"dials fail with \"too many open files\" and are retried, so reads, discovery and ownership come late; "+
		"raise it (ulimit -n, systemd LimitNOFILE, the container runtime's nofile) or serve fewer control topics per replica",
		limit, need, controlTopics, DescriptorsPerControlTopic, DescriptorsBase)
}

// MemoryShortfall says, when the live heap is above the memory limit the
// runtime was given (GOMEMLIMIT, a soft limit), what happens and the fix; ""
// when it is not, or when there is no limit (limit 0 or math.MaxInt64).
// Above it the garbage collector runs back to back, up to half the CPU, and
// every read and answer is slower; the process is not killed for it.
func MemoryShortfall(limit, live int64) string {
	if limit <= 0 || limit == 1<<63-1 || live <= limit {
		return ""
	}
	return fmt.Sprintf("the live heap, %d MiB, is above GOMEMLIMIT (%d MiB): the garbage collector runs back to back (up to half the CPU), so reads and answers are slower; "+
		"raise GOMEMLIMIT (and the container's memory limit above it) or serve fewer control topics per replica", live>>20, limit>>20)
}
