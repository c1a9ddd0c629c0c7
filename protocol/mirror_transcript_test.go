package protocol

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector/flinkagents"
)

// simMirror is the transcripts' mirror topic: its records, and its live
// topic ID and settings. A zero simMirror is a missing topic until
// "mirror set back" or the first attach.
type simMirror struct {
	name string
	log  []flinkagents.Record
	// acked is when each record became readable (Visible): the harness's
	// clock at kcleanup's write, or a record's "at"; none with "notime".
	acked      map[int64]time.Time
	tid        string
	missing    bool
	policy     string
	partitions []int32
}

func (h *harness) mirrorCmd(t *testing.T, d *datadriven.TestData) string {
	return h.mirrorDo(t, d.CmdArgs)
}

// mirrorDo runs one mirror command: its first argument is the verb.
func (h *harness) mirrorDo(t *testing.T, args []datadriven.CmdArg) string {
	if len(args) == 0 {
		t.Fatal("mirror: attach, detach, set, record or show")
	}
	verb, rest := args[0].Key, args[1:]
	get := func(key, def string) string {
		for _, a := range rest {
			if a.Key == key {
				return strings.Join(a.Vals, ",")
			}
		}
		return def
	}
	has := func(key string) bool {
		for _, a := range rest {
			if a.Key == key {
				return true
			}
		}
		return false
	}
	switch verb {
	case "attach", "detach":
		topic := get("topic", "action-state.flink")
		tid := h.tids[get("tid", "T2")]
		if h.mirror.name == "" {
			h.mirror = simMirror{name: topic, tid: tid, policy: "compact", partitions: []int32{0}}
		}
		e := events.MirrorAttached
		if verb == "detach" {
			e = events.MirrorDetached
		}
		m := events.Mirror{Topic: topic, TopicID: tid, Reason: "transcript"}
		grace := ""
		if g := get("grace", ""); g != "" {
			d, err := time.ParseDuration(g)
			if err != nil {
				t.Fatalf("mirror attach grace=%q: %v", g, err)
			}
			m.HasGrace, m.RestoreGrace = true, d
			grace = " with restore grace " + d.String()
		}
		off := h.append(events.NewMirrorEvent(e, m, h.now(), "operator"), "operator")
		return h.names.Replace(fmt.Sprintf("control: %s %s (%s)%s at %d\n", e, topic, tid, grace, off))
	case "set":
		for _, a := range rest {
			v := strings.Join(a.Vals, ",")
			switch a.Key {
			case "missing":
				h.mirror.missing = true
			case "back":
				h.mirror.missing = false
			case "tid":
				h.mirror.tid = h.tids[v]
			case "policy":
				h.mirror.policy = v
			case "partitions":
				h.mirror.partitions = nil
				for _, p := range strings.Split(v, ",") {
					var n int32
					fmt.Sscan(p, &n)
					h.mirror.partitions = append(h.mirror.partitions, n)
				}
			default:
				t.Fatalf("mirror set: unknown argument %q", a.Key)
			}
		}
		return h.names.Replace(h.showMirrorTopic())
	case "record":
		off := int64(len(h.mirror.log))
		if has("tombstone") {
			plan := h.plans[get("plan", "")]
			h.mirror.log = append(h.mirror.log, flinkagents.Record{Offset: off, Key: []byte(plan.PlanID)})
			return h.names.Replace(fmt.Sprintf("mirror: tombstone %s at %d\n", plan.PlanID, off))
		}
		plan, ok := h.plans[get("plan", "")]
		if !ok {
			t.Fatalf("mirror record: unknown plan")
		}
		st := flinkagents.Status(get("status", "COMMITTED"))
		h.mirror.log = append(h.mirror.log, flinkagents.Record{Offset: off, Key: []byte(plan.PlanID), Value: flinkagents.EncodeValue(st, plan)})
		when := ""
		switch {
		case has("notime"):
			when = ", its time not known"
		case has("at"):
			h.ack(off, clockAt(t, get("at", "")))
			when = ", readable at " + get("at", "")
		default:
			h.ack(off, h.clockNow())
		}
		return h.names.Replace(fmt.Sprintf("mirror: other writer %s %s at %d%s\n", st, plan.PlanID, off, when))
	case "show":
		return h.names.Replace(h.showMirrorTopic() + h.describeMirror(h.mirrorView()) + "\n")
	}
	t.Fatalf("mirror: unknown verb %q", verb)
	return ""
}

