package events

import (
	"reflect"
	"strings"
	"testing"
)

// markersDoc is an array of n markers of the same topic over partitions
// 0..parts-1, written by Encode, joined by sep.
func markersDoc(n, parts int, sep string) string {
	var docs []string
	for i := range n {
		o := Offsets{}
		for p := range parts {
			o[int32(p)] = int64(1000*(p+1) - 7*i*(p%3))
		}
		docs = append(docs, string(Marker{Topic: "action-state", TopicID: topicA, Offsets: o}.Encode()))
	}
	return "[" + sep + strings.Join(docs, ","+sep) + sep + "]"
}

// addMarkersSeeds are pairs of markers documents (two files of one plan):
// Encode's forms, which the fast path reads, and variants of them, valid
// or not, which it must leave to the strict path.
func addMarkersSeeds() [][2]string {
	doc := markersDoc(3, 3, "")
	one := markerC1
	edits := []string{
		doc,
		markersDoc(3, 12, "\n  "),
		"\xef\xbb\xbf" + doc,
		" \t\r\n" + doc + "\n",
		one,
		"[" + one + "]",
		doc + "x",
		doc + "[]",
		one + one,
		one + " ",
		"[]", "", " ", "[", "{", "null", `"x"`, "[1]", "[" + one + ",]", "[" + one + "," + one,
		strings.Replace(doc, `"0":1000`, `"0": 1000`, 1),
		strings.Replace(doc, `"1":2000,`, `"1":2000 ,`, 2),
		strings.Replace(doc, `{"schemaVersion":1,"topic"`, `{ "schemaVersion":1,"topic"`, 2),
		strings.Replace(doc, `"topic":`, `"Topic":`, 2),
		strings.Replace(doc, `"offsets":`, `"Offsets":`, 2),
		strings.Replace(doc, `"topic":"action-state",`, `"topic":"action-state","topic":"action-state",`, 2),
		strings.Replace(doc, `"1":2000`, `"1":2000,"1":2000`, 2),
		strings.Replace(doc, `"1":2000`, `"1":1,"1":2000`, 2),
		strings.Replace(doc, `"1":2000`, `"01":2000`, 2),
		strings.Replace(doc, `"1":2000`, `"\u0031":2000`, 2),
		strings.Replace(doc, `"1":2000`, `"x":2000`, 2),
		strings.Replace(doc, `"1":2000`, `"-1":2000`, 2),
		strings.Replace(doc, `"1":2000`, `"2147483648":2000`, 2),
		strings.Replace(doc, `"1":2000`, `"1":-2000`, 2),
		strings.Replace(doc, `"1":2000`, `"1":2e3`, 2),
		strings.Replace(doc, `"1":2000`, `"1":2000.0`, 2),
		strings.Replace(doc, `"1":2000`, `"1":9223372036854775807`, 2),
		strings.Replace(doc, `"1":2000`, `"1":9223372036854775808`, 2),
		strings.Replace(doc, `"1":2000`, `"1":99999999999999999999`, 2),
		strings.Replace(doc, `"1":2000`, `"1":0`, 2),
		strings.Replace(doc, `"1":2000`, `"1":"2000"`, 2),
		strings.Replace(doc, `"1":2000,"2":3000`, `"2":3000,"1":2000`, 2),
		strings.Replace(doc, `,"2":3000`, ``, 2),
		strings.Replace(doc, `,"2":3000`, `,"3":3000`, 2),
		strings.Replace(doc, `,"2":3000`, `,"2":3000,"3":1`, 2),
		strings.Replace(doc, `"action-state"`, `"action-stat\u0065"`, 2),
		strings.Replace(doc, `"action-state"`, `"action-staté"`, 2),
		strings.Replace(doc, `"action-state"`, "\"action-st\xffte\"", 2),
		strings.Replace(doc, `"action-state"`, `"other"`, 2),
		strings.Replace(doc, `"action-state"`, `".."`, 1),
		strings.Replace(doc, `"schemaVersion":1`, `"schemaVersion":2`, 2),
		strings.Replace(doc, `"schemaVersion":1`, `"schemaVersion":1.0`, 2),
		strings.Replace(doc, `"schemaVersion":1,`, ``, 2),
		strings.Replace(doc, `"topicId":"`+topicA, `"topicId":"AAAAAAAAAAAAAAAAAAAAAA`, 2),
		strings.Replace(doc, `"topicId":"`+topicA, `"topicId":"x`, 2),
		strings.Replace(doc, `}}`, `},"extra":1}`, 2),
		strings.Replace(doc, `}}`, `}}}`, 2),
		strings.Replace(markersDoc(2, 3, ""), `"0":1000,"1":2000,"2":3000`, `"5":1,"7":2,"9":3`, 1),
		strings.Replace(markersDoc(2, 3, ""), `"0":1000,"1":2000,"2":3000`, `"5":1,"7":2,"9":3`, 2),
	}
	var seeds [][2]string
	for _, e := range edits {
		seeds = append(seeds, [2]string{e, doc}, [2]string{doc, e})
	}
	for _, s := range markerSeeds() {
		seeds = append(seeds, [2]string{string(s), string(s)})
	}
	// Markers that say where they were read (kcleanup markers): whole checkpoints, parts
	// of one, two checkpoints, and edits the fast path must leave to the strict path.
	o := func(i int) Offsets { return Offsets{0: int64(1000 - i), 1: int64(2000 + i), 2: 3000} }
	src := func(ckpt int64, st, p int32) string { return string(sourced(o(int(st)), ckpt, st, p).Encode()) }
	whole := "[" + src(7, 0, 3) + "," + src(7, 1, 3) + "," + src(7, 2, 3) + "]"
	sourcedEdits := []string{
		whole,
		"[" + src(7, 2, 3) + ",\n" + src(7, 0, 3) + "]",
		src(7, 1, 3),
		"[" + src(7, 0, 1) + "]",
		"[" + src(7, 0, 2) + "," + src(8, 1, 2) + "]",
		"[" + src(7, 0, 2) + "," + src(7, 0, 2) + "]",
		"[" + src(7, 0, 2) + "," + src(7, 1, 3) + "]",
		"[" + src(7, 0, 2) + "," + string(marker(o(1)).Encode()) + "]",
		"[" + string(marker(o(1)).Encode()) + "," + src(7, 0, 2) + "]",
		strings.Replace(whole, `"uid":"actions",`, ``, 1),
		strings.Replace(whole, `"uid":"actions",`, ``, 3),
		strings.Replace(whole, `,"uidHash":"`+hashA+`"`, ``, 3),
		strings.Replace(whole, `"uid":"actions"`, `"uid":""`, 3),
		strings.Replace(whole, `"uid":"actions"`, `"uid":"act\u0069ons"`, 2),
		strings.Replace(whole, `"uid":"actions",`, `"uidHash":"`+hashA+`","uid":"actions",`, 1),
		strings.Replace(whole, `{"uid":"actions","uidHash":"`+hashA+`"}`, `{}`, 1),
		strings.Replace(whole, hashA, strings.ToUpper(hashA), 1),
		strings.Replace(whole, `"subtask":1`, `"subtask":01`, 1),
		strings.Replace(whole, `"subtask":1`, `"subtask":1.0`, 1),
		strings.Replace(whole, `"subtask":1`, `"subtask":3`, 1),
		strings.Replace(whole, `"subtask":1`, `"subtask":-1`, 1),
		strings.Replace(whole, `"parallelism":3`, `"parallelism":32769`, 1),
		strings.Replace(whole, `"parallelism":3`, `"parallelism":0`, 3),
		strings.Replace(whole, `"checkpointId":7`, `"checkpointId":9223372036854775808`, 1),
		strings.Replace(whole, `,"subtask":1`, ``, 1),
		strings.Replace(whole, `"checkpointId":7,`, ``, 1),
		strings.Replace(whole, `"checkpointId":7`, `"checkpointId": 7`, 2),
		strings.Replace(whole, `"subtask":2}`, `"subtask":2,"extra":1}`, 1),
	}
	for _, e := range sourcedEdits {
		seeds = append(seeds, [2]string{e, whole}, [2]string{whole, e}, [2]string{e, e})
	}
	return seeds
}

