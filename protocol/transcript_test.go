package protocol

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
)

// TestTranscripts runs the datadriven files under testdata/: each run of the
// protocol step by step, answered by a simulated cluster, with the faults
// the input names. Regenerate with `go test ./protocol -run
// TestTranscripts -rewrite` and review the diff. Plan IDs print as their
// names (p1), topic IDs as T1, T2.
//
//	topic partitions=0,1 end=0:200,1:200 [start=..] [tid=T1] [policy=compact,delete] [retention=-1]
//	    the live data topic action-state
//	set [tid=T2] [policy=..] [retention=..] [start=..] [end=..] [missing] [back]
//	    [tombstones=0:160] [scanlimit=n]
//	    change the live topic (missing: delete it; back: recreate it;
//	    tombstones: the latest tombstone per partition; scanlimit: a scan
//	    reads at most n offsets per partition). Once tombstones or scanlimit
//	    is set, every scan and its answer is printed.
//	plan id=p1 rp=C1 offsets=0:150,1:100 [tid=T1]
//	record plan=p1 event=COMMITTED [boundary=..] [logstart=..]
//	    another writer appends a record (the run's projection folds it at its
//	    next catch-up or read-back)
//	run adopt plans=a,b [applied=b] [from=action-state.kcleanup] [boundary=0:1]
//	    adopt a Flink Agents control topic (from, default flink-control)
//	    whose job enforces plans a and b (applied: the ones its tool
//	    APPLIED), its effective boundary theirs unless given
//	run pin name=s2 rp=SP offsets=0:120,1:120 [tid=T2] [expires=N] [reason=..]
//	    NewPin: this run pins (expires N seconds after its record; reason
//	    "-" for a blank one)
//	run apply|finish|submit|preflight|recommit plan=p1 [nowait] [finishafter] [acls] [allowtombstones]
//	    one run to its end (acls: print what each Permissions step asks for);
//	    each input line alters one step, by number, by kind (the first step of
//	    that kind) or by kind#n (its n-th):
//	      <step>: fail [code=<n>] <text>  the request fails (with Kafka error
//	                                code n), nothing happens
//	      <step>: timeout           it takes effect, then reports a timeout
//	      <step>: denied [<op> ...] access denied: a Permissions step answers
//	                                that the ACLs of those operations (all
//	                                when none is named) are missing, any other
//	                                step fails with TOPIC_AUTHORIZATION_FAILED
//	      <step>: partition <p> <code> <text>  (delete) partition p answers
//	                                Kafka error code <code>
//	      <step>: before <command>  a record or set command runs first
//	mirror attach|detach topic=m [tid=T2] [grace=15m]   append a mirror event to the control topic
//	    (grace: a MIRROR_ATTACHED of schema version 4 that carries that restore grace)
//	mirror set [missing] [back] [tid=T3] [policy=..] [partitions=0,1]   change the mirror topic
//	mirror record plan=p1 status=COMMITTED|APPLIED | tombstone   another writer writes the mirror
//	mirror show   the mirror's records and the job's effective boundary
//	run sync      NewMirrorSync
//	pin name=s1 rp=SP offsets=0:120,1:120 [expires=N]   another writer pins (expires N records later)
//	unpin name=s1   another writer unpins s1 (both also as "before pin ..." in a run)
//	clocks [other=2h] [run=-24h] [createtime]   the writers' clocks against
//	    the broker's: each record is appended at the broker's 09:00:<n>
//	    (n counts records) and stamped with its writer's clock, that much
//	    ahead (or behind); createtime: the control topic's records carry
//	    their writer's time, not the broker's (message.timestamp.type)
//	wait for=20s   the broker's clock runs on by that much (beyond the second per record)
//	state    boundary and operations of the run's projection
//	run finish plan=p1 owner [failures=n]   also print the owner's decision on the
//	    run's end (OwnerRetry.After, ownerRetry's schedule; n: failures of the
//	    streak counting this one, default 1)
//	gate [settings=blocked|fail] [shared=blocked|fail] [tombstones=blocked|fail]
//	    the owner's gate before driving a pending operation (OwnerFacts.Gate)
//	foreign plan=p1   another writer appends a record keyed by p1's bare plan
//	    ID, as Flink Agents' cleanup tool does
//	maintenance [grace=1m] [append]   what the owner appends to keep the
//	    compacted log equivalent (Maintenance, at the broker's time of the
//	    next record); append: append it and list again
func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.HasPrefix(path, "testdata/follow/") {
			return // TestFollowTranscripts: a pure decision, not a run
		}
		h := newHarness()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.run(t, d)
		})
	})
}

const dataTopic = "action-state"