func (h *harness) now() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) }

// clockNow is the executor's clock (the "clock" command; 09:00:00 until set).
func (h *harness) clockNow() time.Time {
	if h.clock.IsZero() {
		return h.now()
	}
	return h.clock
}

// clockAt reads HH:MM:SS on the transcripts' day.
func clockAt(t *testing.T, s string) time.Time {
	at, err := time.Parse(time.TimeOnly, s)
	if err != nil {
		t.Fatalf("time %q: want HH:MM:SS", s)
	}
	return time.Date(2026, 12, 1, at.Hour(), at.Minute(), at.Second(), 0, time.UTC)
}

func (h *harness) ack(off int64, at time.Time) {
	if h.mirror.acked == nil {
		h.mirror.acked = map[int64]time.Time{}
	}
	h.mirror.acked[off] = at
}

func (h *harness) showMirrorTopic() string {
	m := h.mirror
	if m.missing {
		return fmt.Sprintf("mirror topic %s does not exist\n", m.name)
	}
	return fmt.Sprintf("mirror topic %s (%s) partitions=%v policy=%s, %d record(s)\n", m.name, m.tid, m.partitions, m.policy, len(m.log))
}

func (h *harness) mirrorView() MirrorView {
	m := h.mirror
	if m.missing || m.name == "" {
		return MirrorView{Topic: m.name, Missing: true}
	}
	f := flinkagents.New()
	for _, r := range m.log {
		f.Step(r)
	}
	return MirrorView{Topic: m.name, TopicID: m.tid, Partitions: m.partitions, CleanupPolicy: m.policy, Fold: f,
		Visible: m.acked, ReadAt: h.clockNow()}
}

// performMirror is the executor's part: the read, and the write checked
// on a fresh read (what the fenced transactional writer does).
func (h *harness) performMirror(s Step) Report {
	view := h.mirrorView()
	if s.Kind == ReadMirror {
		return Report{Mirror: view}
	}
	needed, err := MirrorWrite(view, s.Mirror)
	if err != nil {
		return Report{Err: err}
	}
	if needed {
		off := int64(len(h.mirror.log))
		h.mirror.log = append(h.mirror.log, flinkagents.Record{Offset: off, Key: []byte(s.Mirror.Plan.PlanID), Value: flinkagents.EncodeValue(s.Mirror.Status, s.Mirror.Plan)})
		h.ack(off, h.clockNow()) // its commit marker's time
	}
	return Report{MirrorWrote: needed}
}

func (h *harness) describeMirror(v MirrorView) string {
	if v.Missing {
		return "mirror missing"
	}
	var parts []string
	for _, o := range v.Fold.Operations() {
		parts = append(parts, fmt.Sprintf("%s %s", o.Plan.PlanID, o.Status))
	}
	held := "empty"
	if len(parts) > 0 {
		held = strings.Join(parts, ", ")
	}
	b, err := MirrorEffective(v, dataTopic, h.topic.ID, h.topic.Partitions)
	if err != nil {
		var fe *flinkagents.Error
		if errors.As(err, &fe) {
			return fmt.Sprintf("mirror holds %s; the job fails: %s", held, fe.Reason)
		}
		return fmt.Sprintf("mirror holds %s; the job fails: %v", held, err)
	}
	return fmt.Sprintf("mirror holds %s; effective boundary %s", held, b)
}
