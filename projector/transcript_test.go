package projector

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kcleanup/kcleanup/events"
)

// TestTranscripts runs the datadriven files under testdata/. Regenerate the
// expected output with `go test ./projector -run TestTranscripts -rewrite`
// and review the diff. Plan IDs print as their names (p1) and topic IDs as
// T1, T2, ... (tid=T1 in arguments; <p1> and <T1> in raw input).
//
//	plan id=p1 rp=C1 offsets=0:150,1:230 [topic=action-state] [tid=T1]
//	    define a plan (not a record)
//	record off=5 plan=p1 event=PLANNED [key=p1/PLANNED] [boundary=0:150]
//	    [logstart=0:150] [actor=w1] [tamper] [tombstone] [raw[=<json>]]
//	    fold one record and print its verdict. COMMITTED's boundary
//	    defaults to the correct one (max of the current boundary and the
//	    plan), APPLIED's logstart to the plan. tamper edits the plan's first
//	    offset without fixing its ID; tombstone folds a nil value; raw uses
//	    its value, or else the input text, as the record value (key= required).
//	mirror off=5 event=MIRROR_ATTACHED|MIRROR_DETACHED topic=m [tid=T2] [reason=..] [actor=..]
//	    fold one mirror event (the topic ID defaults to T2)
//	pin off=5 name=s1 rp=SP offsets=0:150 [at=N] [expires=N] [tid=T1] [topic=..] [actor=..] [reason=..]
//	    fold a PINNED (at = the epoch + off seconds, like every record;
//	    expires = the epoch + N seconds); its ID prints as its name
//	unpin off=6 name=s1 [reason=..]   fold an UNPINNED of pin s1
//	state       the projection: boundary, binding, mirror, operations, rejections, repairs
//	audit       every verdict in log order
//	pending     the operations a worker must finish
//	    [maint=KIND] adds a worker's maintenance headers (also to repair and retract)
//	repair off=N      fold Repairs() at offsets N, N+1, ...
//	retractions       list Retractions() ("now": Retraction.Now)
//	retract off=N     fold a tombstone for every Retractions() key at N, N+1, ...
//	boundary    the committed boundary, each partition with the plan that set it
//	            (what the recovery gate compares markers with: package gate's
//	            transcripts, gate/testdata, show its answers)
//	compact     replay the log compacted by key (tombstones gone with their
//	            keys) in a fresh projection and print its state
//	reader below=N  the log cleaner as Kafka runs it with min.compaction.lag:
//	            only records below offset N are old enough, so a record goes
//	            when a later record of its key is below N (tombstones stay);
//	            then a fresh projection reads what is left, printing every
//	            verdict, and replaces the transcript's projection and log
//	atrisk      AtRisk(): "not at risk", or "at risk: <sentence>"
//	digest      whether a second fold of the same records has the same Digest
//	reset       start over with an empty projection and log
func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		tr := newTranscript()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return tr.run(t, d)
		})
	})
}

type transcript struct {
	s     *State
	log   []Record
	plans map[string]events.Plan
	names *strings.Replacer // real IDs → names, for output
	pairs []string          // the pairs names is built from
	tids  map[string]string // T1 → topic ID
	// pinIDs: pin name → pin ID
	pinIDs map[string]string
}

func newTranscript() *transcript {
	tr := &transcript{s: New(KeepAudit()), plans: map[string]events.Plan{}, tids: map[string]string{}}
	for i := byte(1); i <= 3; i++ {
		name := fmt.Sprintf("T%d", i)
		tr.tids[name] = testTopicID(i)
		tr.pairs = append(tr.pairs, testTopicID(i), name)
	}
	tr.names = strings.NewReplacer(tr.pairs...)
	return tr
}

