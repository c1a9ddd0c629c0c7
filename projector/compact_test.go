package projector

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
)

// Every step round-trips exactly through the varint history, whatever the
// jumps between steps: the decoder accepts years 0000 to 9999 and any
// offset, and a history step must give back the record it came from.
func TestHistoryRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lo := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
	for trial := range 2000 {
		var h history
		var want []step
		var last step
		for range 1 + rng.IntN(9) {
			st := step{
				offset: rng.Int64N(math.MaxInt64),
				sec:    lo + rng.Int64N(hi-lo+1),
				nsec:   int32(rng.IntN(1_000_000_000)),
				ev:     uint8(rng.IntN(4)),
				actor:  uint32(rng.IntN(1 << 20)),
			}
			if trial%3 == 0 { // extremes
				st.offset, st.sec, st.nsec, st.actor = [2]int64{0, math.MaxInt64}[rng.IntN(2)], [2]int64{lo, hi}[rng.IntN(2)], [2]int32{0, 999_999_999}[rng.IntN(2)], math.MaxUint32>>2
			}
			h, last = h.append(last, st), st
			want = append(want, st)
		}
		n := 0
		for i, got := range h.all() {
			if got != want[i] {
				t.Fatalf("trial %d step %d: got %+v, want %+v", trial, i, got, want[i])
			}
			n++
		}
		if n != len(want) || h.last() != want[len(want)-1] || h.at(0) != want[0] {
			t.Fatalf("trial %d: %d steps read back of %d", trial, n, len(want))
		}
	}
}

func TestCompactOffsets(t *testing.T) {
	for _, n := range []int{1, 3, 8, 9, 100} {
		m := events.Offsets{}
		for p := range n {
			m[int32(n-p)*7] = int64(p) * 11
		}
		c := compactOffsets(m)
		if !c.equal(m) || !c.offsets().Equal(m) {
			t.Fatalf("%d partitions: %v does not hold %v", n, c, m)
		}
		for p, off := range m {
			if got, ok := c.get(p); !ok || got != off {
				t.Fatalf("%d partitions: get(%d) = %d, %v; want %d", n, p, got, ok, off)
			}
		}
		if _, ok := c.get(1); ok {
			t.Fatalf("%d partitions: get(1) found a partition that is not there", n)
		}
		m[0] = 1
		if c.equal(m) {
			t.Fatalf("%d partitions: equal to a map with one more partition", n)
		}
		delete(m, 0)
		for p := range m {
			m[p]++
			break
		}
		if c.equal(m) {
			t.Fatalf("%d partitions: equal to a map with another offset", n)
		}
	}
}

// Every state the lifecycle can reach has a stage: setState would leave an
// operation's state unchanged otherwise.
func TestStagesCoverTheLifecycle(t *testing.T) {
	for _, tr := range fsm.Transitions() {
		for _, st := range []fsm.State{tr.From, tr.To} {
			var o op
			o.setState(fsm.Applied)
			o.setState(st)
			if o.state() != st {
				t.Fatalf("state %q has no stage", st)
			}
		}
	}
}

// An operation's struct stays in the 80-byte size class: every operation of
// a control topic has one (docs/benchmarks.md, B5, ≤ 64 bytes a record).
// What few operations have goes to opExtra.
func TestOperationStaysSmall(t *testing.T) {
	if n := unsafe.Sizeof(op{}); n > 80 {
		t.Fatalf("op is %d bytes, more than 80: move what few operations need to opExtra", n)
	}
}

// The offsets, the source recovery point and the history share one
// allocation: the recovery point and offsets read back whatever the history
// appends after them.
func TestOperationDataLayout(t *testing.T) {
	for _, srp := range []string{"", "chk-1", strings.Repeat("s3://bucket/checkpoints/", 20)} {
		for _, n := range []int{1, 3, 9, 300} {
			m := events.Offsets{}
			for p := range n {
				m[int32(p)*3] = int64(p) * 1000
			}
			s := New()
			oi := s.newOp(events.Plan{PlanID: strings.Repeat("ab", 32), SourceRecoveryPoint: srp, Offsets: m})
			o := s.ops[oi]
			var want []step
			var last step
			for i := range 12 {
				st := step{offset: int64(i) * 1e9, sec: int64(i) * 86400, nsec: int32(i) * 7, ev: uint8(i % 4)}
				o.data = appendStep(o.data, last, st)
				last = st
				want = append(want, st)
				if o.srp() != srp || !o.offs().equal(m) {
					t.Fatalf("srp %q, %d partitions: after %d steps the plan reads back as %q %v", srp, n, i+1, o.srp(), o.offs().offsets())
				}
			}
			i := 0
			for _, st := range o.history().all() {
				if st != want[i] {
					t.Fatalf("srp %q, %d partitions: step %d is %+v, want %+v", srp, n, i, st, want[i])
				}
				i++
			}
			if i != len(want) {
				t.Fatalf("srp %q, %d partitions: %d steps read back of %d", srp, n, i, len(want))
			}
		}
	}
}