type harness struct {
	st      *projector.State
	log     []projector.Record // the control topic
	read    int                // how much of log st has folded
	topic   Topic
	missing bool
	plans   map[string]events.Plan
	names   *strings.Replacer
	pairs   []string
	tids    map[string]string
	actors  int
	mirror  simMirror
	acls    bool // print what Permissions steps ask for
	// tombstones is the latest tombstone per partition of the data topic;
	// scanLimit bounds a scan per partition (0: none); showScan prints scans.
	tombstones events.Offsets
	scanLimit  int64
	showScan   bool
	pinIDs     map[string]string
	// clock is the executor's clock (clockNow), for the restore grace.
	clock time.Time
	// skew is, by actor, how far its clock runs ahead of the broker's;
	// createTime: records carry no broker time (clocks).
	skew       map[string]time.Duration
	createTime bool
	// waited is how much longer than a second per record the broker's
	// clock has run (wait).
	waited time.Duration
}

func topicID(n byte) string {
	var b [16]byte
	b[0], b[7] = n, 0x5a
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func newHarness() *harness {
	h := &harness{st: projector.New(), plans: map[string]events.Plan{}, tids: map[string]string{}}
	for i := byte(1); i <= 3; i++ {
		name := fmt.Sprintf("T%d", i)
		h.tids[name] = topicID(i)
		h.pairs = append(h.pairs, topicID(i), name)
	}
	h.names = strings.NewReplacer(h.pairs...)
	return h
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "topic":
		h.topic = Topic{Name: dataTopic, ID: h.tids["T1"], Replicas: 1, Configs: map[string]string{
			"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1"}}
		h.missing = false
		h.set(t, d.CmdArgs)
		return h.showTopic()
	case "set":
		h.set(t, d.CmdArgs)
		return h.showTopic()
	case "plan":
		var id, rp, offs string
		d.ScanArgs(t, "id", &id)
		d.ScanArgs(t, "rp", &rp)
		d.ScanArgs(t, "offsets", &offs)
		tid := "T1"
		if d.HasArg("tid") {
			d.ScanArgs(t, "tid", &tid)
		}
		o := offsets(t, offs)
		p := events.Plan{SourceRecoveryPoint: rp, Topic: dataTopic, TopicID: h.tids[tid], Offsets: o,
			PlanID: events.ComputePlanID(rp, dataTopic, h.tids[tid], o)}
		h.plans[id] = p
		h.pairs = append(h.pairs, p.PlanID, id)
		h.names = strings.NewReplacer(h.pairs...)
		return fmt.Sprintf("%s: %s (%s) from %s, offsets %s\n", id, dataTopic, tid, rp, o)
	case "record":
		return h.record(t, d.CmdArgs)
	case "pin", "unpin":
		return h.pinCmd(t, d.Cmd, d.CmdArgs)
	case "mirror":
		return h.mirrorCmd(t, d)
	case "mirror-write-failed":
		return mirrorWriteFailed(t, d)
	case "run":
		return h.runProtocol(t, d)
	case "clocks":
		h.skew, h.createTime = map[string]time.Duration{}, false
		var b strings.Builder
		for _, a := range d.CmdArgs {
			if a.Key == "createtime" {
				h.createTime = true
				b.WriteString("the control topic's records carry their writer's time (CreateTime)\n")
				continue
			}
			skew, err := time.ParseDuration(strings.Join(a.Vals, ""))
			if err != nil {
				d.Fatalf(t, "clocks: %s=%q: %v", a.Key, a.Vals, err)
			}
			h.skew[a.Key] = skew
			fmt.Fprintf(&b, "%s's clock runs %s ahead of the broker's\n", a.Key, skew)
		}
		return b.String()
	case "wait":
		var dur string
		d.ScanArgs(t, "for", &dur)
		w, err := time.ParseDuration(dur)
		if err != nil {
			d.Fatalf(t, "wait: for=%q: %v", dur, err)
		}
		h.waited += w
		return fmt.Sprintf("the broker's clock runs on %s\n", w)
	case "clock":
		var at string
		d.ScanArgs(t, "at", &at)
		h.clock = clockAt(t, at)
		return "clock " + at + "\n"

	case "gate":
		return h.gate(t, d)
	case "foreign":
		var name string
		d.ScanArgs(t, "plan", &name)
		plan, ok := h.plans[name]
		if !ok {
			d.Fatalf(t, "foreign: unknown plan %q", name)
		}
		h.actors++
		off := int64(len(h.log))
		h.log = append(h.log, projector.Record{Offset: off, Key: []byte(plan.PlanID), Value: []byte(`{"status":"COMMITTED"}`), Timestamp: h.brokerNow(), LogAppendTime: true})
		return fmt.Sprintf("flink agents: record under the bare key %s at %d\n", name, off)
	case "maintenance":
		return h.maintenance(t, d)
	case "state":
		h.catchUp()
		var b strings.Builder
		fmt.Fprintf(&b, "boundary %s\n", h.st.Boundary())
		for _, op := range h.st.Operations() {
			fmt.Fprintf(&b, "%s %s attempts=%d\n", op.PlanID, op.State, op.DeleteAttempts)
		}
		fmt.Fprintf(&b, "log start %s\n", h.topic.Start)
		return h.names.Replace(b.String())
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

func offsets(t *testing.T, s string) events.Offsets {
	o := events.Offsets{}
	for _, pair := range strings.Split(s, ",") {
		p, off, ok := strings.Cut(pair, ":")
		pn, err1 := strconv.Atoi(p)
		on, err2 := strconv.ParseInt(off, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("bad offsets %q", s)
		}
		o[int32(pn)] = on
	}
	return o
}

func (h *harness) set(t *testing.T, args []datadriven.CmdArg) {
	for _, a := range args {
		v := strings.Join(a.Vals, ",")
		switch a.Key {
		case "partitions":
			h.topic.Partitions = nil
			for _, p := range strings.Split(v, ",") {
				n, _ := strconv.Atoi(p)
				h.topic.Partitions = append(h.topic.Partitions, int32(n))
			}
			if h.topic.Start == nil {
				h.topic.Start = events.Offsets{}
				for _, p := range h.topic.Partitions {
					h.topic.Start[p] = 0
				}
			}
		case "start":
			h.topic.Start = offsets(t, v)
		case "end":
			h.topic.End = offsets(t, v)
		case "tid":
			h.topic.ID = h.tids[v]
		case "policy":
			h.topic.Configs["cleanup.policy"] = v
		case "retention":
			h.topic.Configs["retention.ms"] = v
		case "tombstones":
			h.tombstones, h.showScan = offsets(t, v), true
		case "scanlimit":
			h.scanLimit, _ = strconv.ParseInt(v, 10, 64)
			h.showScan = true
		case "missing":
			h.missing = true
		case "back":
			h.missing = false
		default:
			t.Fatalf("set: unknown argument %q", a.Key)
		}
	}
}

func (h *harness) showTopic() string {
	if h.missing {
		return "topic action-state does not exist\n"
	}
	return h.names.Replace(fmt.Sprintf("topic %s (%s) policy=%s retention.ms=%s start %s end %s\n", h.topic.Name, h.topic.ID,
		h.topic.Configs["cleanup.policy"], h.topic.Configs["retention.ms"], h.topic.Start, h.topic.End))
}

// record appends another writer's record; the run's projection sees it at
// its next read.
func (h *harness) record(t *testing.T, args []datadriven.CmdArg) string {
	var name, ev, boundary, logStart string
	for _, a := range args {
		v := strings.Join(a.Vals, ",")
		switch a.Key {
		case "plan":
			name = v
		case "event":
			ev = v
		case "boundary":
			boundary = v
		case "logstart":
			logStart = v
		}
	}
	plan, ok := h.plans[name]
	if !ok {
		t.Fatalf("record: unknown plan %q", name)
	}
	env := events.Envelope{SchemaVersion: events.SchemaVersion, Event: events.Event(ev), PlanID: plan.PlanID, Plan: plan}
	switch env.Event {
	case events.Committed:
		env.Boundary = CommitBoundary(h.lookahead(), plan)
		if boundary != "" {
			env.Boundary = offsets(t, boundary)
		}
	case events.Applied:
		env.LogStart = plan.Offsets.Clone()
		if logStart != "" {
			env.LogStart = offsets(t, logStart)
		}
	}
	off := h.append(env, "other")
	return h.names.Replace(fmt.Sprintf("other writer: %s/%s at %d\n", name, ev, off))
}

// lookahead folds the whole log in a fresh projection: what another writer,
// caught up, would see.
func (h *harness) lookahead() *projector.State {
	s := projector.New()
	for _, r := range h.log {
		s.Step(r)
	}
	return s
}

func (h *harness) append(env events.Envelope, actor string) int64 {
	h.actors++
	broker := h.brokerNow()
	if env.At.IsZero() { // a PINNED comes stamped by its writer (its ID covers it)
		env.At = broker.Add(h.skew[actor])
		env.Actor = actor
	}
	key, value := env.Encode()
	off := int64(len(h.log))
	r := projector.Record{Offset: off, Key: key, Value: value, Timestamp: broker, LogAppendTime: true}
	if h.createTime {
		r.Timestamp, r.LogAppendTime = env.At, false
	}
	h.log = append(h.log, r)
	return off
}

// brokerNow is the broker's time of the record being appended.
func (h *harness) brokerNow() time.Time { return h.brokerAt(h.actors) }

// brokerAt is the broker's time of the n-th record appended: a second
// after the one before, plus the time waited (wait).
func (h *harness) brokerAt(n int) time.Time {
	return time.Date(2026, 12, 1, 9, 0, n, 0, time.UTC).Add(h.waited)
}

func (h *harness) catchUp() []projector.Verdict {
	var vs []projector.Verdict
	for ; h.read < len(h.log); h.read++ {
		vs = append(vs, h.st.Step(h.log[h.read]))
	}
	return vs
}

type fault struct {
	action string
	args   []string
}

func (h *harness) runProtocol(t *testing.T, d *datadriven.TestData) string {
	var mode, name string
	d.MaybeScanArgs(t, "plan", &name)
	for _, a := range d.CmdArgs {
		if len(a.Vals) == 0 && a.Key != "nowait" && a.Key != "finishafter" && a.Key != "acls" && a.Key != "allowtombstones" && a.Key != "owner" && a.Key != "sleep" {
			mode = a.Key
		}
	}
	plan, ok := h.plans[name]
	if !ok && mode != "sync" && mode != "adopt" && mode != "pin" {
		d.Fatalf(t, "run: unknown plan %q", name)
	}
	cfg := Config{ControlTopic: "action-state.kcleanup", Bootstrap: "localhost:9092", NoWait: d.HasArg("nowait"),
		Principal: "User:kcleanup", AllowTombstones: d.HasArg("allowtombstones"),
		Now: h.brokerAt(h.actors + 1).Add(h.skew["run"])} // the time of the next record appended
	h.acls = d.HasArg("acls")
	if d.HasArg("grace") {
		var g, seen string
		d.ScanArgs(t, "grace", &g)
		var err error
		if cfg.RestoreGrace, err = time.ParseDuration(g); err != nil {
			d.Fatalf(t, "run: grace=%s: %v", g, err)
		}
		if d.MaybeScanArgs(t, "seen", &seen); seen != "" {
			cfg.GraceSeen = clockAt(t, seen)
		}
	}
	var r *Run
	switch mode {
	case "apply":
		r = NewApply(plan, cfg)
	case "finish":
		r = NewFinish(plan.PlanID, cfg)
	case "submit":
		r = NewSubmit(plan, cfg)
	case "preflight":
		r = NewPreflight(plan, cfg)
	case "sync":
		r = NewMirrorSync(cfg)
	case "recommit":
		r = NewRecommit(plan, cfg)
	case "adopt":
		r = NewAdopt(h.adoption(t, d), cfg)
	case "pin":
		r = NewPin(h.pinRecord(t, d), cfg)
	default:
		d.Fatalf(t, "run: mode apply, finish, submit, preflight, recommit or sync")
	}
	faults := map[string]fault{}
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		at, what, ok := strings.Cut(line, ":")
		fs := strings.Fields(what)
		if !ok || len(fs) == 0 {
			d.Fatalf(t, "run: bad fault line %q", line)
		}
		faults[strings.TrimSpace(at)] = fault{fs[0], fs[1:]}
	}
	var b strings.Builder
	seenKind := map[Kind]int{}
	var rep Report
	for n := 1; n < 50; n++ {
		step := r.Next(h.st, rep)
		for _, note := range step.Notes {
			fmt.Fprintf(&b, "  [%s] %s\n", note.Step, note.Message)
		}
		// With sleep, the executor sleeps through a Pause as kcleanup apply
		// does (both clocks run on) and reports back; without, a Pause ends
		// the transcript's run as it ends a worker's: the executor hands it
		// to its scheduler (OwnerRetry.After).
		if step.Kind == Pause && d.HasArg("sleep") {
			w := step.Pause.Wait(h.clockNow())
			fmt.Fprintf(&b, "%d pause: the executor sleeps %s\n", n, w)
			h.clock, h.waited = h.clockNow().Add(w), h.waited+w
			rep = Report{}
			continue
		}
		if step.Kind.Terminal() || step.Kind == Pause {
			b.WriteString(h.terminal(step))
			if d.HasArg("owner") {
				failures := 1
				d.MaybeScanArgs(t, "failures", &failures)
				b.WriteString(ownerLine(ownerRetry.After(step.Err, 0, step.Pause, failures, cfg.Now), cfg.Now))
			}
			return h.names.Replace(b.String())
		}
		seenKind[step.Kind]++
		f, ok := faults[strconv.Itoa(n)]
		if !ok {
			f, ok = faults[fmt.Sprintf("%s#%d", step.Kind, seenKind[step.Kind])]
		}
		if !ok && seenKind[step.Kind] == 1 {
			f, ok = faults[string(step.Kind)]
		}
		if ok && f.action == "before" {
			sub := f.args
			args := make([]datadriven.CmdArg, 0, len(sub)-1)
			for _, kv := range sub[1:] {
				k, v, has := strings.Cut(kv, "=")
				a := datadriven.CmdArg{Key: k}
				if has {
					a.Vals = strings.Split(v, ",")
				}
				args = append(args, a)
			}
			switch sub[0] {
			case "record":
				fmt.Fprintf(&b, "  (%s)", strings.TrimSuffix(h.record(t, args), "\n"))
			case "pin", "unpin":
				fmt.Fprintf(&b, "  (%s)", strings.TrimSuffix(h.pinCmd(t, sub[0], args), "\n"))
			case "set":
				h.set(t, args)
				fmt.Fprintf(&b, "  (now %s)", strings.TrimSuffix(h.showTopic(), "\n"))
			case "mirror":
				fmt.Fprintf(&b, "  (%s)", strings.TrimSuffix(h.mirrorDo(t, args), "\n"))
			}
			b.WriteString("\n")
			ok = false
		}
		fmt.Fprintf(&b, "%d %s\n", n, h.describeStep(step))
		rep = h.execute(step, f, ok)
		if s := h.describeReport(step, rep); s != "" {
			fmt.Fprintf(&b, "  -> %s\n", s)
		}
	}
	t.Fatalf("run did not end in 50 steps:\n%s", b.String())
	return ""
}

// pinRecord is the PINNED a `run pin` line makes, stamped as the run's
// executor stamps it.
func (h *harness) pinRecord(t *testing.T, d *datadriven.TestData) events.Envelope {
	var name, rp, offs, tid, reason string
	expires := -1
	d.ScanArgs(t, "name", &name)
	d.ScanArgs(t, "rp", &rp)
	d.ScanArgs(t, "offsets", &offs)
	tid, reason = "T1", "the transcript"
	d.MaybeScanArgs(t, "tid", &tid)
	d.MaybeScanArgs(t, "expires", &expires)
	d.MaybeScanArgs(t, "reason", &reason)
	if reason == "-" {
		reason = " "
	}
	at := h.brokerAt(h.actors + 1).Add(h.skew["run"])
	var exp time.Time
	if expires >= 0 {
		exp = at.Add(time.Duration(expires) * time.Second)
	}
	env := events.NewPin(rp, dataTopic, h.tids[tid], offsets(t, offs), exp, reason, at, "run")
	if h.pinIDs == nil {
		h.pinIDs = map[string]string{}
	}
	h.pinIDs[name] = env.Pin.PinID
	h.pairs = append(h.pairs, env.Pin.PinID, name)
	h.names = strings.NewReplacer(h.pairs...)
	return env
}

// adoption is the Flink Agents control topic a `run adopt` line describes.
func (h *harness) adoption(t *testing.T, d *datadriven.TestData) Adoption {
	a := Adoption{FlinkTopic: "flink-control", DataTopic: dataTopic, TopicID: h.topic.ID, Boundary: events.Offsets{}}
	var names, applied, boundary string
	d.ScanArgs(t, "plans", &names)
	d.MaybeScanArgs(t, "applied", &applied)
	d.MaybeScanArgs(t, "from", &a.FlinkTopic)
	d.MaybeScanArgs(t, "boundary", &boundary)
	for i, name := range strings.Split(names, ",") {
		plan, ok := h.plans[name]
		if !ok {
			d.Fatalf(t, "run adopt: unknown plan %q", name)
		}
		a.Plans = append(a.Plans, AdoptPlan{Plan: plan, FlinkOffset: int64(i), Applied: slices.Contains(strings.Split(applied, ","), name)})
		for p, off := range plan.Offsets {
			a.Boundary[p] = max(a.Boundary[p], off)
		}
	}
	if boundary != "" {
		a.Boundary = offsets(t, boundary)
	}
	return a
}

func (h *harness) describeStep(s Step) string {
	switch s.Kind {
	case Append:
		line := fmt.Sprintf("append %s %s", s.Record.Event, s.Record.PlanID)
		if s.Record.Pin != nil {
			line = fmt.Sprintf("append %s %s", s.Record.Event, s.Record.Pin.PinID)
		}
		if s.Record.Boundary != nil {
			line += " boundary " + s.Record.Boundary.String()
		}
		if s.Record.LogStart != nil {
			line += " logstart " + s.Record.LogStart.String()
		}
		if s.Acknowledge != "" {
			line += " (" + s.Acknowledge + ")"
		}
		if s.Maintenance != "" {
			line += " (maintenance " + s.Maintenance + ")"
		}
		return line
	case Describe:
		if s.ScanFrom != nil && h.showScan {
			return fmt.Sprintf("describe %s, tombstones from %s", s.Topic, s.ScanFrom)
		}
	case Delete:
		return fmt.Sprintf("delete %s up to %s (%d of %d partitions)", s.Topic, s.Delete, len(s.Delete), s.Of)
	case CatchUp:
		return "catch-up"
	case ReadMirror:
		return "read-mirror " + s.Mirror.Topic
	case WriteMirror:
		return fmt.Sprintf("write-mirror %s %s %s", s.Mirror.Topic, s.Mirror.Status, s.Mirror.Plan.PlanID)
	case Permissions:
		if h.acls {
			var need []string
			for _, p := range s.Need {
				need = append(need, fmt.Sprintf("%s %s %s", p.Operation, p.ResourceType, p.Resource))
			}
			return fmt.Sprintf("permissions %s: %s", s.Topic, strings.Join(need, ", "))
		}
	}
	return fmt.Sprintf("%s %s", s.Kind, s.Topic)
}

func (h *harness) describeReport(s Step, rep Report) string {
	if rep.Err != nil {
		if rep.Code != 0 {
			return fmt.Sprintf("error: %v (code %d)", rep.Err, rep.Code)
		}
		return "error: " + rep.Err.Error()
	}
	if len(rep.Denied) > 0 {
		var denied []string
		for _, p := range rep.Denied {
			denied = append(denied, fmt.Sprintf("%s %s %s", p.Operation, p.ResourceType, p.Resource))
		}
		return "denied: " + strings.Join(denied, ", ")
	}
	switch s.Kind {
	case Append:
		v := rep.Verdict
		line := fmt.Sprintf("%s at %d", v.Outcome, v.Offset)
		if v.Reason != "" {
			line += " (" + string(v.Reason) + ")"
		}
		if v.Covered {
			line += " covered"
		}
		return line
	case Delete:
		var parts []string
		for _, d := range rep.Deleted {
			if d.Err != nil {
				parts = append(parts, fmt.Sprintf("%d: %v (code %d)", d.Partition, d.Err, d.Code))
			}
		}
		return "log start " + h.topic.Start.String() + strings.Join(append([]string{""}, parts...), "; ")
	case Verify:
		return "log start " + rep.Starts.String()
	case ReadMirror:
		return h.describeMirror(rep.Mirror)
	case Describe:
		if rep.Tombstones != nil && h.showScan {
			var parts []string
			for _, p := range slices.Sorted(maps.Keys(rep.Tombstones.Partitions)) {
				ps := rep.Tombstones.Partitions[p]
				parts = append(parts, fmt.Sprintf("%d: read [%d, %d) of [%d, %d), latest tombstone %d", p, ps.From, ps.Read, ps.From, ps.To, ps.Latest))
			}
			return "scanned " + strings.Join(parts, "; ")
		}
	}
	return ""
}

func (h *harness) terminal(s Step) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: state %s", s.Kind, s.Result.State)
	if s.Result.Already {
		b.WriteString(" (already)")
	}
	if s.Result.LogStart != nil {
		fmt.Fprintf(&b, " log start %s", s.Result.LogStart)
	}
	b.WriteString("\n")
	if s.Err != nil {
		for _, class := range []error{ErrBlocked, ErrUnauthorized, ErrRejected, ErrSuperseded, ErrDegraded, ErrRestoreGrace} {
			if errors.Is(s.Err, class) {
				fmt.Fprintf(&b, "  class: %v\n", class)
			}
		}
		for _, line := range strings.Split(s.Err.Error(), "\n") {
			fmt.Fprintf(&b, "  error: %s\n", line)
		}
		for _, hint := range errors.GetAllHints(s.Err) {
			fmt.Fprintf(&b, "  hint: %s\n", hint)
		}
	}
	return b.String()
}

