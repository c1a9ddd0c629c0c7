package main

import (
	"strings"
	"testing"
	"time"
)

// TestTimeoutWordsSayWhatHappened: the words of a deadline, from the trace's facts alone (the
// pure half of unreachable): never reached is "no answer from"; answered throughout, or with a
// request unanswered for less than half of --timeout, is "raise --timeout"; answered and then a
// request unanswered for half of it or more (at least 1 s) is "stopped answering", naming each
// such broker longest first, and never "raise --timeout" nor "the cluster answered, but".
func TestTimeoutWordsSayWhatHappened(t *testing.T) {
	const wrote = "appended COMMITTED of plan 0123456789ab at offset 1 of t.kcleanup; sent no DeleteRecords (this run deleted nothing)"
	b1, b2 := brokerWait{Addr: "10.0.0.1:9092"}, brokerWait{Addr: "10.0.0.2:9092"}
	wait := func(b brokerWait, d time.Duration) brokerWait { b.For = d; return b }
	for _, tc := range []struct {
		name        string
		f           timeoutFacts
		stopped     bool
		message     string
		hint, never []string
	}{
		{"never answered", timeoutFacts{Timeout: 2 * time.Second, Unanswered: []brokerWait{wait(b1, 2*time.Second)}},
			false, "", []string{"no answer from B within --timeout 2s", "check the address (-b)"}, []string{"raise --timeout", "stopped"}},
		{"answered throughout", timeoutFacts{Answered: true, Timeout: 3 * time.Second},
			false, "did not finish within --timeout 3s", []string{"raise --timeout (or KCLEANUP_TIMEOUT): the cluster answered, but the command needed longer", wrote}, []string{"no answer from", "stopped"}},
		{"a request in flight, answered recently", timeoutFacts{Answered: true, Timeout: 3 * time.Second, Unanswered: []brokerWait{wait(b1, 1400*time.Millisecond)}},
			false, "did not finish within --timeout 3s", []string{"raise --timeout"}, []string{"stopped"}},
		{"stopped for half of --timeout", timeoutFacts{Answered: true, Timeout: 3 * time.Second, Unanswered: []brokerWait{wait(b1, 1500*time.Millisecond)}},
			true, "did not finish within --timeout 3s: the cluster stopped answering",
			[]string{"the cluster answered at first, then a request got no answer from 10.0.0.1:9092 for the last 1.5s", "a network partition or a broker that hangs", "a longer --timeout does not help", wrote},
			[]string{"raise --timeout", "the cluster answered, but", "no answer from B"}},
		{"a short --timeout: at least a second of silence", timeoutFacts{Answered: true, Timeout: time.Second, Unanswered: []brokerWait{wait(b1, 900*time.Millisecond)}},
			false, "did not finish within --timeout 1s", []string{"raise --timeout"}, []string{"stopped"}},
		{"a short --timeout, a second of silence", timeoutFacts{Answered: true, Timeout: time.Second, Unanswered: []brokerWait{wait(b1, time.Second)}},
			true, "did not finish within --timeout 1s: the cluster stopped answering", []string{"10.0.0.1:9092 for the last 1s"}, []string{"raise --timeout"}},
		{"two brokers silent, one answering", timeoutFacts{Answered: true, Timeout: 4 * time.Second,
			Unanswered: []brokerWait{wait(b1, 2100*time.Millisecond), wait(b2, 3900*time.Millisecond), wait(brokerWait{Addr: "10.0.0.3:9092"}, 10*time.Millisecond)}},
			true, "did not finish within --timeout 4s: the cluster stopped answering",
			[]string{"no answer from 10.0.0.2:9092 for the last 3.9s, 10.0.0.1:9092 for the last 2.1s:"}, []string{"10.0.0.3", "raise --timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.Bootstrap = "B"
			if tc.f.Answered {
				tc.f.Written = wrote
			}
			w := timeoutWords(tc.f)
			if w.Stopped != tc.stopped || w.Message != tc.message {
				t.Errorf("stopped %v, message %q; want %v, %q", w.Stopped, w.Message, tc.stopped, tc.message)
			}
			for _, s := range tc.hint {
				if !strings.Contains(w.Hint, s) {
					t.Errorf("the hint lacks %q:\n%s", s, w.Hint)
				}
			}
			for _, s := range tc.never {
				if strings.Contains(w.Message+" "+w.Hint, s) {
					t.Errorf("the words say %q:\n%s\n%s", s, w.Message, w.Hint)
				}
			}
		})
	}
}
