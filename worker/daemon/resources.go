package daemon

import (
	"runtime/debug"
	runtimemetrics "runtime/metrics"
	"syscall"

	"github.com/kcleanup/kcleanup/protocol"
)

// checkDescriptors compares the process's open-file limit (read anew: an
// operator may raise it on the running process, prlimit) with what the
// control topics served need (protocol.DescriptorShortfall), keeps the
// answer for /readyz and logs each change.
func (d *Daemon) checkDescriptors() {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	why := protocol.DescriptorShortfall(lim.Cur, len(d.servedTopics()))
	old := d.descriptors.Swap(&why)
	switch {
	case why != "" && (old == nil || *old == ""):
		d.log.Warn("degraded: the open-file limit is below what the control topics served need", "nofile", lim.Cur, "why", why)
	case why == "" && old != nil && *old != "":
		d.log.Info("the open-file limit suffices again for the control topics served", "nofile", lim.Cur)
	}
}

// checkMemory compares the live heap with the runtime's memory limit
// (GOMEMLIMIT; protocol.MemoryShortfall), keeps the answer for /readyz and
// logs each change.
func (d *Daemon) checkMemory() {
	sample := []runtimemetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	runtimemetrics.Read(sample)
	if sample[0].Value.Kind() != runtimemetrics.KindUint64 {
		return
	}
	live := int64(sample[0].Value.Uint64())
	limit := debug.SetMemoryLimit(-1) // -1 reads it
	why := protocol.MemoryShortfall(limit, live)
	old := d.memory.Swap(&why)
	switch {
	case why != "" && (old == nil || *old == ""):
		d.log.Warn("degraded: the live heap is above GOMEMLIMIT", "gomemlimit", limit, "live_heap", live, "why", why)
	case why == "" && old != nil && *old != "":
		d.log.Info("the live heap is below GOMEMLIMIT again", "gomemlimit", limit, "live_heap", live)
	}
}

// memoryShortfall is the last checkMemory answer ("" when none).
func (d *Daemon) memoryShortfall() string {
	if p := d.memory.Load(); p != nil {
		return *p
	}
	return ""
}

// descriptorShortfall is the last checkDescriptors answer ("" when none).
func (d *Daemon) descriptorShortfall() string {
	if p := d.descriptors.Load(); p != nil {
		return *p
	}
	return ""
}