// execute answers a step from the simulated cluster; f alters the answer.
func (h *harness) execute(s Step, f fault, faulty bool) Report {
	if faulty {
		switch f.action {
		case "fail":
			var code int16
			args := f.args
			if len(args) > 0 && strings.HasPrefix(args[0], "code=") {
				n, _ := strconv.Atoi(strings.TrimPrefix(args[0], "code="))
				code, args = int16(n), args[1:]
			}
			return Report{Err: errors.New(strings.Join(args, " ")), Code: code}
		case "denied":
			if s.Kind != Permissions {
				return Report{Err: errors.New("TOPIC_AUTHORIZATION_FAILED: not authorized"), Code: CodeTopicAuthorizationFailed}
			}
			var rep Report
			for _, p := range s.Need {
				if len(f.args) == 0 || slices.Contains(f.args, p.Operation) {
					rep.Denied = append(rep.Denied, p)
				}
			}
			return rep
		}
	}
	rep := h.perform(s, f, faulty)
	if faulty && f.action == "timeout" {
		return Report{Err: errors.New("request timed out (it may have taken effect)")}
	}
	return rep
}

// scan answers a Describe's ScanFrom from the topic's tombstones (one per
// partition, the latest) and the scan limit; nil when none was asked.
func (h *harness) scan(from events.Offsets) *TombstoneScan {
	if from == nil {
		return nil
	}
	scan := &TombstoneScan{Partitions: map[int32]PartitionScan{}, Limit: h.scanLimit}
	for p, off := range from {
		end, ok := h.topic.End[p]
		if !ok {
			// Not a partition of the topic: it holds no tombstone (as worker.ScanTombstones says).
			scan.Partitions[p] = PartitionScan{From: off, To: off, Read: off, Latest: -1}
			continue
		}
		ps := PartitionScan{From: max(off, h.topic.Start[p]), To: end, Latest: -1}
		ps.Read = ps.To
		if h.scanLimit > 0 {
			ps.Read = min(ps.To, ps.From+h.scanLimit)
		}
		if t, ok := h.tombstones[p]; ok && t >= ps.From && t < ps.Read {
			ps.Latest = t
		}
		scan.Partitions[p] = ps
	}
	return scan
}

