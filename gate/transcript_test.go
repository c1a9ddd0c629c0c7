package gate

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"

	"github.com/kcleanup/kcleanup/topicconfig"
)

// TestTranscripts runs the datadriven files under testdata/: the gate's own rules (Decide) on a
// fold of the records the transcript writes, with a healthy control topic and a data topic that
// holds every offset the markers name, so that what speaks is the logical half and the fail-closed
// rules over the fold. Regenerate with `go test ./gate -run TestTranscripts -rewrite` and review
// the diff. Plan IDs print as their names (p1) and topic IDs as T1, T2, T3.
//
//	plan id=p1 rp=C1 offsets=0:150,1:230 [topic=action-state] [tid=T1]
//	    define a plan (not a record)
//	record off=5 plan=p1 event=PLANNED [boundary=0:150] [logstart=0:150]
//	    fold one record and print its verdict. COMMITTED's boundary defaults to the
//	    current boundary raised by the plan, APPLIED's logstart to the plan.
//	raw off=5 key=p1/PAUSED
//	    fold the input as the record value under key (<p1> and <T1> are replaced)
//	validate [topic=action-state] [tid=T1] offsets=0:100
//	    Decide for one marker (or one per input line, in the same syntax): "allowed", or the
//	    verdict's class, first reason, message and first hint
func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		tr := newTranscript()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return tr.run(t, d)
		})
	})
}

type transcript struct {
	s     *projector.State
	next  int64
	plans map[string]events.Plan
	tids  map[string]string
	pairs []string // real IDs → names, for output
}

func newTranscript() *transcript {
	tr := &transcript{s: projector.New(), plans: map[string]events.Plan{}, tids: map[string]string{}}
	for i := byte(1); i <= 3; i++ {
		var b [16]byte
		b[0], b[7] = i, 0x5a
		id, name := base64.RawURLEncoding.EncodeToString(b[:]), fmt.Sprintf("T%d", i)
		tr.tids[name] = id
		tr.pairs = append(tr.pairs, id, name)
	}
	return tr
}

func (tr *transcript) names(s string) string { return strings.NewReplacer(tr.pairs...).Replace(s) }

func (tr *transcript) topicID(name string) string {
	if id, ok := tr.tids[name]; ok {
		return id
	}
	return name // a literal, possibly invalid, ID
}

var transcriptEpoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func (tr *transcript) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "plan":
		var name, rp, offsets string
		topic, tid := topic, "T1"
		d.ScanArgs(t, "id", &name)
		d.ScanArgs(t, "rp", &rp)
		d.ScanArgs(t, "offsets", &offsets)
		d.MaybeScanArgs(t, "topic", &topic)
		d.MaybeScanArgs(t, "tid", &tid)
		o := transcriptOffsets(t, d, offsets)
		p := events.Plan{PlanID: events.ComputePlanID(rp, topic, tr.topicID(tid), o), SourceRecoveryPoint: rp, Topic: topic, TopicID: tr.topicID(tid), Offsets: o}
		if err := p.Validate(); err != nil {
			d.Fatalf(t, "plan %s: %v", name, err)
		}
		tr.plans[name] = p
		tr.pairs = append(tr.pairs, p.PlanID, name)
		return tr.names(fmt.Sprintf("%s: %s (%s) from %s, offsets %s\n", p.PlanID, p.Topic, p.TopicID, rp, p.Offsets))
	case "record":
		var off int64
		var name, ev, s string
		d.ScanArgs(t, "off", &off)
		d.ScanArgs(t, "plan", &name)
		d.ScanArgs(t, "event", &ev)
		p, ok := tr.plans[name]
		if !ok {
			d.Fatalf(t, "unknown plan %q", name)
		}
		env := events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Event(ev), PlanID: p.PlanID, Plan: p,
			At: transcriptEpoch.Add(time.Duration(off) * time.Second), Actor: "worker-1"}
		switch {
		case d.MaybeScanArgs(t, "boundary", &s):
			env.Boundary = transcriptOffsets(t, d, s)
		case env.Event == events.Committed:
			env.Boundary = tr.s.Boundary()
			for q, o := range p.Offsets {
				env.Boundary[q] = max(env.Boundary[q], o)
			}
		}
		switch {
		case d.MaybeScanArgs(t, "logstart", &s):
			env.LogStart = transcriptOffsets(t, d, s)
		case env.Event == events.Applied:
			env.LogStart = p.Offsets.Clone()
		}
		k, v := env.Encode()
		return tr.fold(projector.Record{Offset: off, Key: k, Value: v, Timestamp: env.At})
	case "raw":
		var off int64
		var key string
		d.ScanArgs(t, "off", &off)
		d.ScanArgs(t, "key", &key)
		if id, rest, ok := strings.Cut(key, "/"); ok {
			if p, ok := tr.plans[id]; ok {
				key = p.PlanID + "/" + rest
			}
		}
		value := strings.TrimSpace(d.Input)
		for name, p := range tr.plans {
			value = strings.ReplaceAll(value, "<"+name+">", p.PlanID)
		}
		for name, id := range tr.tids {
			value = strings.ReplaceAll(value, "<"+name+">", id)
		}
		return tr.fold(projector.Record{Offset: off, Key: []byte(key), Value: []byte(value), Timestamp: transcriptEpoch.Add(time.Duration(off) * time.Second)})
	case "validate":
		return tr.validate(t, d)
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

