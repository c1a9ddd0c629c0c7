package protocol

import (
	"strings"
	"testing"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
)

// noTombstones answers a scan from the given offsets as a complete read
// that found none; nil when no scan was asked.
func noTombstones(from events.Offsets, t Topic) *TombstoneScan {
	if from == nil {
		return nil
	}
	scan := &TombstoneScan{Partitions: map[int32]PartitionScan{}}
	for p, off := range from {
		scan.Partitions[p] = PartitionScan{From: off, To: t.End[p], Read: t.End[p], Latest: -1}
	}
	return scan
}

func TestFirstPlanTombstones(t *testing.T) {
	plan := events.Plan{Topic: "action-state", Offsets: events.Offsets{0: 100, 1: 50}}
	scan := func(ps ...PartitionScan) *TombstoneScan {
		s := &TombstoneScan{Partitions: map[int32]PartitionScan{}, Limit: 10}
		for i, p := range ps {
			s.Partitions[int32(i)] = p
		}
		return s
	}
	clean := PartitionScan{From: 100, To: 200, Read: 200, Latest: 99} // below the plan: harmless
	for _, tc := range []struct {
		name  string
		scan  *TombstoneScan
		allow bool
		want  []string // one per finding, in partition order; "" none
		ack   string
	}{
		{"tombstones below the plan", scan(clean, PartitionScan{From: 50, To: 60, Read: 60, Latest: -1}), false, nil, ""},
		{"one at the plan offset", scan(clean, PartitionScan{From: 50, To: 60, Read: 60, Latest: 50}), false,
			[]string{"block partition 1: a tombstone (null value) at offset 50, at or above the plan offset 50 (the latest found)"}, ""},
		{"scan stopped at the limit", scan(PartitionScan{From: 100, To: 200, Read: 110, Latest: -1}, PartitionScan{From: 50, To: 60, Read: 60, Latest: -1}), false,
			[]string{"block partition 0: cannot tell whether a tombstone lies at or above the plan offset 100: the scan stopped at offset 110 of 200 (--tombstone-scan-limit 10 records)"}, ""},
		{"a tombstone found before the limit is still found", scan(PartitionScan{From: 100, To: 200, Read: 110, Latest: 105}, PartitionScan{From: 50, To: 60, Read: 60, Latest: -1}), false,
			[]string{"block partition 0: a tombstone (null value) at offset 105, at or above the plan offset 100"}, ""},
		{"not scanned", nil, false, []string{"block partition 0: not scanned", "block partition 1: not scanned"}, ""},
		{"a partition missing from the scan", scan(clean), false, []string{"block partition 1: not scanned"}, ""},
		{"allowed", scan(clean, PartitionScan{From: 50, To: 60, Read: 55, Latest: 52}), true,
			[]string{"warn partition 1: a tombstone (null value) at offset 52"}, "allowed tombstones: 1@52"},
		{"allowed, cannot tell", scan(PartitionScan{From: 100, To: 200, Read: 110, Latest: -1}, PartitionScan{From: 50, To: 60, Read: 60, Latest: -1}), true,
			[]string{"warn partition 0: cannot tell"}, "allowed tombstones: 0 unscanned from 110"},
		{"allowed, nothing to acknowledge", scan(clean, PartitionScan{From: 50, To: 60, Read: 60, Latest: -1}), true, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, ack := FirstPlanTombstones(plan, tc.scan, tc.allow)
			if len(fs) != len(tc.want) {
				t.Fatalf("findings %v, want %d: %v", fs, len(tc.want), tc.want)
			}
			for i, f := range fs {
				if got := string(f.Severity) + " " + f.Message; !strings.HasPrefix(got, tc.want[i]) {
					t.Errorf("finding %d: %q, want prefix %q", i, got, tc.want[i])
				}
				if !strings.Contains(f.Hint, "post-tombstone recovery point") {
					t.Errorf("finding %d: hint %q does not give the migration steps", i, f.Hint)
				}
			}
			if ack != tc.ack {
				t.Errorf("acknowledgement %q, want %q", ack, tc.ack)
			}
		})
	}
}