func (h *harness) perform(s Step, f fault, faulty bool) Report {
	switch s.Kind {
	case Describe, Recheck, Identify:
		if h.missing {
			return Report{Missing: true, Err: errors.Newf("topic %q does not exist", s.Topic)}
		}
		info := h.topic
		info.Configs = maps.Clone(info.Configs)
		info.Start, info.End = info.Start.Clone(), info.End.Clone()
		info.Partitions = slices.Clone(info.Partitions)
		return Report{Topic: info, Tombstones: h.scan(s.ScanFrom)}
	case CatchUp:
		h.catchUp()
		return Report{}
	case Append:
		off := h.append(s.Record, "run")
		if s.Maintenance != "" {
			h.log[off].Headers = []projector.Header{{Key: projector.HeaderMaintenance, Value: []byte(s.Maintenance)},
				{Key: projector.HeaderActor, Value: []byte("run")}, {Key: projector.HeaderReason, Value: []byte(s.Reason)}}
		}
		var got projector.Verdict
		for _, v := range h.catchUp() {
			if v.Offset == off {
				got = v
			}
		}
		return Report{Verdict: got}
	case Delete:
		var rep Report
		for _, p := range s.Delete.Partitions() {
			if faulty && f.action == "partition" && len(f.args) >= 2 && f.args[0] == strconv.Itoa(int(p)) {
				code, _ := strconv.Atoi(f.args[1])
				rep.Deleted = append(rep.Deleted, Deleted{Partition: p, Err: errors.New(strings.Join(f.args[2:], " ")), Code: int16(code)})
				continue
			}
			if s.Delete[p] > h.topic.End[p] {
				rep.Deleted = append(rep.Deleted, Deleted{Partition: p, Err: errors.New("OFFSET_OUT_OF_RANGE"), Code: CodeOffsetOutOfRange})
				continue
			}
			h.topic.Start[p] = max(h.topic.Start[p], s.Delete[p])
			rep.Deleted = append(rep.Deleted, Deleted{Partition: p})
		}
		return rep
	case Verify:
		return Report{Starts: h.topic.Start.Clone()}
	case ReadMirror, WriteMirror:
		return h.performMirror(s)
	}
	return Report{}
}

