package events

import (
	"testing"
)

// benchRecords are the four records of one operation over parts partitions.
func benchRecords(parts int) [][2][]byte {
	o := Offsets{}
	for p := range parts {
		o[int32(p)] = int64(1000 + p)
	}
	p := Plan{SourceRecoveryPoint: "chk-1234", Topic: "action-state", TopicID: topicA, Offsets: o}
	p.PlanID = ComputePlanID(p.SourceRecoveryPoint, p.Topic, p.TopicID, p.Offsets)
	var out [][2][]byte
	for _, e := range []Event{Planned, Committed, Deleting, Applied} {
		env := envelopeOf(e, p)
		switch e {
		case Committed:
			env.Boundary = o
		case Applied:
			env.LogStart = o
		}
		k, v := env.Encode()
		out = append(out, [2][]byte{k, v})
	}
	return out
}

// BenchmarkDecode decodes the four records of an operation again and again:
// Decode checks every record's plan; a Decoder checks each plan once.
func BenchmarkDecode(b *testing.B) {
	for _, parts := range []int{3, 100} {
		recs := benchRecords(parts)
		size := 0
		for _, r := range recs {
			size += len(r[1])
		}
		b.Run("Decode/partitions="+itoa(parts), func(b *testing.B) {
			b.SetBytes(int64(size / len(recs)))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				r := recs[i%len(recs)]
				if _, err := Decode(r[0], r[1]); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("Decoder/partitions="+itoa(parts), func(b *testing.B) {
			d := NewDecoder()
			b.SetBytes(int64(size / len(recs)))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				r := recs[i%len(recs)]
				if _, err := d.Decode(r[0], r[1]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func itoa(n int) string {
	return string(appendInt(nil, n))
}

func appendInt(b []byte, n int) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}