func (tr *transcript) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "plan":
		return tr.plan(t, d)
	case "record":
		return tr.record(t, d)
	case "mirror":
		var off int64
		var ev, topic string
		tid, reason, actor := "T2", "the transcript", "operator"
		d.ScanArgs(t, "off", &off)
		d.ScanArgs(t, "event", &ev)
		d.ScanArgs(t, "topic", &topic)
		d.MaybeScanArgs(t, "tid", &tid)
		d.MaybeScanArgs(t, "reason", &reason)
		d.MaybeScanArgs(t, "actor", &actor)
		m := events.Mirror{Topic: topic, TopicID: tr.topicID(t, tid), Reason: reason}
		if d.HasArg("grace") { // a MIRROR_ATTACHED of version 4 with this restore grace
			var g string
			d.ScanArgs(t, "grace", &g)
			dur, err := time.ParseDuration(g)
			if err != nil {
				d.Fatalf(t, "grace=%q: %v", g, err)
			}
			m.HasGrace, m.RestoreGrace = true, dur
		}
		env := events.NewMirrorEvent(events.Event(ev), m, testEpoch.Add(time.Duration(off)*time.Second), actor)
		k, v := env.Encode()
		return tr.fold(Record{Offset: off, Key: k, Value: v, Timestamp: testEpoch.Add(time.Duration(off) * time.Second), Headers: maintHeaders(d)})
	case "pin", "unpin":
		return tr.pinEvent(t, d)
	case "state":
		return tr.show(tr.s)
	case "audit":
		var b strings.Builder
		for _, v := range tr.s.Audit() {
			b.WriteString(tr.verdictLine(v))
		}
		return tr.names.Replace(b.String())
	case "pending":
		var b strings.Builder
		for _, o := range tr.s.Pending() {
			fmt.Fprintf(&b, "%s %s\n", o.PlanID, o.State)
		}
		if b.Len() == 0 {
			return "none\n"
		}
		return tr.names.Replace(b.String())
	case "repair":
		var off int64
		d.ScanArgs(t, "off", &off)
		var b strings.Builder
		for _, r := range tr.s.Repairs() {
			r.Offset = off
			off++
			r.Headers = maintHeaders(d)
			b.WriteString(tr.fold(r))
		}
		if b.Len() == 0 {
			return "nothing to repair\n"
		}
		return b.String()
	case "retractions":
		var b strings.Builder
		for _, r := range tr.s.Retractions() {
			fmt.Fprintf(&b, "%s (latest record at %d)%s\n", printableKey(string(r.Key)), r.Offset, nowMark(r))
		}
		if b.Len() == 0 {
			return "nothing to retract\n"
		}
		return tr.names.Replace(b.String())
	case "retract":
		var off int64
		d.ScanArgs(t, "off", &off)
		var b strings.Builder
		for _, r := range tr.s.Retractions() {
			b.WriteString(tr.fold(Record{Offset: off, Key: r.Key, Timestamp: testEpoch.Add(time.Duration(off) * time.Second), Headers: maintHeaders(d)}))
			off++
		}
		if b.Len() == 0 {
			return "nothing to retract\n"
		}
		return b.String()
	case "boundary":
		b := tr.s.Boundary()
		if len(b) == 0 {
			return "none\n"
		}
		var out strings.Builder
		for _, p := range b.Partitions() {
			fmt.Fprintf(&out, "%d=%d (set by %s)\n", p, b[p], tr.s.BoundarySetBy(p))
		}
		return tr.names.Replace(out.String())
	case "compact":
		return tr.show(fold(compact(tr.log, true)))
	case "reader":
		var below int64
		d.ScanArgs(t, "below", &below)
		tr.log = compactBelow(tr.log, below)
		tr.s = New(KeepAudit())
		var b strings.Builder
		for _, r := range tr.log {
			b.WriteString(tr.names.Replace(tr.verdictLine(tr.s.Step(r))))
		}
		return b.String()
	case "atrisk":
		if risk, why := tr.s.AtRisk(); risk {
			return tr.names.Replace("at risk: " + why + "\n")
		}
		return "not at risk\n"
	case "digest":
		again := fold(tr.log)
		if again.Digest() != tr.s.Digest() {
			return "different\n"
		}
		return "same\n"
	case "reset":
		tr.s, tr.log = New(KeepAudit()), nil
		return "ok\n"
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