// pinCmd appends another writer's PINNED or UNPINNED; the pin ID prints as
// its name.
func (h *harness) pinCmd(t *testing.T, cmd string, args []datadriven.CmdArg) string {
	var name, rp, offs string
	expires := -1
	for _, a := range args {
		v := strings.Join(a.Vals, ",")
		switch a.Key {
		case "name":
			name = v
		case "rp":
			rp = v
		case "offsets":
			offs = v
		case "expires":
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("pin: expires=%q", v)
			}
			expires = n
		}
	}
	at := h.brokerAt(h.actors + 1).Add(h.skew["other"]) // what append stamps
	var env events.Envelope
	if cmd == "unpin" {
		id, ok := h.pinIDs[name]
		if !ok {
			t.Fatalf("unpin: no pin %q", name)
		}
		env = events.NewUnpin(id, "the transcript", at, "other")
	} else {
		var exp time.Time
		if expires >= 0 {
			exp = at.Add(time.Duration(expires) * time.Second)
		}
		env = events.NewPin(rp, dataTopic, h.tids["T1"], offsets(t, offs), exp, "the transcript", at, "other")
		if h.pinIDs == nil {
			h.pinIDs = map[string]string{}
		}
		h.pinIDs[name] = env.Pin.PinID
		h.pairs = append(h.pairs, env.Pin.PinID, name)
		h.names = strings.NewReplacer(h.pairs...)
	}
	if err := env.Validate(); err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	off := h.append(env, "other")
	return h.names.Replace(fmt.Sprintf("other writer: %s %s at %d\n", env.Event, name, off))
}