func TestTombstonesAboveBoundary(t *testing.T) {
	boundary := events.Offsets{0: 100, 1: 50}
	scan := TombstoneScan{Partitions: map[int32]PartitionScan{
		0: {From: 100, To: 300, Read: 300, Latest: -1},
		1: {From: 50, To: 80, Read: 80, Latest: 49},
	}}
	if err := TombstonesAboveBoundary("action-state", boundary, scan); err != nil {
		t.Fatalf("no tombstone at or above the boundary, yet: %v", err)
	}
	scan.Partitions[0] = PartitionScan{From: 100, To: 300, Read: 300, Latest: 250}
	err := TombstonesAboveBoundary("action-state", boundary, scan)
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("a tombstone above the boundary: %v, want ErrBlocked", err)
	}
	if want := "action-state-0: a tombstone at offset 250, at or above the committed boundary 100 (the latest found)"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if hints := errors.GetAllHints(err); len(hints) != 1 || !strings.Contains(hints[0], "stop the job emitting tombstones") {
		t.Errorf("hints %q", hints)
	}
}

func TestContinue(t *testing.T) {
	prior := &TombstoneScan{Partitions: map[int32]PartitionScan{
		0: {From: 100, To: 300, Read: 300, Latest: 250},
		1: {From: 50, To: 80, Read: 70, Latest: 60},
		2: {From: 10, To: 20, Read: 20, Latest: -1},
	}}
	got := Continue(events.Offsets{0: 260, 1: 55, 2: 30, 3: 5}, prior)
	want := map[int32]PartitionScan{
		0: {From: 260, Read: 300, Latest: -1}, // the tombstone is below the new start
		1: {From: 55, Read: 70, Latest: 60},   // kept, read on from 70
		2: {From: 30, Read: 30, Latest: -1},   // the prior scan ended below: read afresh
		3: {From: 5, Read: 5, Latest: -1},     // never scanned
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("partition %d: %+v, want %+v", p, got[p], w)
		}
	}
}

func TestTombstoneFindings(t *testing.T) {
	scan := TombstoneScan{Limit: 5, Partitions: map[int32]PartitionScan{
		0: {From: 100, To: 300, Read: 300, Latest: 250},
		1: {From: 50, To: 80, Read: 60, Latest: -1},
	}}
	for _, tc := range []struct {
		name     string
		boundary events.Offsets
		want     []string
	}{
		{"above the boundary", events.Offsets{0: 100, 1: 50}, []string{
			"block the job writes tombstones again", "warn partition 1: cannot tell whether a tombstone lies at or above offset 50: the scan stopped at offset 60 of 80"}},
		{"no boundary yet", nil, []string{
			"warn partition 0: a tombstone (null value) at offset 250 (the latest found): the first plan's offset must lie above it", "warn partition 1: cannot tell"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := TombstoneFindings("action-state", tc.boundary, events.Offsets{0: 100, 1: 50}, scan)
			if len(fs) != len(tc.want) {
				t.Fatalf("findings %+v, want %d", fs, len(tc.want))
			}
			for i, f := range fs {
				if got := string(f.Severity) + " " + f.Message; !strings.HasPrefix(got, tc.want[i]) {
					t.Errorf("finding %d: %q, want prefix %q", i, got, tc.want[i])
				}
			}
		})
	}
	clean := TombstoneScan{Partitions: map[int32]PartitionScan{0: {From: 100, To: 300, Read: 300, Latest: 99}}}
	if fs := TombstoneFindings("action-state", events.Offsets{0: 100}, events.Offsets{0: 100}, clean); len(fs) != 1 || fs[0].Severity != OK {
		t.Errorf("a clean scan: %+v", fs)
	}
}
