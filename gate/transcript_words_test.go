package gate

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// TestTranscriptReasonsAreTheGates: the projector's transcripts show the
// logical half of the gate on the fold; every reason they print must be one
// of this package's, the only vocabulary.
func TestTranscriptReasonsAreTheGates(t *testing.T) {
	files, err := filepath.Glob("../projector/testdata/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	refused := regexp.MustCompile(`(?m)^refused ([a-z-]+):`)
	seen := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			if fi, serr := os.Stat(f); serr == nil && fi.IsDir() {
				continue
			}
			t.Fatal(err)
		}
		for _, m := range refused.FindAllStringSubmatch(string(data), -1) {
			seen++
			if !slices.Contains(Reasons(), Reason(m[1])) {
				t.Errorf("%s: reason %q is not a gate.Reason", filepath.Base(f), m[1])
			}
		}
	}
	if seen == 0 {
		t.Fatal("the transcripts show no refusal")
	}
}
