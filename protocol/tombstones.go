package protocol

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
)

// Tombstones and prefix cleanup do not mix (the seed's "Related work" and
// "Migration"): a tombstone (a record with a null value) lets compaction
// erase every older record of its key, so a recovery point below it may
// replay from records that are gone and repeat their actions. A boundary is
// only as good as the absence of tombstones at or above it. The rules here
// judge what the executor read of the data topic (TombstoneScan); worker
// reads it.

// ErrTombstones marks TombstonesAboveBoundary's error (also ErrBlocked): the
// data topic holds a tombstone at or above the committed boundary.
var ErrTombstones = errors.New("tombstones at or above the committed boundary")

// PartitionScan is what a read of one partition of the data topic found,
// read_committed, from From up to To (the last stable offset captured when
// the scan began).
type PartitionScan struct {
	From, To int64
	// Read is the offset after the last one read: To when the scan covered
	// [From, To), less when it stopped at the limit.
	Read int64
	// Latest is the offset of the latest tombstone seen in [From, Read),
	// -1 for none.
	Latest int64
}

// Complete reports whether the partition was read through To.
func (s PartitionScan) Complete() bool { return s.Read >= s.To }

// TombstoneScan is the executor's answer to a scan, per partition. A
// partition it did not read is absent: not scanned, never "no tombstones".
type TombstoneScan struct {
	Partitions map[int32]PartitionScan
	// Limit is the most records the scan was allowed to read over all
	// partitions (0: unbounded), quoted when it stopped the scan.
	Limit int64
}

// Continue is where a scan from "from" may start given an earlier one:
// a partition the prior scan read from at or below from[p] and through at
// least from[p] is continued at its Read, keeping a tombstone found at or
// above from[p], so that a scan repeated (apply after its own preflight,
// the workers' watch on every pass) reads only what is new. The executor
// reads from each partition's Read to its To, which it sets.
func Continue(from events.Offsets, prior *TombstoneScan) map[int32]PartitionScan {
	out := map[int32]PartitionScan{}
	for p, off := range from {
		ps := PartitionScan{From: off, Read: off, Latest: -1}
		if prior != nil {
			if q, ok := prior.Partitions[p]; ok && q.From <= off && off <= q.Read {
				ps.Read = q.Read
				if q.Latest >= off {
					ps.Latest = q.Latest
				}
			}
		}
		out[p] = ps
	}
	return out
}

// NeedsTombstoneScan reports whether a plan committed on st would be the
// first: no boundary yet. The first plan's scan may be acknowledged
// (--allow-tombstones: FirstPlanTombstones); a later plan's is judged by the
// rule of the workers' watch (CommitTombstones).
func NeedsTombstoneScan(st *projector.State) bool { return len(st.Boundary()) == 0 }

// The one tombstone rule (issue 35): no deletion starts while the data topic
// holds a tombstone at or above the boundary it would be made under, and no
// plan is committed whose boundary would be so blocked. apply, submit,
// plan's preview, the workers (their watch and every finishing run), doctor
// and status all read their verdict from the functions below, so that
// whatever one says, every other says too.

// CommitScanFrom is where the scan before plan's COMMITTED starts: the
// boundary the commit would leave (CommitBoundary), since a tombstone below
// it is what the plan leaves behind (a plan above the latest tombstone is
// the migration's fix) and one at or above it would block the deletion.
func CommitScanFrom(st *projector.State, plan events.Plan) events.Offsets {
	return CommitBoundary(st, plan)
}

