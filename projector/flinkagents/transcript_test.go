package flinkagents

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/kcleanup/kcleanup/events"
)

// TestTranscripts runs the datadriven files under testdata/ (regenerate with
// -rewrite and review the diff). Plan IDs print as their names, topic IDs
// T1, T2 as such.
//
//	plan name=p1 rp=C1 offsets=0:150,1:230 [topic=action-state] [tid=T1]
//	    define a plan (not a record); rp and topic may use Go escapes
//	    (\n, \x01, \ud800 for a lone surrogate); tid=raw:xyz is taken as is
//	record off=5 key=p1|none|raw:text [status=COMMITTED plan=p1] [tombstone]
//	    fold one record; without plan= the input text is the value, with
//	    <p1> and <T1> replaced by the IDs
//	state       the operations and the effective boundary
//	entries     every record folded and its outcome
//	validate [topic=action-state] [tid=T1] offsets=0:100
//	    the job's recovery check for one marker (or one per input line)
//	reset       start over
func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		tr := &transcript{f: New(), plans: map[string]Plan{}}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return tr.run(t, d)
		})
	})
}

type transcript struct {
	f     *Fold
	plans map[string]Plan
	names []string // old, new pairs for output
}

var topicIDs = map[string]string{"T1": "AAAAAAAAAAAAAAAAAAAAAQ", "T2": "AAAAAAAAAAAAAAAAAAAAAg"}

func arg(d *datadriven.TestData, key, def string) string {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			return strings.Join(a.Vals, ",")
		}
	}
	return def
}

func unescape(t *testing.T, s string) string {
	// Go escapes, plus \uD800-style lone surrogates written in WTF-8.
	var units []uint16
	for len(s) > 0 {
		if strings.HasPrefix(s, `\u`) && len(s) >= 6 {
			v, err := strconv.ParseUint(s[2:6], 16, 16)
			if err == nil {
				units = append(units, uint16(v))
				s = s[6:]
				continue
			}
		}
		r, _, tail, err := strconv.UnquoteChar(s, 0)
		if err != nil {
			t.Fatalf("bad escape in %q: %v", s, err)
		}
		if r < 0x10000 {
			units = append(units, uint16(r))
		} else {
			r -= 0x10000
			units = append(units, uint16(0xd800+(r>>10)), uint16(0xdc00+(r&0x3ff)))
		}
		s = tail
	}
	return wtf8(units)
}

func parseOffsets(t *testing.T, s string) events.Offsets {
	o := events.Offsets{}
	for _, kv := range strings.Split(s, ",") {
		p, off, ok := strings.Cut(kv, ":")
		pi, err1 := strconv.Atoi(p)
		oi, err2 := strconv.ParseInt(off, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("bad offsets %q", s)
		}
		o[int32(pi)] = oi
	}
	return o
}

func topicID(s string) string {
	if raw, ok := strings.CutPrefix(s, "raw:"); ok {
		return raw
	}
	return topicIDs[s]
}

func (tr *transcript) name(s string) string {
	return strings.NewReplacer(tr.names...).Replace(s)
}

func (tr *transcript) expand(s string) string {
	for name, p := range tr.plans {
		s = strings.ReplaceAll(s, "<"+name+">", p.PlanID)
	}
	for name, id := range topicIDs {
		s = strings.ReplaceAll(s, "<"+name+">", id)
	}
	return s
}

