package events

import (
	"reflect"
	"strings"
	"testing"
)

const hashA = "0123456789abcdef0123456789abcdef"

// sourced is marker(o) as kcleanup markers writes it: from checkpoint ckpt, subtask st of
// parallelism p, of the operator with uid "actions" and hash hashA.
func sourced(o Offsets, ckpt int64, st, p int32) Marker {
	m := marker(o)
	m.Source = &MarkerSource{CheckpointID: ckpt, OperatorUID: "actions", OperatorUIDHash: hashA, Parallelism: p, Subtask: st}
	return m
}

// encodeAll is a markers document of ms as Encode writes them.
func encodeAll(ms ...Marker) string {
	var parts []string
	for _, m := range ms {
		parts = append(parts, string(m.Encode()))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func TestMarkerSourceRoundTrip(t *testing.T) {
	for _, src := range []MarkerSource{
		{CheckpointID: 42, OperatorUID: "actions", OperatorUIDHash: hashA, Parallelism: 2, Subtask: 1},
		{CheckpointID: 0, OperatorUID: "ü \"quoted\"", Parallelism: 1},
		{CheckpointID: 9223372036854775807, OperatorUIDHash: hashA, Parallelism: MaxParallelism, Subtask: MaxParallelism - 1},
	} {
		m := marker(Offsets{0: 100, 1: 230})
		m.Source = &src
		back, err := ParseMarkers(m.Encode())
		if err != nil || len(back) != 1 || !reflect.DeepEqual(back[0], m) {
			t.Errorf("round trip of %s: %+v, %v", m.Encode(), back, err)
		}
		if err := m.Validate(); err != nil {
			t.Errorf("Validate(%+v): %v", src, err)
		}
	}
	// Without a source, Encode writes what it always wrote.
	if got := string(marker(Offsets{0: 100, 1: 230}).Encode()); got != markerC1 {
		t.Errorf("Encode without a source = %s, want %s", got, markerC1)
	}
}

func TestParseMarkerSourceStrict(t *testing.T) {
	full := string(sourced(Offsets{0: 100, 1: 230}, 42, 1, 2).Encode())
	for _, c := range []struct{ name, in, mention, reason string }{
		{"subtask alone", mutate(t, markerC1, `}}`, `},"subtask":0}`), `"checkpointId"`, "is missing, but subtask is given"},
		{"no parallelism", mutate(t, full, `,"parallelism":2`, ``), `"parallelism"`, "come together"},
		{"no operator", mutate(t, full, `,"operator":{"uid":"actions","uidHash":"`+hashA+`"}`, ``), `"operator"`, "is missing"},
		{"subtask at parallelism", mutate(t, full, `"subtask":1`, `"subtask":2`), `"subtask"`, "expected 0 to 1, below the parallelism 2"},
		{"parallelism 0", mutate(t, full, `"parallelism":2`, `"parallelism":0`), `"parallelism"`, "expected 1 to 32768"},
		{"parallelism huge", mutate(t, full, `"parallelism":2`, `"parallelism":99999999999`), `"parallelism"`, "above 32768"},
		{"negative checkpoint", mutate(t, full, `"checkpointId":42`, `"checkpointId":-1`), `"checkpointId"`, "0 or more"},
		{"fraction", mutate(t, full, `"checkpointId":42`, `"checkpointId":42.0`), `"checkpointId"`, "without fraction"},
		{"string subtask", mutate(t, full, `"subtask":1`, `"subtask":"1"`), `"subtask"`, "is a string"},
		{"null operator", mutate(t, full, `{"uid":"actions","uidHash":"`+hashA+`"}`, `null`), `"operator"`, "is null"},
		{"empty operator", mutate(t, full, `{"uid":"actions","uidHash":"`+hashA+`"}`, `{}`), `"operator"`, "names no operator"},
		{"empty uid", mutate(t, full, `"uid":"actions"`, `"uid":""`), `operator.uid`, "is empty"},
		{"upper-case hash", mutate(t, full, hashA, strings.ToUpper(hashA)), `operator.uidHash`, "32 lowercase hex digits"},
		{"short hash", mutate(t, full, hashA, hashA[1:]), `operator.uidHash`, "32 lowercase hex digits"},
		{"unknown operator field", mutate(t, full, `"uid":"actions"`, `"name":"x","uid":"actions"`), `operator.name`, "not a known field"},
		{"twice", mutate(t, full, `"subtask":1`, `"subtask":1,"subtask":1`), `"subtask"`, "more than once"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseMarkers([]byte(c.in))
			if err == nil {
				t.Fatalf("ParseMarkers accepted %s", c.in)
			}
			if msg := err.Error(); !strings.Contains(msg, c.mention) || !strings.Contains(msg, c.reason) {
				t.Fatalf("error %q\nshould mention %q and say %q", msg, c.mention, c.reason)
			}
		})
	}
}

// TestPlanChecksSubtasks: markers that say where they are from make a plan only when they
// are every subtask's of one checkpoint and one operator, each once; the plan, and its ID,
// are the ones the same markers make without a source.
func TestPlanChecksSubtasks(t *testing.T) {
	o0, o1 := Offsets{0: 120, 1: 150}, Offsets{0: 100, 1: 230}
	bare, err := BuildPlan("s3://b/savepoint-1", []Marker{marker(o0), marker(o1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		markers []Marker
		err     string // "" when the plan is made
	}{
		{"every subtask", []Marker{sourced(o0, 7, 0, 2), sourced(o1, 7, 1, 2)}, ""},
		{"every subtask, any order", []Marker{sourced(o1, 7, 1, 2), sourced(o0, 7, 0, 2)}, ""},
		{"subtask 0 of two", []Marker{sourced(o0, 7, 0, 2)}, "the markers of checkpoint 7, operator uid \"actions\" uidHash " + hashA + ", lack subtask 1 of its 2: expected every subtask 0 to 1 exactly once"},
		{"two of four", []Marker{sourced(o0, 7, 0, 4), sourced(o1, 7, 2, 4)}, "lack subtasks 1, 3 of its 4"},
		{"two checkpoints", []Marker{sourced(o0, 7, 0, 2), sourced(o1, 8, 1, 2)}, "marker 1 is from checkpoint 8 but marker 0 from checkpoint 7: expected the markers of one checkpoint"},
		{"two checkpoints, each whole", []Marker{sourced(o0, 7, 0, 1), sourced(o1, 8, 0, 1)}, "marker 1 is from checkpoint 8 but marker 0 from checkpoint 7"},
		{"subtask twice", []Marker{sourced(o0, 7, 0, 2), sourced(o1, 7, 0, 2)}, "marker 1 is subtask 0, as marker 0 is: expected each subtask's marker once"},
		{"two parallelisms", []Marker{sourced(o0, 7, 0, 2), sourced(o1, 7, 1, 3)}, "marker 1 says parallelism 3 but marker 0 says 2"},
		{"two operators", []Marker{sourced(o0, 7, 0, 2), func() Marker { m := sourced(o1, 7, 1, 2); m.Source.OperatorUID = "other"; return m }()}, `marker 1 is from operator uid "other" uidHash ` + hashA + ` but marker 0 from operator uid "actions"`},
		{"sourced then bare", []Marker{sourced(o0, 7, 0, 2), marker(o1)}, "marker 1 does not say which checkpoint and subtask it is from, but marker 0 does (checkpoint 7)"},
		{"bare then sourced", []Marker{marker(o0), sourced(o1, 7, 1, 2)}, "marker 1 says it is from checkpoint 7, subtask 1, but marker 0 does not say"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := BuildPlan("s3://b/savepoint-1", c.markers)
			checked, cerr := CheckSubtasks(c.markers)
			b, _ := NewPlanBuilder("s3://b/savepoint-1")
			n, aerr := b.AddMarkers([]byte(encodeAll(c.markers...)))
			if aerr != nil || n != len(c.markers) {
				t.Fatalf("AddMarkers: %d, %v", n, aerr)
			}
			fp, ferr := b.Plan()
			if c.err == "" {
				if err != nil || cerr != nil || ferr != nil || !checked || !b.SubtasksChecked() {
					t.Fatalf("refused: BuildPlan %v, CheckSubtasks %v (checked %v), AddMarkers %v", err, cerr, checked, ferr)
				}
				if !reflect.DeepEqual(p, bare) || !reflect.DeepEqual(fp, bare) {
					t.Fatalf("plan %+v (AddMarkers %+v), want the plan of the same markers without a source %+v", p, fp, bare)
				}
				return
			}
			for what, e := range map[string]error{"BuildPlan": err, "CheckSubtasks": cerr, "AddMarkers": ferr} {
				if e == nil || !strings.Contains(e.Error(), c.err) {
					t.Errorf("%s: %v; want an error with %q", what, e, c.err)
				}
			}
		})
	}
	// Markers without a source: the plan is made, and the caller is told completeness was
	// not checked (it warns).
	checked, err := CheckSubtasks([]Marker{marker(o0)})
	b, _ := NewPlanBuilder("cp")
	b.AddMarkers([]byte(markerC1))
	if _, perr := b.Plan(); checked || err != nil || b.SubtasksChecked() || perr != nil {
		t.Errorf("markers without a source: checked %v, %v; builder checked %v, plan %v; want a plan, unchecked", checked, err, b.SubtasksChecked(), perr)
	}
}

// TestAddMarkersFastPathReadsSources: kcleanup markers' documents (Encode with a source)
// are read whole by the fast path, and a refused one is refused as BuildPlan refuses it.
func TestAddMarkersFastPathReadsSources(t *testing.T) {
	var ms []Marker
	for st := range int32(16) {
		o := Offsets{}
		for p := range int32(8) {
			o[p] = int64(1000 + 13*int(st) - int(p))
		}
		ms = append(ms, sourced(o, 42, st, 16))
	}
	hashOnly := make([]Marker, len(ms))
	for i, m := range ms {
		src := *m.Source
		src.OperatorUID = ""
		hashOnly[i] = Marker{Topic: m.Topic, TopicID: m.TopicID, Offsets: m.Offsets, Source: &src}
	}
	for _, doc := range [][]Marker{ms, hashOnly} {
		b, _ := NewPlanBuilder("chk-42")
		n, whole := b.addCanonical([]byte(encodeAll(doc...)))
		if !whole || n != len(doc) {
			t.Fatalf("fast path read %d of %d markers (whole %v)", n, len(doc), whole)
		}
		want, err := BuildPlan("chk-42", doc)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := b.Plan(); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("plan %+v, %v; want %+v", got, err, want)
		}
	}
	// A duplicate subtask stops the fast path there, and the strict path words the error.
	dup := append(append([]Marker{}, ms[:3]...), ms[1])
	b, _ := NewPlanBuilder("chk-42")
	if n, whole := b.addCanonical([]byte(encodeAll(dup...))); whole || n != 3 {
		t.Fatalf("fast path read %d markers (whole %v) of a document whose marker 3 repeats subtask 1: want it to stop at 3", n, whole)
	}
	b, _ = NewPlanBuilder("chk-42")
	b.AddMarkers([]byte(encodeAll(dup...)))
	if _, err := b.Plan(); err == nil || !strings.Contains(err.Error(), "marker 3 is subtask 1, as marker 1 is") {
		t.Fatalf("Plan: %v; want marker 3's duplicate subtask", err)
	}
}