func (tr *transcript) plan(t *testing.T, d *datadriven.TestData) string {
	var name, rp, offsets string
	topic, tid := testTopic, "T1"
	d.ScanArgs(t, "id", &name)
	d.ScanArgs(t, "rp", &rp)
	d.ScanArgs(t, "offsets", &offsets)
	d.MaybeScanArgs(t, "topic", &topic)
	d.MaybeScanArgs(t, "tid", &tid)
	p := newPlan(rp, topic, tr.topicID(t, tid), parseOffsets(t, offsets))
	if err := p.Validate(); err != nil {
		d.Fatalf(t, "plan %s: %v", name, err)
	}
	tr.plans[name] = p
	tr.pairs = append(tr.pairs, p.PlanID, name)
	tr.names = strings.NewReplacer(tr.pairs...)
	return tr.names.Replace(fmt.Sprintf("%s: %s (%s) from %s, offsets %s\n", p.PlanID, p.Topic, p.TopicID, rp, formatOffsets(p.Offsets)))
}

func (tr *transcript) topicID(t *testing.T, name string) string {
	if id, ok := tr.tids[name]; ok {
		return id
	}
	return name // a literal, possibly invalid, ID
}

// resolve turns "<p1>" and "<T1>" in text, and "p1/EVENT" in a key, into IDs.
func (tr *transcript) resolve(text string) string {
	var pairs []string
	for name, p := range tr.plans {
		pairs = append(pairs, "<"+name+">", p.PlanID)
	}
	for name, id := range tr.tids {
		pairs = append(pairs, "<"+name+">", id)
	}
	for name, id := range tr.pinIDs {
		pairs = append(pairs, "<"+name+">", id)
	}
	return strings.NewReplacer(pairs...).Replace(text)
}

func (tr *transcript) record(t *testing.T, d *datadriven.TestData) string {
	var off int64
	d.ScanArgs(t, "off", &off)
	var key string
	if d.MaybeScanArgs(t, "key", &key) {
		if id, rest, ok := strings.Cut(key, "/"); ok {
			if p, ok := tr.plans[id]; ok {
				key = p.PlanID + "/" + rest
			}
		}
		key = tr.resolve(key)
	}
	r := Record{Offset: off, Key: []byte(key), Timestamp: testEpoch.Add(time.Duration(off) * time.Second), Headers: maintHeaders(d)}
	switch {
	case d.HasArg("raw"):
		raw := strings.TrimSpace(d.Input)
		if a, _ := d.Arg("raw"); len(a.Vals) > 0 && a.Vals[0] != "" {
			raw = a.Vals[0] // raw=<json without spaces>
		}
		r.Value = []byte(tr.resolve(raw))
	case d.HasArg("tombstone") && key != "":
	default:
		env := tr.envelope(t, d, off)
		k, v := env.Encode()
		if key == "" {
			r.Key = k
		}
		if !d.HasArg("tombstone") {
			r.Value = v
		}
	}
	return tr.fold(r)
}

// envelope builds the record's envelope from its arguments.
func (tr *transcript) envelope(t *testing.T, d *datadriven.TestData, off int64) events.Envelope {
	var name, ev string
	d.ScanArgs(t, "plan", &name)
	d.ScanArgs(t, "event", &ev)
	p, ok := tr.plans[name]
	if !ok {
		d.Fatalf(t, "unknown plan %q", name)
	}
	actor := "worker-1"
	d.MaybeScanArgs(t, "actor", &actor)
	env := envelope(p, events.Event(ev), off, actor)
	var s string
	switch {
	case d.MaybeScanArgs(t, "boundary", &s):
		env.Boundary = parseOffsets(t, s)
	case env.Event == events.Committed:
		env.Boundary = nextBoundary(tr.s.Boundary(), p.Offsets)
	}
	switch {
	case d.MaybeScanArgs(t, "logstart", &s):
		env.LogStart = parseOffsets(t, s)
	case env.Event == events.Applied:
		env.LogStart = p.Offsets.Clone()
	}
	if d.HasArg("tamper") {
		env.Plan.Offsets = p.Offsets.Clone()
		first := env.Plan.Offsets.Partitions()[0]
		env.Plan.Offsets[first]++
	}
	return env
}