// FuzzAddMarkers is AddMarkers (its fast path first) against the strict
// path, ParseMarkers then BuildPlan, over two documents read into one
// builder: the same markers count or the same error (message and class)
// for each document, then the same plan or the same error. Registered by
// name, so make fuzz runs it.
func FuzzAddMarkers(f *testing.F) {
	for _, s := range addMarkersSeeds() {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, first, second []byte) {
		b, err := NewPlanBuilder("fuzz-cp")
		if err != nil {
			t.Fatal(err)
		}
		var all []Marker
		for d, doc := range [][]byte{first, second} {
			ms, wantErr := ParseMarkers(doc)
			n, err := b.AddMarkers(doc)
			if msg := diffDecode(Envelope{}, err, Envelope{}, wantErr); msg != "" {
				t.Fatalf("document %d: %s", d, msg)
			}
			if wantErr != nil {
				return // the builder must not be used
			}
			if n != len(ms) {
				t.Fatalf("document %d: %d markers, ParseMarkers %d", d, n, len(ms))
			}
			all = append(all, ms...)
			want, wantErr := BuildPlan("fuzz-cp", all)
			got, err := b.Plan()
			if msg := diffDecode(Envelope{}, err, Envelope{}, wantErr); msg != "" {
				t.Fatalf("plan after document %d: %s", d, msg)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("plan after document %d: %+v, BuildPlan %+v", d, got, want)
			}
		}
	})
}

