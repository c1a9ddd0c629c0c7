package protocol

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
)

// TestFollowTranscripts runs testdata/follow: the corners of following a
// retention policy (docs/design.md, "Follow the job"), each a listing, the
// markers read, the pins and the boundary, and what Follow decides.
// Regenerate with `go test ./protocol -run TestFollowTranscripts -rewrite`.
//
//	policy watch=/c,/s [min-advance=N]   the policy (resets the listing)
//	boundary 0:100,1:100                 the committed boundary
//	pin name=s1 offsets=0:120 [expired] [topic=other]  an active (or expired) pin
//	location /c [outside] [err=TEXT]     a watched location as listed
//	point /c/j/chk-1 offsets=0:150,1:150[;0:140,1:160] [topic=other] [tid=T2] [err=TEXT]
//	                                     a completed point of the last location: one
//	                                     marker per ;-separated offsets (one per subtask)
//	follow                               decide and print
func TestFollowTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/follow", func(t *testing.T, path string) {
		var in FollowInput
		reset := func(watch []string, minAdvance int64) {
			in = FollowInput{Policy: projector.Policy{Retention: events.Retention{Topic: "action-state", Watch: watch, Every: time.Minute, MinAdvance: minAdvance, Reason: "r"}, Offset: 7},
				Topic: "action-state", TopicID: followTopicIDs["T1"], Now: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)}
		}
		reset(nil, 0)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			arg := func(key string) (string, bool) {
				for _, a := range d.CmdArgs {
					if a.Key == key {
						return strings.Join(a.Vals, ","), true
					}
				}
				return "", false
			}
			switch d.Cmd {
			case "policy":
				w, _ := arg("watch")
				n := int64(0)
				if s, ok := arg("min-advance"); ok {
					n, _ = strconv.ParseInt(s, 10, 64)
				}
				reset(strings.Split(w, ","), n)
			case "boundary":
				in.Boundary = followOffsets(t, d.CmdArgs[0].Key)
			case "pin":
				name, _ := arg("name")
				o, _ := arg("offsets")
				p := projector.Pin{PinID: name, RecoveryPoint: name, Topic: in.Topic, TopicID: in.TopicID, Offsets: followOffsets(t, o)}
				if tp, ok := arg("topic"); ok {
					p.Topic = tp
				}
				if _, ok := arg("expired"); ok {
					p.Expires = in.Now.Add(-time.Minute)
				}
				in.Pins = append(in.Pins, p)
			case "location":
				l := WatchedLocation{Location: d.CmdArgs[0].Key}
				if _, ok := arg("outside"); ok {
					l.Outside = true
				}
				if e, ok := arg("err"); ok {
					l.Err = strings.ReplaceAll(e, "~", " ")
				}
				in.Locations = append(in.Locations, l)
			case "point":
				if len(in.Locations) == 0 {
					d.Fatalf(t, "point before location")
				}
				pt := RecoveryPointRead{Path: d.CmdArgs[0].Key}
				topic, tid := in.Topic, in.TopicID
				if s, ok := arg("topic"); ok {
					topic = s
				}
				if s, ok := arg("tid"); ok {
					tid = followTopicIDs[s]
				}
				if e, ok := arg("err"); ok {
					pt.Err = strings.ReplaceAll(e, "~", " ")
				}
				if o, ok := arg("offsets"); ok {
					for _, sub := range strings.Split(o, ";") {
						pt.Markers = append(pt.Markers, events.Marker{Topic: topic, TopicID: tid, Offsets: followOffsets(t, sub)})
					}
				}
				l := &in.Locations[len(in.Locations)-1]
				l.Points = append(l.Points, pt)
			case "follow":
				return describeFollow(Follow(in))
			default:
				d.Fatalf(t, "unknown command %s", d.Cmd)
			}
			return ""
		})
	})
}

// followTopicIDs are the topic IDs the transcripts name T1 (the policy's topic) and T2.
var followTopicIDs = map[string]string{"T1": "ILd4i_hxPbSXH3BWNLyYDw", "T2": "TRDHn_twNJeB8d-xyoAaow"}

func followOffsets(t *testing.T, s string) events.Offsets {
	o := events.Offsets{}
	for _, kv := range strings.Split(s, ",") {
		p, v, ok := strings.Cut(kv, ":")
		pi, err1 := strconv.Atoi(p)
		vi, err2 := strconv.ParseInt(v, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("bad offsets %q", s)
		}
		o[int32(pi)] = vi
	}
	return o
}

