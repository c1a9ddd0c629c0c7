package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/kcleanup/kcleanup/projector"
)

// TestDocsNameRejectionReasonsAsTheCodeDoes: wherever the docs name a rejection reason
// ("reason `x`", "rejected as `x`"), it is one the projector writes (projector.Reasons), so an
// operator who reads `pinned` in status finds the same word in the guide (issue 35 item 5: the
// guide and design §12 called the pin refusal `held`).
func TestDocsNameRejectionReasonsAsTheCodeDoes(t *testing.T) {
	named := regexp.MustCompile("(?:reason|rejected as) `([a-z-]+)`")
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../README.md")
	var known []string
	for _, r := range projector.Reasons() {
		known = append(known, string(r))
	}
	seen := 0
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range named.FindAllStringSubmatch(string(text), -1) {
			seen++
			if !slices.Contains(known, m[1]) {
				t.Errorf("%s: %q names a rejection reason the projector never writes (it writes %v)", filepath.Base(f), m[0], known)
			}
		}
	}
	if seen == 0 {
		t.Fatal("the docs name no rejection reason: the pattern is out of date")
	}
}
