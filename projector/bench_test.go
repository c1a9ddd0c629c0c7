package projector

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
)

// syntheticLog returns n valid records: n/4 operations, each PLANNED,
// COMMITTED, DELETING, APPLIED in a row, over three partitions, every plan
// above the last so that every commit is accepted.
func syntheticLog(n int) []Record {
	tid := testTopicID(1)
	log := make([]Record, 0, n)
	boundary := events.Offsets{}
	for i := 0; len(log) < n; i++ {
		base := int64(i) * 10
		p := newPlan(fmt.Sprintf("chk-%d", i), testTopic, tid, events.Offsets{0: base, 1: base + 1, 2: base + 2})
		actor := fmt.Sprintf("worker-%d", i%3)
		off := int64(len(log))
		log = append(log, record(off, envelope(p, events.Planned, off, actor)))
		env := envelope(p, events.Committed, off+1, actor)
		boundary = nextBoundary(boundary, p.Offsets)
		env.Boundary = boundary
		log = append(log, record(off+1, env))
		log = append(log, record(off+2, envelope(p, events.Deleting, off+2, actor)))
		env = envelope(p, events.Applied, off+3, actor)
		env.LogStart = p.Offsets.Clone()
		log = append(log, record(off+3, env))
	}
	return log[:n]
}

// BenchmarkFold1M folds a million valid records (250,000 operations) into a
// fresh projection, decoding included. Reported: ns/record; retained-B/record,
// what the projection keeps once folded; peak-MB, the most heap the fold
// used on top of its input (sampled every 50,000 records).
func BenchmarkFold1M(b *testing.B) {
	log := syntheticLog(1_000_000)
	benchFold(b, log, true, func(s *State, i int) { s.Step(log[i]) })
}

// BenchmarkFoldDecoded1M is BenchmarkFold1M with the records decoded before
// the timer starts: the cost of the fold alone, without events.Decode.
func BenchmarkFoldDecoded1M(b *testing.B) {
	log := syntheticLog(1_000_000)
	envs := make([]events.Envelope, len(log))
	for i, r := range log {
		env, err := events.Decode(r.Key, r.Value)
		if err != nil {
			b.Fatal(err)
		}
		envs[i] = env
	}
	// The projection shares strings and maps with the pre-decoded
	// envelopes, so what it retains is not measured here.
	benchFold(b, log, false, func(s *State, i int) { s.fold(log[i], envs[i], nil) })
}

func benchFold(b *testing.B, log []Record, retained bool, step func(s *State, i int)) {
	n := len(log)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	baseline := ms.HeapAlloc
	var peak uint64
	var s *State
	b.ResetTimer()
	for range b.N {
		s = New(KeepAudit())
		for i := range log {
			step(s, i)
			if i%50_000 == 0 {
				b.StopTimer()
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
				b.StartTimer()
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/record")
	if len(s.Rejected()) != 0 || len(s.Pending()) != 0 {
		b.Fatalf("synthetic log: %d rejected, %d pending", len(s.Rejected()), len(s.Pending()))
	}
	if ops := s.Operations(); len(ops) != n/4 || ops[len(ops)-1].State != fsm.Applied {
		b.Fatalf("synthetic log: %d operations", len(ops))
	}
	if retained {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		runtime.KeepAlive(log)
		b.ReportMetric(float64(int64(ms.HeapAlloc)-int64(baseline))/float64(n), "retained-B/record")
	}
	b.ReportMetric(float64(int64(peak)-int64(baseline))/(1<<20), "peak-MB")
	runtime.KeepAlive(s)
}

// BenchmarkFoldLean1M is the worker's fold alone: a million records
// decoded before the timer starts (as DecodeAll hands them over), folded by
// StepDecodedLean without the audit. Reported: ns/record and allocs/record.
func BenchmarkFoldLean1M(b *testing.B) {
	log := syntheticLog(1_000_000)
	decoded := NewDecoders(1).DecodeAll(log)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s := New()
		for _, d := range decoded {
			if v := s.StepDecodedLean(d); v.Outcome != Accepted {
				b.Fatalf("offset %d: %s %s", d.Offset, v.Outcome, v.Detail)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(log)), "ns/record")
}