// CommitTombstones judges the scan made before plan's COMMITTED
// (CommitScanFrom): a control topic's first plan by FirstPlanTombstones
// (allow: the operator's --allow-tombstones), a later one by the watch's rule
// on the boundary the commit would leave (WatchTombstones): a tombstone at
// or above it, or a scan that could not tell, refuses the plan before
// anything is written, since every worker, and apply's own deletion, would
// then block. ack is what the COMMITTED records as acknowledged.
func CommitTombstones(st *projector.State, plan events.Plan, scan *TombstoneScan, allow bool) (fs []Finding, ack string) {
	declared := Declared(st, plan.Topic, plan.TopicID, CommitScanFrom(st, plan), scan)
	scan = &declared
	if NeedsTombstoneScan(st) {
		return FirstPlanTombstones(plan, scan, allow)
	}
	if scan == nil {
		scan = &TombstoneScan{}
	}
	if err := WatchTombstones(plan.Topic, CommitBoundary(st, plan), *scan); err != nil {
		fs = append(fs, Finding{Block, "data topic " + plan.Topic, err.Error() + ": this plan's boundary would block every deletion", strings.Join(errors.GetAllHints(err), "; ")})
	}
	return fs, ""
}

// ErrTombstonesUnread marks WatchTombstones' error for a scan that has not
// read the data topic above the boundary to its end: cannot tell yet, never
// "no tombstones". A worker reads on at its next pass.
var ErrTombstonesUnread = errors.New("the data topic above the boundary is not read to its end")

// WatchTombstones is the rule before every deletion (the workers' watch,
// and the check of every finishing run, apply's included): a tombstone at
// or above the boundary blocks (TombstonesAboveBoundary: ErrBlocked and
// ErrTombstones); a partition of the boundary not read to its end is
// ErrTombstonesUnread (retry); nil when every partition was read to its
// end and none holds one.
func WatchTombstones(topic string, boundary events.Offsets, scan TombstoneScan) error {
	if err := TombstonesAboveBoundary(topic, boundary, scan); err != nil {
		return err
	}
	var behind []string
	for _, p := range boundary.Partitions() {
		if ps, ok := scan.Partitions[p]; !ok || !ps.Complete() {
			behind = append(behind, fmt.Sprintf("%s-%d at %d of %d", topic, p, ps.Read, ps.To))
		}
	}
	if len(behind) > 0 {
		return errors.WithHint(errors.Mark(errors.Newf("the data topic above the boundary is not yet read for tombstones (%s); no deletion until it is", strings.Join(behind, ", ")), ErrTombstonesUnread),
			"the workers read on at every pass; raise --tombstone-scan-limit (0: no limit) to read it in one")
	}
	return nil
}

// migrationHint is the fix, in the seed's words (docs/operator-guide.md,
// "Migrating from tombstones").
const migrationHint = "stop the job emitting tombstones, restart it, complete a new checkpoint or savepoint, and make the first plan from that post-tombstone recovery point (docs/operator-guide.md, \"Migrating from tombstones\"); --allow-tombstones only if you know these tombstones name keys no supported recovery point replays"

// FirstPlanTombstones judges the scan made before a control topic's first
// COMMITTED: every partition of plan read from the plan's offset, and no
// tombstone at or above it. A tombstone found blocks (the plan's recovery
// point predates the end of tombstone mode, or the job still writes them);
// a partition not scanned to its end blocks too, as cannot tell. With
// allow (the operator's --allow-tombstones) the same findings are warnings,
// and ack is what the COMMITTED records as acknowledged ("" when nothing
// needed acknowledging).
func FirstPlanTombstones(plan events.Plan, scan *TombstoneScan, allow bool) (fs []Finding, ack string) {
	subject := "data topic " + plan.Topic
	var acks []string
	for _, p := range plan.Offsets.Partitions() {
		msg := ""
		s, ok := PartitionScan{}, false
		if scan != nil {
			s, ok = scan.Partitions[p]
		}
		switch {
		case !ok:
			msg = fmt.Sprintf("partition %d: not scanned for tombstones: cannot tell whether one lies at or above the plan offset %d", p, plan.Offsets[p])
			acks = append(acks, fmt.Sprintf("%d unscanned", p))
		case s.Latest >= plan.Offsets[p]:
			msg = fmt.Sprintf("partition %d: a tombstone (null value) at offset %d, at or above the plan offset %d (the latest found): the plan's recovery point predates the end of tombstone mode, or the job still writes tombstones",
				p, s.Latest, plan.Offsets[p])
			acks = append(acks, fmt.Sprintf("%d@%d", p, s.Latest))
		case !s.Complete():
			msg = fmt.Sprintf("partition %d: cannot tell whether a tombstone lies at or above the plan offset %d: the scan stopped at offset %d of %d (--tombstone-scan-limit %d records)",
				p, plan.Offsets[p], s.Read, s.To, scan.Limit)
			acks = append(acks, fmt.Sprintf("%d unscanned from %d", p, s.Read))
		default:
			continue
		}
		sev := Block
		if allow {
			sev = Warn
		}
		fs = append(fs, Finding{sev, subject, msg, migrationHint})
	}
	if allow && len(acks) > 0 {
		ack = "allowed tombstones: " + strings.Join(acks, ", ")
	}
	return fs, ack
}