// fold steps one record, keeps it in the log (unless out of order) and
// prints the verdict.
func (tr *transcript) fold(r Record) string {
	before := tr.s.coreDigest()
	was := snap(tr.s)
	v := tr.s.Step(r)
	if v.Reason != ReasonOutOfOrder {
		tr.log = append(tr.log, r)
	}
	line := tr.verdictLine(v)
	if v.Covered {
		line = strings.TrimSuffix(line, "\n") + " [covered]\n"
	}
	if m := v.Maintenance; m != nil {
		line = strings.TrimSuffix(line, "\n") + fmt.Sprintf(" [maintenance %s by %s: %s]\n", m.Kind, m.Actor, m.Reason)
	}
	if v.Reason == ReasonCommitMissing {
		if diff := was.evidenceChange(tr.s); diff != "" {
			line += "BUG: evidence of an erased COMMITTED changed more than it may: " + diff + "\n"
		}
	} else if v.Outcome != Accepted && tr.s.coreDigest() != before {
		line += "BUG: a non-accepted record changed the boundary, binding or operations\n"
	}
	return tr.names.Replace(line)
}

func (tr *transcript) verdictLine(v Verdict) string {
	what := string(v.Outcome)
	if v.Reason != "" {
		what += " " + string(v.Reason)
	}
	return fmt.Sprintf("%d %s: %s: %s\n", v.Offset, printableKey(v.Key), what, v.Detail)
}

// nowMark marks a retraction a worker appends at once (Retraction.Now).
func nowMark(r Retraction) string {
	if r.Now {
		return " now: its winner moved past it"
	}
	return ""
}

func printableKey(k string) string {
	if k == "" {
		return `""`
	}
	return k
}

// show prints a projection. Names stand for IDs.
func (tr *transcript) show(s *State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "next: %d\n", s.Next())
	if topic, tid, ok := s.Binding(); ok {
		fmt.Fprintf(&b, "binding: %s %s\n", topic, tid)
	} else {
		b.WriteString("binding: none\n")
	}
	bd := s.Boundary()
	if len(bd) == 0 {
		b.WriteString("boundary: none\n")
	}
	for _, p := range bd.Partitions() {
		fmt.Fprintf(&b, "boundary: %d:%d set by %s\n", p, bd[p], s.BoundarySetBy(p))
	}
	if ok, why := s.Degraded(); ok {
		fmt.Fprintf(&b, "degraded: %s\n", why)
	}
	if m, ok := s.Mirror(); ok {
		grace := ""
		if m.HasGrace {
			grace = ", restore grace " + m.RestoreGrace.String()
		}
		fmt.Fprintf(&b, "mirror: %s %s (attached at %d%s)\n", m.Topic, m.TopicID, m.Offset, grace)
	} else if len(s.MirrorHistory()) > 0 {
		b.WriteString("mirror: none\n")
	}
	for _, p := range s.Pins() {
		fmt.Fprintf(&b, "pin %s %s offsets=%s at=%d", p.PinID, p.Status(testEpoch.Add(time.Duration(s.Next())*time.Second)), formatOffsets(p.Offsets), p.Offset)
		if !p.Expires.IsZero() {
			fmt.Fprintf(&b, " expires=%d", int64(p.Expires.Sub(testEpoch)/time.Second))
		}
		for _, part := range p.Offsets.Partitions() {
			if v, ok := p.Void[part]; ok {
				fmt.Fprintf(&b, " void=%d:%d", part, v.Boundary)
			}
		}
		if p.Unpinned != nil {
			fmt.Fprintf(&b, " unpinned=%d", p.Unpinned.Offset)
		}
		if len(p.Rejected) > 0 {
			fmt.Fprintf(&b, " rejected=%v", p.Rejected)
		}
		b.WriteString("\n")
	}
	for _, o := range s.Operations() {
		fmt.Fprintf(&b, "op %s %s", o.PlanID, o.State)
		if o.Boundary != nil {
			fmt.Fprintf(&b, " boundary=%s", formatOffsets(o.Boundary))
		}
		if o.LogStart != nil {
			fmt.Fprintf(&b, " logstart=%s", formatOffsets(o.LogStart))
		}
		if o.DeleteAttempts > 0 {
			fmt.Fprintf(&b, " attempts=%d", o.DeleteAttempts)
		}
		for _, e := range o.Implied {
			fmt.Fprintf(&b, " implied=%s", e)
		}
		if o.Covered {
			b.WriteString(" covered")
		}
		for _, e := range o.Evidence {
			fmt.Fprintf(&b, " evidence=%s", e)
		}
		var steps []string
		for _, st := range o.History {
			steps = append(steps, fmt.Sprintf("%d:%s", st.Offset, st.Event))
		}
		fmt.Fprintf(&b, " history=%s\n", strings.Join(steps, ","))
	}
	for _, v := range s.Rejected() {
		fmt.Fprintf(&b, "rejected %d %s: %s\n", v.Offset, printableKey(v.Key), v.Reason)
	}
	for _, r := range s.Repairs() {
		fmt.Fprintf(&b, "repair %s (accepted at %d)\n", r.Key, r.Offset)
	}
	for _, r := range s.Retractions() {
		fmt.Fprintf(&b, "retract %s (latest record at %d)%s\n", printableKey(string(r.Key)), r.Offset, nowMark(r))
	}
	return tr.names.Replace(b.String())
}