// ownerRetry is the owner's schedule in the transcripts: the daemon's
// defaults (worker/daemon DefaultBackoffMin, DefaultBackoffMax,
// DefaultBlockedRetry) are its to choose; these are round numbers.
var ownerRetry = OwnerRetry{BackoffMin: time.Second, BackoffMax: 30 * time.Second, Blocked: 5 * time.Minute, PinMargin: time.Second}

func ownerLine(r OwnerResult, now time.Time) string {
	name := map[Outcome]string{Applied: "applied", Waiting: "waiting out the restore grace", Held: "held by a pin (blocked, passes by itself)",
		BlockedOutcome: "blocked", Retry: "retry"}[r.Outcome]
	switch r.Outcome {
	case Applied:
		return "owner: applied: forgotten\n"
	case Waiting:
		return fmt.Sprintf("owner: %s; next attempt at %s (not a failure)\n", name, r.Next.Format(time.RFC3339))
	}
	return fmt.Sprintf("owner: %s; next attempt in %s\n", name, r.Next.Sub(now))
}

func (h *harness) gate(t *testing.T, d *datadriven.TestData) string {
	var f OwnerFacts
	for _, a := range d.CmdArgs {
		var err error
		switch strings.Join(a.Vals, "") {
		case "blocked":
			err = errors.Mark(errors.Newf("%s: blocked", a.Key), ErrBlocked)
		case "fail":
			err = errors.Newf("%s: cannot tell yet", a.Key)
		default:
			d.Fatalf(t, "gate: %s=%v: blocked or fail", a.Key, a.Vals)
		}
		switch a.Key {
		case "settings":
			f.Settings = err
		case "shared":
			f.Shared = err
		case "tombstones":
			f.Tombstones = err
		default:
			d.Fatalf(t, "gate: unknown fact %q", a.Key)
		}
	}
	v, err := f.Gate()
	now := h.brokerNow()
	switch v {
	case Drive:
		return "drive: run finish\n"
	}
	return fmt.Sprintf("hold: %v\n%s", err, ownerLine(ownerRetry.Gated(v, 1, now), now))
}