// TombstonesAboveBoundary judges a scan of the data topic above the
// committed boundary (the workers' watch, doctor): a tombstone at or above
// the boundary means the job writes tombstones again, and a recovery point
// the boundary still supports may replay from records compaction erases.
// The error (ErrBlocked) blocks every deletion until an operator acts; nil
// when the scan found none. A scan that could not tell is not judged here:
// the caller reads on (Complete) before it deletes.
func TombstonesAboveBoundary(topic string, boundary events.Offsets, scan TombstoneScan) error {
	var lines []string
	for _, p := range boundary.Partitions() {
		s, ok := scan.Partitions[p]
		if ok && s.Latest >= boundary[p] {
			lines = append(lines, fmt.Sprintf("%s-%d: a tombstone at offset %d, at or above the committed boundary %d (the latest found)",
				topic, p, s.Latest, boundary[p]))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return errors.WithHint(errors.Mark(errors.Mark(errors.Newf(
		"the job writes tombstones again: a recovery point the boundary supports may replay records compaction erases, so no deletion starts:\n%s",
		strings.Join(lines, "\n")), ErrBlocked), ErrTombstones),
		"stop the job emitting tombstones (cleanup mode rejects them), restart it and complete a new checkpoint; then plan from that recovery point, above the latest tombstone, and the workers delete again (docs/operator-guide.md, \"Migrating from tombstones\")")
}

// TombstoneFindings are doctor's findings on a scan of the data topic from
// the committed boundary, or from the log start when there is none yet
// (from: where the scan began per partition). Above a boundary a tombstone
// blocks, as it blocks the workers' deletions (TombstonesAboveBoundary);
// before the first plan one is where that plan must lie above (a warning:
// nothing is committed yet). A scan the limit stopped warns: cannot tell.
func TombstoneFindings(topic string, boundary, from events.Offsets, scan TombstoneScan) []Finding {
	subject := "data topic " + topic
	var fs []Finding
	if err := TombstonesAboveBoundary(topic, boundary, scan); err != nil {
		fs = append(fs, Finding{Block, subject, err.Error(), strings.Join(errors.GetAllHints(err), "; ")})
	}
	for _, p := range from.Partitions() {
		s, ok := scan.Partitions[p]
		switch {
		case !ok:
			fs = append(fs, Finding{Warn, subject, fmt.Sprintf("partition %d: not scanned for tombstones: cannot tell", p), ""})
		case len(boundary) == 0 && s.Latest >= 0:
			fs = append(fs, Finding{Warn, subject, fmt.Sprintf(
				"partition %d: a tombstone (null value) at offset %d (the latest found): the first plan's offset must lie above it", p, s.Latest),
				migrationHint})
		case !s.Complete():
			fs = append(fs, Finding{Warn, subject, fmt.Sprintf(
				"partition %d: cannot tell whether a tombstone lies at or above offset %d: the scan stopped at offset %d of %d (--tombstone-scan-limit %d records)",
				p, s.From, s.Read, s.To, scan.Limit), "raise --tombstone-scan-limit, or 0 for no limit"})
		}
	}
	if len(fs) == 0 {
		where := "the committed boundary"
		if len(boundary) == 0 {
			where = "the log start (no boundary yet)"
		}
		fs = append(fs, Finding{OK, subject, "no tombstone (null value) from " + where + " to the last stable offset", ""})
	}
	return fs
}

// An operator's no-tombstones declaration (issue 35 item 8; docs/design.md,
// the tombstone rule) stands in for reading the data topic: the rule reads
// only the partitions the declaration in force does not cover from where it
// would start (TombstoneScanFrom), and counts the covered ones as read to
// their end with no tombstone (Declared). Without a declaration both are the
// identity, and the scan is as before. Reading the data topic needs Read on
// it (DataRead); under a declaration that covers every partition nothing is
// read, so that ACL is not needed (TombstoneNeeds).

// TombstoneScanFrom is from without the partitions the declaration in force
// covers for topic (name and ID): what the tombstone rule must read. Nil
// when nothing is left to read (and for a nil from).
func TombstoneScanFrom(st *projector.State, topic, topicID string, from events.Offsets) events.Offsets {
	d, ok := st.Declaration()
	if !ok || !d.InForce() {
		return from
	}
	var out events.Offsets
	for p, off := range from {
		if !d.Covers(topic, topicID, p, off) {
			if out == nil {
				out = events.Offsets{}
			}
			out[p] = off
		}
	}
	return out
}

// Declared is the scans (the first one's partitions win; nil: nothing was read) completed with what the
// declaration in force covers of from: each covered partition counts as
// read to its end with no tombstone. A tombstone the executor saw anyway at
// or above from (a scan it made, or kept, on that partition) stands: it
// blocks whatever was declared, since the declaration is then wrong
// (defence in depth).
func Declared(st *projector.State, topic, topicID string, from events.Offsets, scans ...*TombstoneScan) TombstoneScan {
	out := TombstoneScan{Partitions: map[int32]PartitionScan{}}
	for i, scan := range scans { // an earlier scan's partition wins over a later one's
		if scan == nil {
			continue
		}
		if i == 0 {
			out.Limit = scan.Limit
		}
		for p, ps := range scan.Partitions {
			if _, ok := out.Partitions[p]; !ok {
				out.Partitions[p] = ps
			}
		}
	}
	d, ok := st.Declaration()
	if !ok || !d.InForce() {
		return out
	}
	for p, off := range from {
		if !d.Covers(topic, topicID, p, off) {
			continue
		}
		if ps, seen := out.Partitions[p]; seen && ps.Latest >= off {
			continue
		}
		out.Partitions[p] = PartitionScan{From: off, To: off, Read: off, Latest: -1}
	}
	return out
}

// TombstoneNeeds is need without Read on the data topic when the
// declaration in force covers every partition of from for plan's topic:
// the rule then reads nothing of it. With any partition left to read, need
// is returned as it is (DataRead stays, and names the declaration as the
// alternative).
func TombstoneNeeds(st *projector.State, plan events.Plan, from events.Offsets, need []Permission) []Permission {
	if len(from) == 0 || len(TombstoneScanFrom(st, plan.Topic, plan.TopicID, from)) > 0 {
		return need
	}
	read := DataRead(plan.Topic)
	out := make([]Permission, 0, len(need))
	for _, p := range need {
		if p != read {
			out = append(out, p)
		}
	}
	return out
}

// DeclaredFindings is doctor's word on what the declaration in force spared of a scan from
// from: one OK finding naming the partitions not read and the declaration (who, when, why);
// nil when it covers none.
func DeclaredFindings(st *projector.State, topic, topicID string, from events.Offsets) []Finding {
	d, ok := st.Declaration()
	if !ok || !d.InForce() {
		return nil
	}
	var covered []string
	for _, p := range from.Partitions() {
		if d.Covers(topic, topicID, p, from[p]) {
			covered = append(covered, fmt.Sprintf("%d", p))
		}
	}
	if len(covered) == 0 {
		return nil
	}
	return []Finding{{OK, "data topic " + topic, fmt.Sprintf(
		"partition(s) %s not read for tombstones: the no-tombstones declaration at control offset %d (by %s, since %s: %s) covers them",
		strings.Join(covered, ", "), d.Offset, d.Actor, d.Since.String(), d.Reason), "kcleanup tombstones withdraw --reason ... makes kcleanup read them again"}}
}