func (tr *transcript) fold(r projector.Record) string {
	v := tr.s.Step(r)
	tr.next = r.Offset + 1
	line := fmt.Sprintf("%d %s: %s", r.Offset, r.Key, v.Outcome)
	if v.Reason != "" {
		line += " " + string(v.Reason)
	}
	return tr.names(line + "\n")
}

func (tr *transcript) validate(t *testing.T, d *datadriven.TestData) string {
	var markers []events.Marker
	marker := func(args []datadriven.CmdArg) {
		m := events.Marker{Topic: topic, TopicID: tr.tids["T1"]}
		for _, a := range args {
			switch a.Key {
			case "topic":
				m.Topic = a.Vals[0]
			case "tid":
				m.TopicID = tr.topicID(a.Vals[0])
			case "offsets":
				m.Offsets = transcriptOffsets(t, d, a.Vals[0])
			}
		}
		markers = append(markers, m)
	}
	if d.HasArg("offsets") {
		marker(d.CmdArgs)
	}
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		if line == "" {
			continue
		}
		_, args, err := datadriven.ParseLine("marker " + line)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		marker(args)
	}
	// The live data topic is the first marker's incarnation and holds every offset any marker
	// names: the physical check passes, and the fold's rules answer.
	data := Data{Topic: topic, Exists: true, ID: tr.tids["T1"], Start: events.Offsets{}, End: events.Offsets{}}
	if len(markers) > 0 {
		data.Topic, data.ID = markers[0].Topic, markers[0].TopicID
	}
	for _, m := range markers {
		for p := range m.Offsets {
			if _, ok := data.Start[p]; !ok {
				data.Partitions = append(data.Partitions, p)
				data.Start[p], data.End[p] = 0, 1<<40
			}
		}
	}
	v := Decide(Facts{
		Markers:    markers,
		Control:    Control{Topic: ctl, Exists: true, Partitions: 1, Configs: topicconfig.CreateSettings()},
		Projection: &Projection{State: tr.s, ReadTo: tr.next},
		Data:       data,
		Bootstrap:  "b:9092",
	})
	if v.Allowed {
		return "allowed\n"
	}
	r := v.Refusals[0]
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s\n", r.Class, r.Reason, r.Message)
	if len(r.Hints) > 0 {
		fmt.Fprintf(&b, "hint: %s\n", r.Hints[0])
	}
	if n := len(v.Refusals); n > 1 {
		var rs []string
		for _, r := range v.Refusals[1:] {
			rs = append(rs, string(r.Reason))
		}
		fmt.Fprintf(&b, "(and %s)\n", strings.Join(rs, ", "))
	}
	return tr.names(b.String())
}

// transcriptOffsets reads "0:150,1:230"; "none" is empty.
func transcriptOffsets(t *testing.T, d *datadriven.TestData, s string) events.Offsets {
	o := events.Offsets{}
	if s == "none" {
		return o
	}
	for _, part := range strings.Split(s, ",") {
		ps, os, ok := strings.Cut(part, ":")
		p, err1 := strconv.ParseInt(ps, 10, 32)
		off, err2 := strconv.ParseInt(os, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			d.Fatalf(t, "offsets %q: want partition:offset,...", s)
		}
		o[int32(p)] = off
	}
	return o
}