// TestTranscriptsCoverReasons: every rejection reason is shown in some
// transcript, so that each rule has an example a reader can find.
func TestTranscriptsCoverReasons(t *testing.T) {
	var all strings.Builder
	files, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("testdata", f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	for _, r := range Reasons() {
		if !strings.Contains(all.String(), "rejected "+string(r)+":") {
			t.Errorf("no transcript shows a %s rejection", r)
		}
	}
}

// maintHeaders are the headers of a worker's maintenance record of the kind
// maint=KIND names, or none.
func maintHeaders(d *datadriven.TestData) []Header {
	a, ok := d.Arg("maint")
	if !ok || len(a.Vals) == 0 {
		return nil
	}
	return []Header{
		{Key: HeaderMaintenance, Value: []byte(a.Vals[0])},
		{Key: HeaderActor, Value: []byte("worker/w1")},
		{Key: HeaderReason, Value: []byte(a.Vals[0] + " by the transcript")},
	}
}

// pinEvent folds a PINNED or UNPINNED (the pin and unpin commands).
func (tr *transcript) pinEvent(t *testing.T, d *datadriven.TestData) string {
	var off int64
	var name string
	d.ScanArgs(t, "off", &off)
	d.ScanArgs(t, "name", &name)
	atOff := off
	d.MaybeScanArgs(t, "at", &atOff) // a retry of the record written at atOff
	at := testEpoch.Add(time.Duration(atOff) * time.Second)
	actor, reason := "operator", "the-transcript"
	d.MaybeScanArgs(t, "actor", &actor)
	d.MaybeScanArgs(t, "reason", &reason)
	var env events.Envelope
	if d.Cmd == "unpin" {
		id, ok := tr.pinIDs[name]
		if !ok {
			id = name // a pin the log does not hold
		}
		env = events.NewUnpin(id, reason, at, actor)
	} else {
		var rp, offsets string
		topic, tid := testTopic, "T1"
		var expires time.Time
		var n int64
		d.ScanArgs(t, "rp", &rp)
		d.ScanArgs(t, "offsets", &offsets)
		d.MaybeScanArgs(t, "topic", &topic)
		d.MaybeScanArgs(t, "tid", &tid)
		if d.MaybeScanArgs(t, "expires", &n) {
			expires = testEpoch.Add(time.Duration(n) * time.Second)
		}
		env = events.NewPin(rp, topic, tr.topicID(t, tid), parseOffsets(t, offsets), expires, reason, at, actor)
		if tr.pinIDs == nil {
			tr.pinIDs = map[string]string{}
		}
		tr.pinIDs[name] = env.Pin.PinID
		tr.pairs = append(tr.pairs, env.Pin.PinID, name)
		tr.names = strings.NewReplacer(tr.pairs...)
	}
	if err := env.Validate(); err != nil {
		d.Fatalf(t, "%s: %v", d.Cmd, err)
	}
	k, v := env.Encode()
	return tr.fold(Record{Offset: off, Key: k, Value: v, Timestamp: at, Headers: maintHeaders(d)})
}