func describeFollow(d FollowDecision) string {
	var b strings.Builder
	for _, p := range d.Points {
		fmt.Fprintf(&b, "point %s:", p.Path)
		switch {
		case p.Err != "":
			fmt.Fprintf(&b, " UNREADABLE (%s)", p.Err)
		case p.Foreign:
			b.WriteString(" foreign")
		default:
			fmt.Fprintf(&b, " %s", p.Offsets)
		}
		if p.Bounding {
			b.WriteString(" bounding")
		}
		if len(p.Unrestorable) > 0 {
			fmt.Fprintf(&b, " unrestorable-on=%v", p.Unrestorable)
		}
		b.WriteString("\n")
	}
	if d.Target != nil {
		fmt.Fprintf(&b, "target %s\n", d.Target)
	}
	if d.Plan == nil {
		fmt.Fprintf(&b, "no plan (%s): %s\n", d.NoPlan, d.Why)
		return b.String()
	}
	fmt.Fprintf(&b, "plan %s… rp=%q offsets=%s\n", d.Plan.PlanID[:8], d.Plan.SourceRecoveryPoint, d.Plan.Offsets)
	if want := events.ComputePlanID(d.Plan.SourceRecoveryPoint, d.Plan.Topic, d.Plan.TopicID, d.Plan.Offsets); want != d.Plan.PlanID {
		fmt.Fprintf(&b, "PLAN ID MISMATCH: want %s\n", want)
	}
	return b.String()
}

// TestFollowNeverPastAPoint: over random listings, a plan is never above what
// any readable point of the topic or any active pin needs on a partition, and
// never below the committed boundary; and any unreadable point or failed
// listing means no plan.
func TestFollowNeverPastAPoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 32))
	for i := 0; i < 5000; i++ {
		in := FollowInput{Policy: projector.Policy{Retention: events.Retention{Watch: []string{"/c"}, MinAdvance: rng.Int64N(3) * 50}},
			Topic: "t", TopicID: followTopicIDs["T1"], Boundary: events.Offsets{}, Now: time.Unix(1000, 0)}
		parts := int32(1 + rng.IntN(3))
		for p := int32(0); p < parts; p++ {
			if rng.IntN(2) == 0 {
				in.Boundary[p] = rng.Int64N(500)
			}
		}
		blocked := false
		loc := WatchedLocation{Location: "/c"}
		if rng.IntN(20) == 0 {
			loc.Err, blocked = "down", true
		}
		for n := rng.IntN(4); n > 0; n-- {
			pt := RecoveryPointRead{Path: fmt.Sprintf("/c/j/chk-%d", n)}
			if rng.IntN(15) == 0 {
				pt.Err, blocked = "bad", true
			}
			o := events.Offsets{}
			for p := int32(0); p < parts; p++ {
				o[p] = rng.Int64N(1000)
			}
			pt.Markers = []events.Marker{{Topic: "t", TopicID: in.TopicID, Offsets: o}}
			loc.Points = append(loc.Points, pt)
		}
		in.Locations = []WatchedLocation{loc}
		if rng.IntN(3) == 0 {
			in.Pins = []projector.Pin{{PinID: "p", Topic: "t", TopicID: in.TopicID, Offsets: events.Offsets{0: rng.Int64N(1000)}}}
		}
		d := Follow(in)
		if d.Plan == nil {
			continue
		}
		if blocked {
			t.Fatalf("case %d: a plan from a listing with an unreadable point or failed location: %+v", i, in)
		}
		for p, off := range d.Plan.Offsets {
			if off < in.Boundary[p] {
				t.Fatalf("case %d: plan %v below the boundary %v", i, d.Plan.Offsets, in.Boundary)
			}
			for _, pt := range loc.Points {
				if need := pt.Markers[0].Offsets[p]; off > need && off > in.Boundary[p] {
					t.Fatalf("case %d: plan %v above point %s %v (boundary %v)", i, d.Plan.Offsets, pt.Path, pt.Markers[0].Offsets, in.Boundary)
				}
			}
			for _, pin := range in.Pins {
				if need, ok := pin.Offsets[p]; ok && off > need && off > in.Boundary[p] {
					t.Fatalf("case %d: plan %v above pin %v", i, d.Plan.Offsets, pin.Offsets)
				}
			}
		}
	}
}