func (tr *transcript) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "plan":
		name := arg(d, "name", "")
		p := Plan{SourceRecoveryPoint: unescape(t, arg(d, "rp", "C1")), Topic: unescape(t, arg(d, "topic", "action-state")),
			TopicID: topicID(arg(d, "tid", "T1")), Offsets: parseOffsets(t, arg(d, "offsets", "0:100"))}
		p.PlanID = ComputePlanID(p.SourceRecoveryPoint, p.Topic, p.TopicID, p.Offsets)
		tr.plans[name] = p
		tr.names = append(tr.names, p.PlanID, name)
		return name + " " + p.PlanID[:12] + "…"
	case "record":
		r := Record{Offset: int64(mustAtoi(t, arg(d, "off", "0")))}
		switch k := arg(d, "key", ""); {
		case k == "none":
		case strings.HasPrefix(k, "raw:"):
			r.Key = []byte(k[4:])
		default:
			r.Key = []byte(tr.plans[k].PlanID)
		}
		if pn := arg(d, "plan", ""); pn != "" {
			r.Value = encodeRecord(Status(arg(d, "status", "COMMITTED")), tr.plans[pn])
		} else if !d.HasArg("tombstone") {
			r.Value = []byte(tr.expand(strings.TrimSuffix(d.Input, "\n")))
		}
		if err := tr.f.Step(r); err != nil {
			return tr.name(fmt.Sprintf("error %s [%s]: %s", classOf(err), err.Reason, err.Error()))
		}
		e := tr.f.Entries()[len(tr.f.Entries())-1]
		if e.Unread {
			return "unread: the fold already failed"
		}
		return tr.name(fmt.Sprintf("ok %s %s", e.Status, e.PlanID))
	case "state":
		var b strings.Builder
		for _, op := range tr.f.Operations() {
			fmt.Fprintf(&b, "%s %s offsets=%s rp=%s first=%d last=%d\n", op.Plan.PlanID, op.Status, op.Plan.Offsets, quote(op.Plan.SourceRecoveryPoint), op.First, op.Last)
		}
		if bd, err := tr.f.Effective(); err != nil {
			fmt.Fprintf(&b, "effective: error %s\n", describe(err))
		} else {
			fmt.Fprintf(&b, "effective: %s\n", bd)
		}
		return tr.name(b.String())
	case "entries":
		var b strings.Builder
		for _, e := range tr.f.Entries() {
			switch {
			case e.Unread:
				fmt.Fprintf(&b, "%d unread\n", e.Offset)
			case e.Err != nil:
				fmt.Fprintf(&b, "%d error [%s]\n", e.Offset, e.Err.Reason)
			default:
				fmt.Fprintf(&b, "%d %s %s\n", e.Offset, e.Status, e.PlanID)
			}
		}
		return tr.name(b.String())
	case "validate":
		lines := []string{strings.TrimSpace(d.Input)}
		var markers []events.Marker
		if lines[0] == "" {
			lines = nil
			if arg(d, "offsets", "") != "" {
				markers = append(markers, events.Marker{Topic: arg(d, "topic", "action-state"), TopicID: topicID(arg(d, "tid", "T1")), Offsets: parseOffsets(t, arg(d, "offsets", ""))})
			}
		} else {
			lines = strings.Split(lines[0], "\n")
		}
		for _, l := range lines {
			m := events.Marker{Topic: "action-state", TopicID: topicIDs["T1"]}
			for _, f := range strings.Fields(l) {
				k, v, _ := strings.Cut(f, "=")
				switch k {
				case "topic":
					m.Topic = v
				case "tid":
					m.TopicID = topicID(v)
				case "offsets":
					m.Offsets = parseOffsets(t, v)
				}
			}
			markers = append(markers, m)
		}
		if err := tr.f.Validate(markers); err != nil {
			return tr.name("refused: " + describe(err))
		}
		return "allowed"
	case "reset":
		tr.f = New()
		return "ok"
	}
	t.Fatalf("unknown command %s", d.Cmd)
	return ""
}

func describe(err error) string {
	e := err.(*Error)
	return fmt.Sprintf("%s [%s]: %s", classOf(e), e.Reason, e.Error())
}

func classOf(e *Error) string {
	for _, c := range []struct {
		err  error
		name string
	}{{ErrJobFails, "job-fails"}, {ErrCannotTell, "cannot-tell"}, {ErrRefused, "refused"}} {
		if e.Is(c.err) {
			return c.name
		}
	}
	return "?"
}

func mustAtoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// encodeRecord writes a control record as Flink Agents' writer does
// (Jackson's compact output, fields in its order), test-side and by hand.
func encodeRecord(st Status, p Plan) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"schemaVersion":1,"status":%q,"plan":{"schemaVersion":1,"planId":%q,"sourceRecoveryPoint":%s,"topic":%s,"topicId":%s,"offsets":{`,
		st, p.PlanID, jsonString(p.SourceRecoveryPoint), jsonString(p.Topic), jsonString(p.TopicID))
	parts := p.Offsets.Partitions()
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for i, part := range parts {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%d":%d`, part, p.Offsets[part])
	}
	b.WriteString("}}}")
	return []byte(b.String())
}

// jsonString escapes a WTF-8 string for JSON, lone surrogates as \uXXXX.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		if loneSurrogateAt(s, i) {
			u := rune(s[i]&0x0f)<<12 | rune(s[i+1]&0x3f)<<6 | rune(s[i+2]&0x3f)
			fmt.Fprintf(&b, `\u%04x`, u)
			i += 3
			continue
		}
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
		i++
	}
	b.WriteByte('"')
	return b.String()
}