// TestAddMarkersFastPath: the documents Encode's markers make, alone or in
// arrays, compact or with whitespace between markers, after a byte order
// mark or not, one file or several, are read whole by the fast path (so
// they are fast), into the plan BuildPlan makes of them.
func TestAddMarkersFastPath(t *testing.T) {
	for _, docs := range [][]string{
		{markersDoc(5, 20, "")},
		{markersDoc(5, 20, "\n  ")},
		{"\xef\xbb\xbf" + markersDoc(2, 3, "") + "\r\n"},
		{markerC1},
		{markerC1 + "\n", markerC1, "[" + markerC1 + "]"},
		{markersDoc(1, 1, ""), markersDoc(4, 1, " ")},
		{markersDoc(3, 7, ""), markersDoc(3, 7, "\t")},
	} {
		b, err := NewPlanBuilder("chk-1")
		if err != nil {
			t.Fatal(err)
		}
		var all []Marker
		for _, doc := range docs {
			ms, err := ParseMarkers([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, ms...)
			n, whole := b.addCanonical([]byte(doc))
			if !whole || n != len(ms) {
				t.Fatalf("fast path read %d of %d markers (whole %v) of %q", n, len(ms), whole, doc)
			}
		}
		want, err := BuildPlan("chk-1", all)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.Plan()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("plan %+v, %v; BuildPlan %+v", got, err, want)
		}
	}
}

// TestAddMarkersPlanErrorAfterDocument: a plan error waits for the end of
// the document (a later marker that does not parse is reported instead),
// and Plan returns it.
func TestAddMarkersPlanErrorAfterDocument(t *testing.T) {
	other := strings.Replace(markerC1, `"action-state"`, `"other"`, 1)
	b, _ := NewPlanBuilder("chk-1")
	n, err := b.AddMarkers([]byte("[" + markerC1 + "," + other + "," + markerC1 + "]"))
	if err != nil || n != 3 {
		t.Fatalf("AddMarkers = %d, %v; want 3 markers and the plan error kept", n, err)
	}
	if _, err := b.Plan(); err == nil || !strings.Contains(err.Error(), "marker 1 names topic") {
		t.Fatalf("Plan: %v, want marker 1's topic error", err)
	}
	b, _ = NewPlanBuilder("chk-1")
	if _, err := b.AddMarkers([]byte("[" + markerC1 + "," + other + ",{}]")); err == nil || !strings.Contains(err.Error(), "invalid marker 2") {
		t.Fatalf("AddMarkers: %v, want marker 2's decoding error", err)
	}
}

// BenchmarkAddMarkers: kcleanup plan's read of 100 markers of 1,000 partitions, as Encode
// writes them, without and with their source (the fast path reads both).
func BenchmarkAddMarkers(b *testing.B) {
	bare := []byte(markersDoc(100, 1000, ""))
	var ms []Marker
	for st := range int32(100) {
		o := Offsets{}
		for p := range int32(1000) {
			o[p] = int64(1000*(int(p)+1) - 7*int(st)*(int(p)%3))
		}
		ms = append(ms, sourced(o, 42, st, 100))
	}
	withSource := []byte(encodeAll(ms...))
	for name, doc := range map[string][]byte{"bare": bare, "sourced": withSource} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				pb, _ := NewPlanBuilder("chk-1")
				if _, err := pb.AddMarkers(doc); err != nil {
					b.Fatal(err)
				}
				if _, err := pb.Plan(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
