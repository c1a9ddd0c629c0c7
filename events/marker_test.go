package events

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

const markerC1 = `{"schemaVersion":1,"topic":"action-state","topicId":"` + topicA + `","offsets":{"0":100,"1":230}}`

func TestParseMarkersObjectAndArray(t *testing.T) {
	one, err := ParseMarkers([]byte(markerC1))
	if err != nil {
		t.Fatal(err)
	}
	want := Marker{Topic: "action-state", TopicID: topicA, Offsets: Offsets{0: 100, 1: 230}}
	if len(one) != 1 || !markersEqual(one[0], want) {
		t.Fatalf("got %+v", one)
	}
	two, err := ParseMarkers([]byte("[" + markerC1 + ",\n" + mutate(t, markerC1, `"0":100`, `"0":150`) + "]"))
	if err != nil {
		t.Fatal(err)
	}
	if len(two) != 2 || two[1].Offsets[0] != 150 {
		t.Fatalf("got %+v", two)
	}
	// Encode then ParseMarkers gives the marker back.
	back, err := ParseMarkers(two[1].Encode())
	if err != nil || len(back) != 1 || !markersEqual(back[0], two[1]) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

func markersEqual(a, b Marker) bool {
	return a.Topic == b.Topic && a.TopicID == b.TopicID && a.Offsets.Equal(b.Offsets)
}

func TestParseMarkersStrict(t *testing.T) {
	cases := []struct{ name, in, mention, reason string }{
		{"empty array", `[]`, "", "array is empty"},
		{"number", `7`, "", "is a number"},
		{"null", `null`, "", "is null"},
		{"array of arrays", `[[]]`, "marker 0", "is an array"},
		{"second marker bad", `[` + markerC1 + `,` + mutate(t, markerC1, `"0":100`, `"00":100`) + `]`, `marker 1: field offsets["00"]`, "canonical partition"},
		{"unknown field", mutate(t, markerC1, `"topic":`, `"partition":3,"topic":`), `"partition"`, "not a known field"},
		{"planId is not a marker field", mutate(t, markerC1, `"topic":`, `"planId":"x","topic":`), `"planId"`, "not a known field"},
		{"duplicate field", mutate(t, markerC1, `"topic":`, `"topicId":"x","topic":`), `"topicId"`, "more than once"},
		{"duplicate partition", mutate(t, markerC1, `"1":230`, `"0":230`), `offsets["0"]`, "more than once"},
		{"trailing content", markerC1 + `,`, "", "trailing content"},
		{"fraction", mutate(t, markerC1, `"0":100`, `"0":100.25`), `offsets["0"]`, "fraction"},
		{"negative", mutate(t, markerC1, `"0":100`, `"0":-100`), `offsets["0"]`, "from 0"},
		{"plus key", mutate(t, markerC1, `"0":100`, `"+0":100`), `offsets["+0"]`, "canonical"},
		{"empty offsets", mutate(t, markerC1, `{"0":100,"1":230}`, `{}`), `"offsets"`, "at least one"},
		{"blank topic", mutate(t, markerC1, `"action-state"`, `" "`), `"topic"`, "blank"},
		{"zero topic ID", mutate(t, markerC1, topicA, zeroTopicID), `"topicId"`, "zero topic ID"},
		{"schema version 2", mutate(t, markerC1, `"schemaVersion":1`, `"schemaVersion":2`), `"schemaVersion"`, "only schema version 1"},
		{"missing topicId", mutate(t, markerC1, `"topicId":"`+topicA+`",`, ``), `"topicId"`, "missing"},
		{"null offsets", mutate(t, markerC1, `{"0":100,"1":230}`, `null`), `"offsets"`, "is null"},
	}
	for _, c := range cases {
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

func marker(offsets Offsets) Marker {
	return Marker{Topic: "action-state", TopicID: topicA, Offsets: offsets}
}

func TestBuildPlanTakesMinimumPerPartition(t *testing.T) {
	// The seed example: subtasks recorded partition 0 at 120 and 100 and
	// partition 1 at 150 and 230; the plan keeps the oldest each still needs.
	p, err := BuildPlan("cp-7", []Marker{
		marker(Offsets{0: 120, 1: 150}),
		marker(Offsets{0: 100, 1: 230}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !plansEqual(p, planC1()) {
		t.Fatalf("BuildPlan = %+v, want %+v", p, planC1())
	}
	if p.PlanID != planC1ID {
		t.Fatalf("plan ID %s, want the independently computed %s", p.PlanID, planC1ID)
	}
}

func TestBuildPlanSparsePartitions(t *testing.T) {
	// Partitions not numbered 0..n-1 (the map path, not the slice path).
	p, err := BuildPlan("chk-42", []Marker{
		{Topic: "orders.v2", TopicID: "-39OXTwrGgn459bFtKOSgQ", Offsets: Offsets{2: 9, 10: 0, 11: 9223372036854775807}},
		{Topic: "orders.v2", TopicID: "-39OXTwrGgn459bFtKOSgQ", Offsets: Offsets{2: 5, 10: 3, 11: 9223372036854775807}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := planIDVectors[1].want; p.PlanID != want {
		t.Fatalf("plan %+v, want ID %s", p, want)
	}
}

func TestBuildPlanDoesNotAliasMarkers(t *testing.T) {
	ms := []Marker{marker(Offsets{2: 7}), marker(Offsets{2: 5})}
	p, err := BuildPlan("cp", ms)
	if err != nil {
		t.Fatal(err)
	}
	p.Offsets[2] = 0
	if ms[0].Offsets[2] != 7 || ms[1].Offsets[2] != 5 {
		t.Fatalf("BuildPlan's result shares memory with its markers: %v %v", ms[0].Offsets, ms[1].Offsets)
	}
}

func TestBuildPlanRefuses(t *testing.T) {
	other := "-39OXTwrGgn459bFtKOSgQ"
	cases := []struct {
		name    string
		rp      string
		markers []Marker
		mention []string
	}{
		{"no markers", "cp", nil, []string{"no markers"}},
		{"blank recovery point", "  ", []Marker{marker(Offsets{0: 1})}, []string{"recovery point", "blank"}},
		{"other topic", "cp", []Marker{marker(Offsets{0: 1}), {Topic: "other", TopicID: topicA, Offsets: Offsets{0: 1}}},
			[]string{"marker 1", `"other"`, `"action-state"`}},
		{"other topic ID", "cp", []Marker{marker(Offsets{0: 1}), marker(Offsets{0: 1}), {Topic: "action-state", TopicID: other, Offsets: Offsets{0: 1}}},
			[]string{"marker 2", other, topicA}},
		{"missing partitions", "cp", []Marker{marker(Offsets{0: 1, 1: 1, 2: 1}), marker(Offsets{0: 1, 1: 1, 2: 1}), marker(Offsets{0: 1, 1: 1, 2: 1}), marker(Offsets{0: 1})},
			[]string{"marker 3 lacks partitions 1, 2 that marker 0 has"}},
		{"other partition, same count", "cp", []Marker{marker(Offsets{0: 1, 1: 1}), marker(Offsets{0: 1, 5: 1})},
			[]string{"marker 1 lacks partitions 1 that marker 0 has and has partitions 5 that marker 0 lacks"}},
		{"other partition, sparse", "cp", []Marker{marker(Offsets{3: 1, 9: 1}), marker(Offsets{3: 1, 8: 1})},
			[]string{"marker 1 lacks partitions 9", "has partitions 8"}},
		{"extra partitions", "cp", []Marker{marker(Offsets{0: 1}), marker(Offsets{0: 1, 1: 1})},
			[]string{"marker 1 has partitions 1 that marker 0 lacks"}},
		{"negative offset", "cp", []Marker{marker(Offsets{0: 1}), marker(Offsets{0: -1})},
			[]string{"marker 1", "offset -1"}},
		{"negative offset in marker 0", "cp", []Marker{marker(Offsets{0: -1})}, []string{"marker 0", `offsets["0"]`}},
		{"negative partition", "cp", []Marker{marker(Offsets{0: 1}), marker(Offsets{-1: 1})}, []string{"marker 1", "has partitions -1"}},
		{"empty offsets", "cp", []Marker{marker(Offsets{})}, []string{"marker 0", "at least one partition"}},
		{"zero topic ID", "cp", []Marker{{Topic: "t", TopicID: zeroTopicID, Offsets: Offsets{0: 1}}}, []string{"marker 0", "zero topic ID"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := BuildPlan(c.rp, c.markers)
			if err == nil {
				t.Fatalf("BuildPlan accepted: %+v", p)
			}
			for _, m := range c.mention {
				if !strings.Contains(err.Error(), m) {
					t.Fatalf("error %q should mention %q", err, m)
				}
			}
		})
	}
}

func TestBuildPlanListsAtMostTenPartitions(t *testing.T) {
	all := Offsets{}
	for p := int32(0); p < 30; p++ {
		all[p] = 1
	}
	_, err := BuildPlan("cp", []Marker{marker(all), marker(Offsets{0: 1})})
	if err == nil || !strings.Contains(err.Error(), "lacks partitions 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 19 more") {
		t.Fatalf("got %v", err)
	}
}

// benchMarkers returns n markers of parts partitions each, with offsets that
// vary so every marker lowers some minimum.
func benchMarkers(n, parts int) []Marker {
	ms := make([]Marker, n)
	for i := range ms {
		o := make(Offsets, parts)
		for p := 0; p < parts; p++ {
			o[int32(p)] = int64(1_000_000 + (i*7919+p*104729)%100_000)
		}
		ms[i] = marker(o)
	}
	return ms
}

func BenchmarkBuildPlan(b *testing.B) {
	for _, size := range []struct{ markers, parts int }{{1000, 1000}, {100, 10}} {
		ms := benchMarkers(size.markers, size.parts)
		b.Run(strconv.Itoa(size.markers)+"x"+strconv.Itoa(size.parts), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := BuildPlan("chk-1", ms); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParseMarkers(b *testing.B) {
	ms := benchMarkers(100, 100)
	data := []byte{'['}
	for i, m := range ms {
		if i > 0 {
			data = append(data, ',')
		}
		data = append(data, m.Encode()...)
	}
	data = append(data, ']')
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseMarkers(data); err != nil {
			b.Fatal(err)
		}
	}
}

func TestReadMarkersStreamsAndSkipsABOM(t *testing.T) {
	second := mutate(t, markerC1, `"0":100`, `"0":50`)
	for name, in := range map[string]string{
		"array":          "[" + markerC1 + ",\n" + second + "]",
		"array with BOM": "\xef\xbb\xbf[" + markerC1 + "," + second + "]\n",
	} {
		t.Run(name, func(t *testing.T) {
			var got []int64
			err := ReadMarkers(strings.NewReader(in), func(i int, m Marker) error {
				if i != len(got) {
					t.Fatalf("marker index %d, want %d", i, len(got))
				}
				got = append(got, m.Offsets[0])
				return nil
			})
			if err != nil || len(got) != 2 || got[0] != 100 || got[1] != 50 {
				t.Fatalf("ReadMarkers = %v, %v", got, err)
			}
		})
	}
	ms, err := ParseMarkers([]byte("\xef\xbb\xbf" + markerC1))
	if err != nil || len(ms) != 1 {
		t.Fatalf("ParseMarkers with a BOM = %v, %v", ms, err)
	}
	// A marker after a bad one is never read: each sees only good markers.
	calls := 0
	err = ReadMarkers(strings.NewReader("["+markerC1+","+mutate(t, markerC1, `"0":100`, `"0":-1`)+","+markerC1+"]"), func(int, Marker) error {
		calls++
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), `invalid marker 1: field offsets["0"]`) || calls != 1 {
		t.Fatalf("ReadMarkers = %v after %d markers", err, calls)
	}
	// A file cut short says so, with the byte.
	err = ReadMarkers(strings.NewReader("["+markerC1+","+markerC1[:20]), func(int, Marker) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "invalid marker 1") || !strings.Contains(err.Error(), "truncated?") {
		t.Fatalf("truncated: %v", err)
	}
	// The callback's error ends the read and comes back as it is.
	stop := errors.New("enough")
	if err := ReadMarkers(strings.NewReader("["+markerC1+","+markerC1+"]"), func(int, Marker) error { return stop }); err != stop {
		t.Fatalf("callback error: got %v", err)
	}
	// Empty input, and only a BOM.
	for _, in := range []string{"", "  ", "\xef\xbb\xbf"} {
		if err := ReadMarkers(strings.NewReader(in), func(int, Marker) error { return nil }); err == nil || !strings.Contains(err.Error(), "is empty") {
			t.Errorf("ReadMarkers(%q) = %v", in, err)
		}
	}
}

// A PlanBuilder fed by ReadMarkersReusing, which decodes each marker into the
// map of the one before, builds BuildPlan's plan: the builder keeps only the
// first marker, whose map is never reused.
func TestPlanBuilderStreamsAsBuildPlan(t *testing.T) {
	var ms []Marker
	var doc strings.Builder
	doc.WriteString("[")
	for i := range 7 {
		m := Marker{Topic: "t", TopicID: "ZxTq8s5fQ9mKpL2vN4wR7A", Offsets: Offsets{}}
		for p := range 5 {
			m.Offsets[int32(p)] = int64((i*31+p*17)%50 + 1)
		}
		if i > 0 {
			doc.WriteString(",")
		}
		doc.Write(m.Encode())
		ms = append(ms, m)
	}
	doc.WriteString("]")
	want, err := BuildPlan("chk-1", ms)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewPlanBuilder("chk-1")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	err = ReadMarkersReusing(strings.NewReader(doc.String()), func(i int, m Marker) (bool, error) {
		if !m.Offsets.Equal(ms[i].Offsets) {
			t.Fatalf("marker %d read as %v, want %v", i, m.Offsets, ms[i].Offsets)
		}
		seen++
		return i == 0, b.Add(m)
	})
	if err != nil || seen != len(ms) {
		t.Fatalf("ReadMarkersReusing: %v after %d markers", err, seen)
	}
	got, err := b.Plan()
	if err != nil || got.PlanID != want.PlanID || !got.Offsets.Equal(want.Offsets) {
		t.Fatalf("builder plan %v (%v), BuildPlan %v", got, err, want)
	}
	// The builder refuses what BuildPlan refuses, with the same words.
	bad := ms[1]
	bad.Topic = "other"
	_, wantErr := BuildPlan("chk-1", []Marker{ms[0], bad})
	b, _ = NewPlanBuilder("chk-1")
	if err := b.Add(ms[0]); err != nil {
		t.Fatal(err)
	}
	if err := b.Add(bad); err == nil || wantErr == nil || err.Error() != wantErr.Error() {
		t.Fatalf("builder error %v, BuildPlan error %v", err, wantErr)
	}
	if _, err := NewPlanBuilder(""); err == nil {
		t.Fatal("a blank recovery point is accepted")
	}
	if b, _ := NewPlanBuilder("chk-1"); b != nil {
		if _, err := b.Plan(); err == nil || !strings.Contains(err.Error(), "no markers") {
			t.Fatalf("no markers: %v", err)
		}
	}
}
