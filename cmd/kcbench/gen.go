package main

import (
	"fmt"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/fsm"
	"github.com/kcleanup/kcleanup/projector"
)

// genEpoch is the "at" of the first generated record; record n is n
// milliseconds later, so times increase with offsets like a real log's.
var genEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// controlLog generates a valid control-topic history: operation after
// operation, each PLANNED, COMMITTED, DELETING, APPLIED in a row, every plan
// above the last on every partition of the data topic, so that every record
// is accepted and every boundary is monotonic. Records are produced one at a
// time: a million of them never need to be in memory at once.
type controlLog struct {
	topic, topicID string
	partitions     int32
	actor          string

	op   int64       // index of the operation being written
	step int         // 0..3: which of its four records comes next
	plan events.Plan // the plan of operation op
	next int64       // offset of the next record
}

// lifecycle is the events of one operation, in order (fsm.Events, once).
var lifecycle = fsm.Events()

func newControlLog(topic, topicID string, partitions int32) *controlLog {
	return &controlLog{topic: topic, topicID: topicID, partitions: partitions, actor: "kcbench/gen"}
}

// Next returns the key and value of the next record.
func (g *controlLog) Next() (key, value []byte) {
	if g.step == 0 {
		offsets := make(events.Offsets, g.partitions)
		for p := range g.partitions {
			// Ten records per operation and partition: plans strictly rise.
			offsets[p] = (g.op+1)*10 + int64(p)
		}
		rp := fmt.Sprintf("chk-%d", g.op)
		g.plan = events.Plan{
			PlanID:              events.ComputePlanID(rp, g.topic, g.topicID, offsets),
			SourceRecoveryPoint: rp,
			Topic:               g.topic,
			TopicID:             g.topicID,
			Offsets:             offsets,
		}
	}
	env := events.Envelope{
		SchemaVersion: events.SchemaVersion,
		Event:         lifecycle[g.step],
		PlanID:        g.plan.PlanID,
		Plan:          g.plan,
		At:            genEpoch.Add(time.Duration(g.next) * time.Millisecond),
		Actor:         g.actor,
	}
	switch env.Event {
	case events.Committed:
		// Every plan is above the previous one on every partition, so the
		// cumulative boundary is the plan itself.
		env.Boundary = g.plan.Offsets
	case events.Applied:
		env.LogStart = g.plan.Offsets
	}
	key, value = env.Encode()
	g.next++
	g.step++
	if g.step == 4 {
		g.step = 0
		g.op++
	}
	return key, value
}

// Records returns the first n records as the projector reads them.
func (g *controlLog) Records(n int) []projector.Record {
	out := make([]projector.Record, n)
	for i := range out {
		off := g.next
		k, v := g.Next()
		out[i] = projector.Record{Offset: off, Key: k, Value: v, Timestamp: genEpoch.Add(time.Duration(off) * time.Millisecond)}
	}
	return out
}