func (h *harness) maintenance(t *testing.T, d *datadriven.TestData) string {
	grace := time.Minute
	if d.HasArg("grace") {
		var g string
		d.ScanArgs(t, "grace", &g)
		var err error
		if grace, err = time.ParseDuration(g); err != nil {
			d.Fatalf(t, "maintenance: grace=%s: %v", g, err)
		}
	}
	list := func() (string, []MaintenanceRecord) {
		h.catchUp()
		now := h.brokerAt(h.actors + 1)
		recs := Maintenance(h.st, now, grace)
		var b strings.Builder
		for _, r := range h.st.Retractions() {
			if !slices.ContainsFunc(recs, func(m MaintenanceRecord) bool { return string(m.Key) == string(r.Key) }) {
				fmt.Fprintf(&b, "  left: retraction of %s (offset %d, %s old)\n", r.Key, r.Offset, now.Sub(r.Timestamp))
			}
		}
		for i, m := range recs {
			what := "repair"
			if m.Value == nil {
				what = "tombstone"
			}
			fmt.Fprintf(&b, "%d %s %s (offset %d)\n", i+1, what, m.Key, m.Offset)
		}
		if len(recs) == 0 {
			b.WriteString("nothing to append\n")
		}
		return b.String(), recs
	}
	out, recs := list()
	if d.HasArg("append") {
		for _, m := range recs {
			h.actors++
			h.log = append(h.log, projector.Record{Offset: int64(len(h.log)), Key: m.Key, Value: m.Value, Timestamp: h.brokerNow(), LogAppendTime: true,
				Headers: []projector.Header{{Key: projector.HeaderMaintenance, Value: []byte(m.Kind)}}})
		}
		then, _ := list()
		out += "appended; then:\n" + then
	}
	return h.names.Replace(out)
}
